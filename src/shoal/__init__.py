"""shoal: distributed deep reinforcement learning in PyTorch.

`shoal.train("ppo", "CartPole-v1")` trains in this process; `shoal.load(run_dir).act(obs)` acts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Callback", "EarlyStopping", "Evaluation", "KeepBest", "evaluate", "load", "train"]
_CALLBACKS = ("Callback", "EarlyStopping", "Evaluation", "KeepBest")

if TYPE_CHECKING:
    from shoal.api import evaluate, load, train
    from shoal.runtime.callbacks import Callback, EarlyStopping, Evaluation, KeepBest


def __getattr__(name: str) -> Any:
    # Importing shoal stays cheap (no torch) until an entry point is used.
    if name in _CALLBACKS:
        from shoal.runtime import callbacks

        return getattr(callbacks, name)
    if name in __all__:
        from shoal import api

        return getattr(api, name)
    raise AttributeError(name)
