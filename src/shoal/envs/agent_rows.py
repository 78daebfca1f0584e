"""One PettingZoo parallel env as rows of a batch: row i is the env's agent `possible_agents[i]`.

shoal's networks act on a batch of rows, so a game of N agents is N rows that one shared
network acts for (parameter sharing, Gupta et al. 2017, "Cooperative Multi-agent Control Using
Deep Reinforcement Learning"; Terry et al. 2020, "Revisiting Parameter Sharing in Multi-Agent
Deep Reinforcement Learning"). With `agent_id`, each row's observation carries a one-hot of its
agent's index, so the shared network can still act differently per agent.

Agents may join and leave an episode (`env.agents` is a subset of `possible_agents` that
changes). A row whose agent is not in the env is *inactive*: its observation is zeros, its
action is not sent, its reward is 0 and it neither terminates nor truncates; `active` says which
rows hold an agent. The step on which an agent leaves ends that agent's episode (terminated or
truncated, as the env said); one that joins starts a new one. The game is reset when no agent
is left.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from shoal.envs.observations import ImageLayout, ObservationConversion
from shoal.errors import EnvError

__all__ = ["AgentRows", "RowsStep"]

AGENT_ID_KEY = "agent_id"


class RowsStep:
    """One step of a game's rows `[N]` (the module docstring says what inactive rows hold)."""

    __slots__ = ("active", "final_obs", "obs", "reward", "terminated", "truncated")

    def __init__(self, obs, reward, terminated, truncated, final_obs, active) -> None:
        self.obs = obs  # [N, ...] after the step (zeros where no agent is)
        self.reward = reward  # [N] float32
        self.terminated = terminated  # [N] bool
        self.truncated = truncated  # [N] bool
        self.final_obs = final_obs  # row -> last observation of an agent that was truncated
        self.active = active  # [N] bool: rows whose agent is in the env after the step


