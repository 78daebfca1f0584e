"""`python -m shoal ...` is the same as `shoal ...`."""

import sys

from shoal.cli import main

sys.exit(main())
