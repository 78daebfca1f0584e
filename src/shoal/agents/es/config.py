"""Evolution strategies hyperparameters (Salimans et al. 2017, arXiv:1703.03864; OpenAI's
implementation's defaults where the paper gives none)."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.checks import require_finite_nonnegative, require_positive
from shoal.config import param
from shoal.nets.mlp import Activation


@dataclass(frozen=True, kw_only=True)
class ESConfig:
    learning_rate: float = param(0.01, "Adam step size on the ES gradient.")
    anneal_lr: bool = param(False, "Decay the learning rate linearly to 0 over the budget.")
    noise_std: float = param(0.02, "sigma: standard deviation of the parameter perturbations.")
    l2_coef: float = param(0.005, "L2 decay: l2_coef x theta is added to what Adam descends.")
    pairs_per_iteration: int = param(
        32, "Mirrored pairs (two episodes each) evaluated per update: half the population."
    )
    steps_per_iteration: int = param(
        0, "At least this many env steps in an update's episodes (more pairs if needed)."
    )
    unroll_length: int = param(32, "Steps per env an actor runs before handing on episodes.")
    hidden_sizes: tuple[int, ...] = param((64, 64), "Hidden layer widths of the policy MLP.")
    activation: Activation = param("tanh", "Hidden activation.")
    normalize_obs: bool = param(True, "Normalise observations by the actors' running moments.")
    obs_clip: float = param(5.0, "Clip normalised observations to +- this.", allow_inf=True)
    noise_table_size: int = param(
        1 << 22, "Normal values in the shared noise table each process builds (OpenAI: 250M)."
    )
    noise_seed: int = param(123, "Seed of the noise table; every process must use the same.")

    def __post_init__(self) -> None:
        require_positive(
            self,
            (
                "learning_rate",
                "noise_std",
                "pairs_per_iteration",
                "unroll_length",
                "noise_table_size",
                "obs_clip",
            ),
        )
        require_finite_nonnegative(self, ("l2_coef", "steps_per_iteration"))
        if any(size <= 0 for size in self.hidden_sizes):
            raise ValueError(
                f"hidden_sizes must be positive widths, got {self.hidden_sizes}; "
                "set e.g. --agent.hidden-sizes 64,64."
            )
