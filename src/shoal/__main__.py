"""`python -m shoal ...` is the same as `shoal ...`."""

import sys

from shoal.cli import main, process_started

sys.exit(main(started=process_started()))
