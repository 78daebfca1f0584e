"""G PettingZoo games side by side, each of N agent rows: a `VectorEnv` of G x N rows.

Game g's agents are rows `[g N, (g + 1) N)` (`shoal.envs.agent_rows`), so the actor loop, the
learners and the evaluator step and learn from them as from any vector env's rows. Two things
a single-agent vector env does not have, both said through the `VectorEnv` protocol:

- `active` `[G N]` bool: rows whose agent is in its game now (their observation is real). The
  actor loop records it with each step, and learners that honour it (PPO, IMPALA) do not learn
  from inactive rows.
- `VectorStep.episode_metrics`: per finished game, `team_return` (the summed return of all its
  agents) and `return_<agent>` for each agent that took part; `episode_returns` holds one
  return per agent episode, so shoal's `return_mean` is the mean return of an agent.

A game is reset in the same step its last agent leaves (same-step autoreset, as
`shoal.envs.vector`); game g is seeded `seed + g` on the first `reset`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from shoal.envs.agent_rows import AgentRows
from shoal.envs.spec import EnvSpec
from shoal.envs.vector import VectorStep, check_finite, checked_obs, env_failure, make_each
from shoal.errors import EnvError
from shoal.tree import assign, map_tree

__all__ = ["PettingZooVectorEnv"]


class PettingZooVectorEnv:
    """`len(factories)` games stepped one after another in this process, as rows."""

    def __init__(
        self, factories: Sequence[Callable[[], AgentRows]], spec: EnvSpec, seed: int
    ) -> None:
        self.games = make_each(factories, spec)
        self.spec, self.seed = spec, seed
        self.agents_per_game = self.games[0].num_rows
        self.num_envs = len(self.games) * self.agents_per_game
        self.active = np.zeros(self.num_envs, bool)
        self._obs = spec.allocate_obs(self.num_envs)
        self._returns = np.zeros(self.num_envs, np.float64)  # each row's agent's episode so far
        self._lengths = np.zeros(self.num_envs, np.int64)
        self._game_returns = [dict[str, float]() for _ in self.games]
        self._steps = 0

    def reset(self) -> np.ndarray:
        for g in range(len(self.games)):
            self._reset_game(g, self.seed + g)
        check_finite(self.spec, self._obs, None, self._steps)
        return map_tree(np.copy, self._obs)

    def step(self, actions: np.ndarray) -> VectorStep:
        self._steps += 1
        n = self.agents_per_game
        rewards = np.zeros(self.num_envs, np.float32)
        terminated = np.zeros(self.num_envs, bool)
        truncated = np.zeros(self.num_envs, bool)
        final_obs: dict[int, np.ndarray] = {}
        returns: list[float] = []
        lengths: list[int] = []
        metrics: dict[str, list[float]] = {}
        for g, game in enumerate(self.games):
            rows = slice(g * n, (g + 1) * n)
            was_active = self.active[rows].copy()
            try:
                step = game.step(actions[rows])
            except EnvError:
                raise
            except Exception as err:
                raise env_failure(self.spec, g, self._steps, "step", err) from err
            rewards[rows], terminated[rows], truncated[rows] = (
                step.reward,
                step.terminated,
                step.truncated,
            )
            self._returns[rows] += step.reward
            self._lengths[rows] += was_active
            team = self._game_returns[g]
            # A turn-based game's result also reaches the player not to move (shoal.envs.turn_based)
            for i in np.flatnonzero(was_active | (step.reward != 0)):
                agent = game.agents[i]
                team[agent] = team.get(agent, 0.0) + float(step.reward[i])
            for i, last in step.final_obs.items():
                final_obs[g * n + i] = checked_obs(self.spec, last, g * n + i, self._steps)
            for row in g * n + np.flatnonzero(step.terminated | step.truncated):
                returns.append(float(self._returns[row]))
                lengths.append(int(self._lengths[row]))
                self._returns[row], self._lengths[row] = 0.0, 0
            if game.game_over:
                for key, value in _game_metrics(team).items():
                    metrics.setdefault(key, []).append(value)
                self._reset_game(g, None)
            else:
                self.active[rows] = step.active
                for i, obs in enumerate(step.obs):
                    assign(self._obs, g * n + i, checked_obs(self.spec, obs, g * n + i, 0))
        check_finite(self.spec, self._obs, rewards, self._steps)
        obs = map_tree(np.copy, self._obs)
        return VectorStep(obs, rewards, terminated, truncated, final_obs, returns, lengths, metrics)

    def close(self) -> None:
        for game in self.games:
            game.close()

    def _reset_game(self, g: int, seed: int | None) -> None:
        n = self.agents_per_game
        try:
            observations, active = self.games[g].reset(seed=seed)
        except EnvError:
            raise
        except Exception as err:
            raise env_failure(self.spec, g, self._steps, "reset", err) from err
        self.active[g * n : (g + 1) * n] = active
        self._returns[g * n : (g + 1) * n] = 0.0
        self._lengths[g * n : (g + 1) * n] = 0
        self._game_returns[g] = {}
        for i, obs in enumerate(observations):
            assign(self._obs, g * n + i, checked_obs(self.spec, obs, g * n + i, self._steps))


def _game_metrics(returns: dict[str, float]) -> dict[str, float]:
    """A finished game's summed return and each of its agents' returns."""
    return {"team_return": sum(returns.values())} | {
        f"return_{agent}": value for agent, value in returns.items()
    }
