"""Behavioural cloning's settings (Pomerleau 1991; Bain & Sammut 1995)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shoal.agents.checks import require_positive
from shoal.config import param
from shoal.nets.mlp import Activation
from shoal.nets.torso import check_torso_setting


@dataclass(frozen=True, kw_only=True)
class BCConfig:
    dataset: str | None = param(
        None,
        "Minari dataset to clone: its id (e.g. cartpole/ppo-v0, in $MINARI_DATASETS_PATH or "
        "~/.minari/datasets) or its folder; `shoal train bc --dataset ...` sets it.",
    )
    loss: Literal["nll", "mse"] = param(
        "nll",
        "Continuous actions: nll fits a Gaussian (mean and a learned log-std) by likelihood; "
        "mse regresses the mean only. Discrete actions: cross-entropy either way.",
    )
    learning_rate: float = param(1e-3, "Adam step size.")
    batch_size: int = param(256, "Dataset steps in each minibatch.")
    updates_per_step: float = param(
        0.5,
        "Minibatch updates per env step the policy plays while it learns (its play is only "
        "watched: the learner learns from the dataset alone).",
    )
    unroll_length: int = param(64, "Steps each env plays between rounds of updates.")
    max_grad_norm: float = param(0.0, "Clip the gradient norm to this (0: no clipping).")
    hidden_sizes: tuple[int, ...] = param((256, 256), "Hidden layer widths of the policy MLP.")
    activation: Activation = param("relu", "Hidden activation.")
    torso: str = param(
        "auto", "auto, mlp, nature_cnn, impala_resnet, minatar_cnn, or package.module:function."
    )
    init_log_std: float = param(0.0, "Initial log standard deviation of Gaussian actions.")

    def __post_init__(self) -> None:
        require_positive(self, ("learning_rate", "batch_size", "updates_per_step", "unroll_length"))
        if not self.max_grad_norm >= 0:
            raise ValueError(
                f"max_grad_norm must be >= 0 (0: no clipping), got {self.max_grad_norm}; set "
                "--agent.max-grad-norm."
            )
        if self.loss not in ("nll", "mse"):
            raise ValueError(f"loss must be nll or mse, got {self.loss!r}; set --agent.loss.")
        if not self.hidden_sizes or min(self.hidden_sizes) <= 0:
            raise ValueError(
                f"hidden_sizes must be positive widths, got {self.hidden_sizes}; set e.g. "
                "--agent.hidden-sizes 256,256."
            )
        if self.dataset is not None and not str(self.dataset).strip():
            raise ValueError(
                "dataset is empty; pass --dataset with a Minari dataset's id or folder."
            )
        check_torso_setting(self.torso)
