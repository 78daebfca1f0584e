"""`python -m shoal ...` is the same as `shoal ...`."""

from shoal.cli import _entry

_entry()