class AgentRows:
    """A PettingZoo `ParallelEnv` whose agents share one observation and action space, as rows.

    `observation_space` and `action_space` are one agent's (observations converted as shoal's
    registry converts a Gymnasium env's, plus the agent-id one-hot when asked for).
    """

    def __init__(
        self,
        env: Any,
        env_id: str,
        agent_id: bool = False,
        image_layout: ImageLayout = "auto",
    ) -> None:
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
                differ = {a: s for a, s in zip(self.agents, spaces, strict=True)}
                raise EnvError(
                    f"{env_id}: its agents have different {kind} spaces ({differ}), and shoal's "
                    "one shared network needs one. Pad them to one space first, e.g. with "
                    "SuperSuit's pad_observations_v0 and pad_action_space_v0, in a factory "
                    "module you pass as pettingzoo:package.module."
                )
        self.conversion = ObservationConversion(obs_spaces[0], image_layout)
        self.raw_observation_space = obs_spaces[0] if self.conversion.changes else None
        self.agent_id = agent_id
        self.observation_space = _with_agent_id(self.conversion.space, self.num_rows, agent_id)
        self.action_space = action_spaces[0]
        self._discrete = isinstance(self.action_space, gym.spaces.Discrete)
        self._zero_obs = _zeros(self.observation_space)
        self.active = np.zeros(self.num_rows, bool)

    def reset(self, seed: int | None = None) -> tuple[list[Any], np.ndarray]:
        """A new game: each row's first observation (zeros for absent agents) and `active`."""
        observations, _ = self.env.reset(seed=seed)
        self.active = np.zeros(self.num_rows, bool)
        present = self._present()
        self.active[[self.rows[a] for a in present]] = True
        return self._rows_obs(observations, present), self.active.copy()

    def step(self, actions: np.ndarray) -> RowsStep:
        """Send the active rows' actions `[N, ...]`; inactive rows' actions are not sent."""
        acting = [a for a in self.agents if self.active[self.rows[a]]]
        sent = {a: self._action(actions[self.rows[a]]) for a in acting}
        observations, rewards, terminations, truncations, _ = self.env.step(sent)
        n = self.num_rows
        reward = np.zeros(n, np.float32)
        terminated = np.zeros(n, bool)
        truncated = np.zeros(n, bool)
        final_obs: dict[int, Any] = {}
        ended = {a for a in acting if terminations.get(a, False) or truncations.get(a, False)}
        present = set(self._present()) - ended  # an ended agent acts no more, listed or not
        for agent in acting:
            i = self.rows[agent]
            reward[i] = rewards.get(agent, 0.0)
            trunc = bool(truncations.get(agent, False))
            # An agent gone from `env.agents` without a flag has left: its episode ended.
            term = bool(terminations.get(agent, False)) or (agent not in present and not trunc)
            terminated[i], truncated[i] = term, trunc and not term
            if truncated[i]:
                final_obs[i] = self._one_obs(observations, agent)
        self.active = np.zeros(n, bool)
        self.active[[self.rows[a] for a in present]] = True
        obs = self._rows_obs(observations, sorted(present, key=self.rows.get))
        return RowsStep(obs, reward, terminated, truncated, final_obs, self.active.copy())

    @property
    def game_over(self) -> bool:
        """No agent is left: the game must be reset."""
        return not self.env.agents

    def close(self) -> None:
        self.env.close()

    def _present(self) -> list[str]:
        unknown = [a for a in self.env.agents if a not in self.rows]
        if unknown:
            raise EnvError(
                f"{self.env_id}: agents {unknown} are in the env and not in its possible_agents "
                f"{self.agents}; a PettingZoo env must list every agent that may appear there."
            )
        return list(self.env.agents)

    def _rows_obs(self, observations: dict[str, Any], present: list[str]) -> list[Any]:
        rows = [self._zero_obs] * self.num_rows
        for agent in present:
            rows[self.rows[agent]] = self._one_obs(observations, agent)
        return rows

    def _one_obs(self, observations: dict[str, Any], agent: str) -> Any:
        if agent not in observations:
            raise EnvError(
                f"{self.env_id}: agent {agent!r} is in the env and got no observation; a "
                "parallel env returns one for every agent in env.agents."
            )
        try:
            obs = self.conversion(observations[agent])
        except ValueError as err:
            raise EnvError(f"{self.env_id}: agent {agent!r}'s observation: {err}") from None
        if not self.agent_id:
            return obs
        one_hot = np.zeros(self.num_rows, np.float32)
        one_hot[self.rows[agent]] = 1.0
        if isinstance(obs, dict):
            return {**obs, AGENT_ID_KEY: one_hot}
        if np.ndim(obs) == 1:
            return np.concatenate([np.asarray(obs, np.float32), one_hot])
        return {"obs": obs, AGENT_ID_KEY: one_hot}

    def _action(self, action: np.ndarray) -> Any:
        return int(action) if self._discrete else np.asarray(action, self.action_space.dtype)


def _with_agent_id(space: gym.spaces.Space, n: int, agent_id: bool) -> gym.spaces.Space:
    """The agent's observation space with an `n`-way one-hot: appended to a vector, or as a
    Dict entry beside an image or a Dict's entries."""
    if not agent_id:
        return space
    one_hot = gym.spaces.Box(0.0, 1.0, (n,), np.float32)
    if isinstance(space, gym.spaces.Dict):
        return gym.spaces.Dict({**space.spaces, AGENT_ID_KEY: one_hot})
    if len(space.shape) == 1:
        low = np.concatenate([np.asarray(space.low, np.float32), one_hot.low])
        high = np.concatenate([np.asarray(space.high, np.float32), one_hot.high])
        return gym.spaces.Box(low, high, low.shape, np.float32)
    return gym.spaces.Dict({"obs": space, AGENT_ID_KEY: one_hot})


def _zeros(space: gym.spaces.Space) -> Any:
    if isinstance(space, gym.spaces.Dict):
        return {k: np.zeros(s.shape, s.dtype) for k, s in space.spaces.items()}
    return np.zeros(space.shape, space.dtype)
