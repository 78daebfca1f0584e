"""Hyperparameter search and population based training of shoal runs on Ray Tune.

`shoal.tune.tune(...)` (the command line's `shoal tune`) checks the space and the settings,
then runs Tune with `ShoalTrainable` (`trainable.py`): one inline shoal run per trial, whose
PBT exploits happen in place (`Learner.apply_settings`). Ray is imported only when a search
runs, so a mistake in the space is reported in milliseconds.
"""

from shoal.tune.results import TuneResult
from shoal.tune.search import tune
from shoal.tune.space import Dimension, Space, load_space, parse_space

__all__ = ["Dimension", "Space", "TuneResult", "load_space", "parse_space", "tune"]
