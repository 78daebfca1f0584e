"""A tiny PettingZoo parallel env whose agents join and leave, for tests and debugging.

`pettingzoo:shoal.envs.toy_agents` resolves to it (this module has `parallel_env`). It needs
PettingZoo (`pip install 'shoal[pettingzoo]'`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

__all__ = ["CueMatch", "parallel_env"]


class CueMatch(ParallelEnv):
    """Agents earn 1 for matching a cue and 0 otherwise, and come and go on a schedule.

    Each agent sees a one-hot cue of `num_cues` (drawn afresh for it every step); its action
    scores 1 if it equals the cue. The observation holds no clock, as MPE's do not: the
    truncation at `length` is then a time limit the agent cannot see, which bootstrapping from
    the final observation is right for. A cooperative task whose
    optimum is 1 per agent step and whose uniformly random return is `1 / num_cues` per step.

    Schedule of an episode of `length` steps (agent i of `num_agents`): agent 0 leaves
    (terminated) after `leave_at` steps, the last agent joins after `join_at` steps, the others
    stay until the episode is truncated at `length`. So rows are absent both before an agent
    joins and after it leaves.
    """

    metadata: ClassVar[dict[str, Any]] = {"name": "cue_match_v0", "render_modes": []}

    def __init__(
        self,
        num_agents: int = 3,
        num_cues: int = 3,
        length: int = 8,
        leave_at: int = 3,
        join_at: int = 2,
    ) -> None:
        if num_agents < 2 or not 0 < leave_at < length or not 0 < join_at < length:
            raise ValueError("need >= 2 agents and 0 < leave_at, join_at < length.")
        self.possible_agents = [f"agent_{i}" for i in range(num_agents)]
        self.num_cues, self.length = num_cues, length
        self.leave_at, self.join_at = leave_at, join_at
        self.render_mode = None
        self._obs_space = gym.spaces.Box(0.0, 1.0, (num_cues,), np.float32)
        self._action_space = gym.spaces.Discrete(num_cues)
        self.agents: list[str] = []
        self._rng = np.random.default_rng()
        self._cues: dict[str, int] = {}
        self._t = 0

    def observation_space(self, agent: str) -> gym.spaces.Box:
        return self._obs_space

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        return self._action_space

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self._action_space.seed(seed)
        self._t = 0
        self.agents = self.possible_agents[:-1]  # the last agent joins later
        return self._observations(), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        self._t += 1
        rewards = {a: float(int(actions[a]) == self._cues[a]) for a in self.agents}
        leaving = self.possible_agents[0]
        terminations = {a: a == leaving and self._t >= self.leave_at for a in self.agents}
        end = self._t >= self.length
        truncations = {a: end and not terminations[a] for a in self.agents}
        staying = [a for a in self.agents if not (terminations[a] or truncations[a])]
        joining = self.possible_agents[-1]
        if not end and self._t == self.join_at and joining not in staying:
            staying.append(joining)
        everyone = list(dict.fromkeys([*self.agents, *staying]))  # with one that joined
        for agent in everyone:  # a joining agent gets its first observation, and no reward
            rewards.setdefault(agent, 0.0)
            terminations.setdefault(agent, False)
            truncations.setdefault(agent, False)
        self.agents = staying
        observations = self._observations(extra=everyone)
        infos = {a: {} for a in everyone}
        return observations, rewards, terminations, truncations, infos

    def _observations(self, extra: list[str] = ()) -> dict[str, np.ndarray]:
        """A fresh cue for every agent now in the env (and the last observation of `extra`,
        the agents that acted this step)."""
        observations = {}
        for agent in dict.fromkeys([*self.agents, *extra]):
            cue = int(self._rng.integers(self.num_cues))
            self._cues[agent] = cue
            obs = np.zeros(self.num_cues, np.float32)
            obs[cue] = 1.0
            observations[agent] = obs
        return observations

    def close(self) -> None:
        pass

    def render(self) -> None:
        return None

    def state(self) -> np.ndarray:
        raise NotImplementedError("CueMatch has no global state.")


def parallel_env(**kwargs: Any) -> CueMatch:
    """The factory `pettingzoo:shoal.envs.toy_agents` calls."""
    return CueMatch(**kwargs)
