"""Turn-based PettingZoo games (the AEC API: one agent moves at a time) as rows of a batch.

A game of N players is N rows, as a parallel game is (`shoal.envs.agent_rows`), and the same
vector env steps them (`shoal.envs.pettingzoo_vector`). Only the player to move
(`agent_selection`) is *active*: its row holds its observation as PettingZoo gives it (for the
classic board games the dict of `observation` and `action_mask`) and its action is played; the
other rows hold zeros (an all-zero action mask: there is nothing they may do) and their actions
are not sent. Rewards reach every player's row on the step they are given, so a game's result
reaches the loser too, on the winner's move; all rows end together when the game ends.

Observations are kept as PettingZoo gives them (no image conversion: tic-tac-toe's `3 x 3 x 2`
board is not an image), so `shoal.load(run).predict(obs)` takes `env.observe(agent)` as it is.

Ids: `tictactoe` and `connect_four` (PettingZoo's `classic/tictactoe-v3` and
`classic/connect_four-v3`, made by `pettingzoo.make("aec", ...)`), and any
`pettingzoo:<module>` whose module has an AEC `env()` and no `parallel_env()`.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import gymnasium as gym
import numpy as np

from shoal.envs.agent_rows import RowsStep
from shoal.errors import EnvError

__all__ = ["CLASSIC_GAMES", "TurnRows", "classic_factory", "turn_based_factory"]

# shoal's ids of the turn-based games it knows -> PettingZoo's module.
CLASSIC_GAMES = {"tictactoe": "classic/tictactoe-v3", "connect_four": "classic/connect_four-v3"}


class TurnRows:
    """A PettingZoo AEC env whose players share one observation and action space, as rows."""

    def __init__(self, env: Any, env_id: str) -> None:
        self.env, self.env_id = env, env_id
        self.agents: list[str] = list(env.possible_agents)
        if not self.agents:
            raise EnvError(f"{env_id} names no possible agents (possible_agents is empty).")
        self.num_rows = len(self.agents)
        self.rows = {agent: i for i, agent in enumerate(self.agents)}
        obs_spaces = [env.observation_space(a) for a in self.agents]
        action_spaces = [env.action_space(a) for a in self.agents]
        for kind, spaces in (("observation", obs_spaces), ("action", action_spaces)):
            if any(space != spaces[0] for space in spaces[1:]):
                raise EnvError(
                    f"{env_id}: its players have different {kind} spaces, and shoal's one "
                    "shared network needs one."
                )
        self.observation_space = obs_spaces[0]
        self.action_space = action_spaces[0]
        self.raw_observation_space = None  # kept as PettingZoo gives them
        if not isinstance(self.action_space, gym.spaces.Discrete):
            raise EnvError(f"{env_id}: turn-based games need Discrete actions.")
        self._zero_obs = _zeros(self.observation_space)
        self.active = np.zeros(self.num_rows, bool)
        self._over = True

    def reset(self, seed: int | None = None) -> tuple[list[Any], np.ndarray]:
        """A new game: the first mover's observation, zeros for the others, and `active`."""
        self.env.reset(seed=seed)
        self._over = False
        return self._rows_obs(), self.active.copy()

    def step(self, actions: np.ndarray) -> RowsStep:
        """Play the mover's action (`actions[row of agent_selection]`); others are not sent."""
        mover = self.env.agent_selection
        self.env.step(int(actions[self.rows[mover]]))
        n = self.num_rows
        reward = np.zeros(n, np.float32)
        terminated = np.zeros(n, bool)
        truncated = np.zeros(n, bool)
        for agent, i in self.rows.items():
            reward[i] = float(self.env.rewards.get(agent, 0.0))
            terminated[i] = bool(self.env.terminations.get(agent, False))
            truncated[i] = bool(self.env.truncations.get(agent, False)) and not terminated[i]
        final_obs: dict[int, Any] = {}
        for i in np.flatnonzero(truncated).tolist():
            final_obs[i] = self.env.observe(self.agents[i])
        self._over = bool((terminated | truncated).any()) or not self.env.agents
        if self._over:  # every player's episode ends with the game
            ended = terminated | truncated
            terminated |= ~ended
            self.active = np.zeros(n, bool)
            return RowsStep(
                [self._zero_obs] * n, reward, terminated, truncated, final_obs, self.active.copy()
            )
        return RowsStep(self._rows_obs(), reward, terminated, truncated, final_obs, self.active)

    @property
    def game_over(self) -> bool:
        return self._over

    def close(self) -> None:
        self.env.close()

    def _rows_obs(self) -> list[Any]:
        mover = self.env.agent_selection
        self.active = np.zeros(self.num_rows, bool)
        self.active[self.rows[mover]] = True
        rows = [self._zero_obs] * self.num_rows
        rows[self.rows[mover]] = self.env.observe(mover)
        return rows


def _zeros(space: gym.spaces.Space[Any]) -> Any:
    if isinstance(space, gym.spaces.Dict):
        return {k: np.zeros(s.shape, s.dtype) for k, s in space.spaces.items()}
    return np.zeros(space.shape, space.dtype)


def make_turn_game(module_name: str, env_id: str) -> TurnRows:
    """One game of `module_name`'s AEC `env()` as rows."""
    return TurnRows(importlib.import_module(module_name).env(), env_id)


def turn_based_factory(module_name: str, env_id: str) -> functools.partial[TurnRows]:
    """A picklable factory of the AEC env module `module_name`'s games."""
    return functools.partial(make_turn_game, module_name, env_id)


def make_registered_turn_game(registry_id: str, env_id: str) -> TurnRows:
    """One game of PettingZoo's registered AEC env `registry_id` as rows."""
    import pettingzoo

    return TurnRows(pettingzoo.make("aec", registry_id), env_id)


def classic_factory(env_id: str) -> functools.partial[TurnRows]:
    """A picklable factory of a game of `CLASSIC_GAMES`, or a clear EnvError now."""
    registry_id = CLASSIC_GAMES[env_id]
    try:
        import pettingzoo

        pettingzoo.make("aec", registry_id).close()
    except ImportError as err:
        raise EnvError(
            f"{env_id} is PettingZoo's {registry_id}, and it cannot be made ({err}). Install "
            "the extra: pip install 'pettingzoo[classic]' (PettingZoo 1.27 or later)."
        ) from None
    return functools.partial(make_registered_turn_game, registry_id, env_id)
