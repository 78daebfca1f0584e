"""QT-Opt's hyperparameters (Kalashnikov et al. 2018, "QT-Opt: Scalable Deep Reinforcement
Learning for Vision-Based Robotic Manipulation", arXiv:1806.10293): the continuous family's
replay and MLP section, the paper's CEM (64 samples, 2 iterations, 6 elites), its two lagged
target networks, exploration, and a dataset to seed the replay with (or to learn from alone)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shoal.agents.checks import require_finite_nonnegative, require_positive, require_unit_interval
from shoal.agents.continuous.config import OffPolicyContinuousConfig
from shoal.config import param

Exploration = Literal["epsilon", "gaussian"]


@dataclass(frozen=True, kw_only=True)
class QTOptConfig(OffPolicyContinuousConfig):
    """QT-Opt's settings. Actions are rescaled to [-1, 1]; CEM searches that box."""

    hidden_sizes: tuple[int, ...] = param(
        (256, 256), "Hidden layer widths of the Q-function's MLP on [features, action]."
    )
    cem_samples: int = param(64, "CEM: actions valued per iteration (the paper's N = 64).")
    cem_iterations: int = param(2, "CEM: iterations (the paper's 2).")
    cem_elites: int = param(6, "CEM: best samples each Gaussian is fitted to (the paper's M = 6).")
    target_tau: float = param(
        0.005,
        "Polyak rate of the first target network Q'_1 (the paper's 0.9999 averaging is "
        "tau 1e-4, sized for millions of steps).",
        was=("tau",),
    )
    target_lag: int = param(
        1000,
        "Gradient steps between copies of Q'_1 into the second, lagged target Q'_2 (the "
        "paper lags it about 6000 steps behind, at its scale).",
    )
    bellman_updaters: int = param(
        0,
        "ray: Bellman-updater processes that compute the targets of replay samples with the "
        "learner's target networks and hand them to the learner (the paper's); 0: the learner "
        "computes them. Inline the learner always computes them, in turn.",
    )
    exploration: Exploration = param(
        "epsilon",
        "epsilon: a uniform random action with probability epsilon, else CEM's argmax (the "
        "paper's); gaussian: CEM's argmax plus N(0, exploration_noise^2), clipped.",
    )
    epsilon: float = param(0.2, "Probability of a uniform random action (exploration epsilon).")
    exploration_noise: float = param(
        0.1, "Std of the Gaussian added to CEM's argmax (exploration gaussian)."
    )
    dataset: str | None = param(
        None,
        "Minari dataset whose transitions seed the replay before training (its id or folder; "
        "`shoal train qtopt --dataset ...` sets it).",
    )
    offline: bool = param(
        False,
        "Learn from the dataset alone: nothing the actors play enters the replay (their play "
        "is the run's clock and learning curve). Needs --dataset.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, ("cem_samples", "cem_iterations", "cem_elites", "target_lag"))
        require_finite_nonnegative(self, ("exploration_noise",))
        if self.bellman_updaters < 0:
            raise ValueError(
                f"bellman_updaters must be 0 or more, got {self.bellman_updaters}; set "
                "--agent.bellman-updaters (0: the learner computes the targets)."
            )
        require_unit_interval(self, ("epsilon",))
        if self.cem_elites > self.cem_samples:
            raise ValueError(
                f"cem_elites ({self.cem_elites}) must be at most cem_samples "
                f"({self.cem_samples}): CEM keeps the best of the samples it values. Set "
                "--agent.cem-elites lower or --agent.cem-samples higher."
            )
        if self.exploration not in ("epsilon", "gaussian"):
            raise ValueError(
                f"exploration must be epsilon or gaussian, got {self.exploration!r}; set "
                "--agent.exploration."
            )
        if self.dataset is not None and not str(self.dataset).strip():
            raise ValueError(
                "dataset is empty; pass --dataset with a Minari dataset's id or folder."
            )
        if self.offline and self.dataset is None:
            raise ValueError(
                "offline learns from a dataset alone, and no dataset is set: pass --dataset "
                "with a Minari dataset's id or folder (e.g. one written by `shoal record`), or "
                "drop --agent.offline."
            )
        if self.offline and self.bellman_updaters:
            raise ValueError(
                "offline learns from the dataset in the learner's process, and Bellman updaters "
                "sample the replay shards, which an offline run has none of: set "
                "--agent.bellman-updaters 0 (the learner computes the targets) or drop "
                "--agent.offline."
            )
