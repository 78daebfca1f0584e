"""Rainbow's settings: the value family's transition config with all six of Rainbow's parts on
(Hessel et al. 2018, "Rainbow: Combining Improvements in Deep Reinforcement Learning", table 1).
"""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.value import DQNConfig
from shoal.config import param


@dataclass(frozen=True, kw_only=True)
class RainbowConfig(DQNConfig):
    """DQN's settings (see DQNConfig for every field) with Rainbow's defaults: a categorical
    return distribution on 51 atoms in [-10, 10], noisy layers exploring alone (epsilon 0),
    dueling streams, double Q, 3-step returns and replay prioritised by the KL loss with
    alpha 0.5, and Adam with a step of 6.25e-5 and epsilon 1.5e-4."""

    learning_rate: float = param(6.25e-5, "Adam step size (Rainbow's 6.25e-5).")
    distributional: bool = param(
        True,
        "C51 return distribution on num_atoms atoms in [v_min, v_max]; its KL is the priority.",
    )
    noisy: bool = param(True, "Noisy linear layers in the Q head (Fortunato et al. 2018).")
    priority_alpha: float = param(0.5, "Priority exponent alpha (Rainbow's 0.5; 0: uniform).")
    epsilon_start: float = param(0.0, "Exploration rate at the start (0: the noise explores).")
    epsilon_end: float = param(0.0, "Exploration rate after the decay (0: the noise explores).")

    def __post_init__(self) -> None:
        super().__post_init__()
        unexplored = self.exploration == "linear" and self.epsilon_start == self.epsilon_end == 0
        if not self.noisy and unexplored:
            raise ValueError(
                "rainbow without noisy layers would never explore: its epsilons are 0 because "
                "the noise explores. Set --agent.noisy true, or explore epsilon-greedily with "
                "--agent.epsilon-start 1.0 --agent.epsilon-end 0.01."
            )
