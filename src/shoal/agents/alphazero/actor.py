"""AlphaZero's acting: a PUCT search from the observed position before every move.

The observation is PettingZoo's, as the env gives it (the dict of `observation` planes and
`action_mask`), and for the board games shoal knows it holds the whole position, so the search
rebuilds the game state from it (`shoal.envs.board_games`) and plays ahead on that copy. Rows
whose action mask is all zeros are not to move (the other player's row of a turn-based game):
they are not searched.

Modes: `train` (self-play) adds Dirichlet noise at the root and samples the move in proportion
to the visit counts for the first `temperature_moves` moves of a game, then plays the most
visited; `sample` samples from the visit counts without noise; `greedy` (evaluation,
`shoal.load(...).predict`) plays the most visited move. Each step returns the visit distribution
(`search_policy`, the learner's policy target) and the search's root value as extras.

Leaf evaluations of all rows' searches go to the network together, one batch per simulation
(`evaluate`, which only calls `self.net`). Under `--inference central` that network is the
runtime's stand-in for the server's (the agent declares `central_inference = "network"`), so
each such batch is one request to the central inference server, batched there with the other
actors' leaves; this module does not know which network it holds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from shoal import ops
from shoal.agents.alphazero.config import AlphaZeroConfig
from shoal.agents.alphazero.networks import PolicyValueNet, board_shape
from shoal.agents.base import ActMode, Layout, Policy, PolicyStep, State, StepInputs
from shoal.envs.board_games import BoardGame, ConnectFour, TicTacToe
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.nets import module_device

SEARCH_POLICY = "search_policy"
ROOT_VALUE = "root_value"


def game_for(spec: EnvSpec) -> type[BoardGame]:
    """The game state class whose observations `spec` describes."""
    rows, cols, planes, actions = board_shape(spec)
    for cls in (TicTacToe, ConnectFour):
        if (cls.rows, cls.cols, 2, cls.num_actions) == (rows, cols, planes, actions):
            return cls
    raise ConfigError(
        f"alphazero searches with a game state of the env's rules, and shoal has those of "
        f"tictactoe and connect_four only; {spec.env_id} has {rows}x{cols}x{planes} boards and "
        f"{actions} moves. Use --env tictactoe or --env connect_four."
    )


class AlphaZeroPolicy(Policy):
    """Search, then move (see the module docstring); no recurrent state."""

    def __init__(
        self,
        spec: EnvSpec,
        config: AlphaZeroConfig,
        net: PolicyValueNet,
        seed: int,
        layout: Layout | None = None,
    ) -> None:
        self.spec, self.config, self.net = spec, config, net
        self.game = game_for(spec)
        self.rng = np.random.default_rng(seed)

    def evaluate(self, observations: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Priors `[n, A]` and values `[n]` of the positions' observations (`ops.search`)."""
        planes = np.stack([obs["observation"] for obs in observations])
        self.net.eval()
        with torch.inference_mode():
            x = torch.from_numpy(planes).to(module_device(self.net))
            logits, value = self.net(x)
            priors = torch.softmax(logits.float(), dim=-1)
        return priors.cpu().numpy(), value.float().cpu().numpy()

    def step(self, obs: Any, state: State, inputs: StepInputs, mode: ActMode) -> PolicyStep:
        masks = np.asarray(obs["action_mask"])
        n, actions = masks.shape
        to_move = np.flatnonzero(masks.any(axis=1))
        action = np.zeros(n, np.int64)
        search_policy = np.zeros((n, actions), np.float32)
        root_value = np.zeros(n, np.float32)
        if len(to_move):
            planes = np.asarray(obs["observation"])
            games = [self.game.from_observation({"observation": planes[i]}) for i in to_move]
            config = self.config
            result = ops.run_searches(
                games,
                self.evaluate,
                config.num_simulations if mode == "train" else config.simulations_when_evaluating,
                c_init=config.c_init,
                c_base=config.c_base,
                noise_alpha=config.dirichlet_alpha,
                noise_fraction=config.noise_fraction if mode == "train" else 0.0,
                rng=self.rng,
            )
            visits = ops.visit_policy(result.visit_counts, 1.0)
            for j, i in enumerate(to_move):
                explore = mode == "sample" or (
                    mode == "train" and games[j].moves < config.temperature_moves
                )
                if explore:
                    action[i] = self.rng.choice(actions, p=visits[j])
                else:
                    counts = result.visit_counts[j]
                    best = np.flatnonzero(counts == counts.max())
                    action[i] = best[0] if mode == "greedy" else self.rng.choice(best)
            search_policy[to_move] = visits
            root_value[to_move] = result.root_values
        extras = {SEARCH_POLICY: search_policy, ROOT_VALUE: root_value}
        return PolicyStep(action, extras)
