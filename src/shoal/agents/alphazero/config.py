"""AlphaZero's settings: Silver et al. 2018, "A general reinforcement learning algorithm that
masters chess, shogi, and Go through self-play" (Science 362). The search constants (c_init
1.25, c_base 19652, root noise fraction 0.25) are the paper's; the sizes (simulations, network,
batch, replay) are scaled down to tic-tac-toe, where the paper's 800 simulations and 20-block
network would be far more than the game needs."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.checks import require_finite_nonnegative, require_positive, require_unit_interval
from shoal.config import param


@dataclass(frozen=True, kw_only=True)
class AlphaZeroConfig:
    """Search, self-play, network and learning settings. Positions are the states a player
    moved from; a game of tic-tac-toe gives 5 to 9 of them."""

    num_simulations: int = param(48, "PUCT simulations per move in self-play (the paper: 800).")
    eval_simulations: int = param(
        0, "Simulations per move when evaluating or predicting (0: num_simulations)."
    )
    c_init: float = param(1.25, "PUCT exploration constant c_init of C(s).")
    c_base: float = param(19652.0, "PUCT constant c_base: C(s) grows as log((1+N+c_base)/c_base).")
    dirichlet_alpha: float = param(
        1.0,
        "Dirichlet concentration of the root noise in self-play (the paper: 0.3 for chess's ~35 "
        "moves; about 10 / typical legal moves).",
    )
    noise_fraction: float = param(0.25, "Weight of the Dirichlet noise in the root's priors.")
    temperature_moves: int = param(
        4,
        "Self-play samples moves in proportion to visit counts for this many moves of a game "
        "(counted on the board), then plays the most visited move.",
    )
    channels: int = param(32, "Channels of the residual tower's convolutions.")
    blocks: int = param(2, "Residual blocks (the paper: 20 for chess).")
    learning_rate: float = param(1e-3, "Adam step size.")
    anneal_lr: bool = param(False, "Decay the learning rate linearly to 0 over the budget.")
    weight_decay: float = param(1e-4, "L2 weight regularisation c of the loss (the paper: 1e-4).")
    batch_size: int = param(128, "Positions per gradient step.")
    replay_capacity: int = param(20_000, "Positions kept in replay (the newest; FIFO).")
    learning_starts: int = param(256, "Positions in replay before the first gradient step.")
    samples_per_insert: float = param(
        4.0,
        "Positions sampled for learning per position played (the replay's rate limiter keeps "
        "self-play and learning at this ratio).",
    )
    unroll_length: int = param(
        8, "Steps per env (half of them each player's) an actor plays before handing them on."
    )

    def __post_init__(self) -> None:
        require_positive(
            self,
            (
                "num_simulations",
                "c_init",
                "c_base",
                "dirichlet_alpha",
                "channels",
                "blocks",
                "learning_rate",
                "batch_size",
                "replay_capacity",
                "samples_per_insert",
                "unroll_length",
            ),
        )
        require_finite_nonnegative(
            self, ("eval_simulations", "temperature_moves", "weight_decay", "learning_starts")
        )
        require_unit_interval(self, ("noise_fraction",))
        if self.batch_size > self.replay_capacity:
            raise ValueError(
                f"batch_size {self.batch_size} is larger than replay_capacity "
                f"{self.replay_capacity}; set --agent.replay-capacity larger or "
                "--agent.batch-size smaller."
            )

    @property
    def simulations_when_evaluating(self) -> int:
        return self.eval_simulations or self.num_simulations
