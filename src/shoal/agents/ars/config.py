"""ARS hyperparameters (Mania et al. 2018, arXiv:1803.07055, V2-t)."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.checks import require_finite_nonnegative, require_positive
from shoal.config import param


@dataclass(frozen=True, kw_only=True)
class ARSConfig:
    step_size: float = param(0.02, "alpha: step size of the update.")
    noise_std: float = param(0.03, "nu: standard deviation of the exploration noise.")
    pairs_per_iteration: int = param(8, "N: directions per update, each evaluated at + and -.")
    top_directions: int = param(4, "b: the best directions (by max of their returns) used.")
    steps_per_iteration: int = param(
        0, "At least this many env steps in an update's episodes (more directions if needed)."
    )
    unroll_length: int = param(32, "Steps per env an actor runs before handing on episodes.")
    normalize_obs: bool = param(True, "V2: normalise states by their running mean and std.")
    obs_clip: float = param(
        float("inf"), "Clip normalised states to +- this (inf: none).", allow_inf=True
    )
    noise_table_size: int = param(
        1 << 22, "Normal values in the shared noise table each process builds."
    )
    noise_seed: int = param(123, "Seed of the noise table; every process must use the same.")

    def __post_init__(self) -> None:
        require_positive(
            self,
            (
                "step_size",
                "noise_std",
                "pairs_per_iteration",
                "top_directions",
                "unroll_length",
                "noise_table_size",
                "obs_clip",
            ),
        )
        require_finite_nonnegative(self, ("steps_per_iteration",))
        if self.top_directions > self.pairs_per_iteration:
            raise ValueError(
                f"top_directions={self.top_directions} exceeds pairs_per_iteration="
                f"{self.pairs_per_iteration}; set --agent.top-directions to at most "
                f"{self.pairs_per_iteration}."
            )
