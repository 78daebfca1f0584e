"""R2D2's actor side: epsilon-greedy acting with an LSTM, and sequences with initial priorities.

Each env (a "row") has its own LSTM state, previous action and reward, and exploration rate.
Actor-side, a policy acts for its actor's E envs (rows 0..E-1). Under central inference one
policy acts for every actor's envs: the server passes the slot ids of the envs in each call
(`rows`), and the state grows to the highest row seen.
"""

from __future__ import annotations

import numpy as np
import torch

from shoal.agents.base import Transitions, Unroll, Weights
from shoal.agents.r2d2.config import R2D2Config
from shoal.agents.r2d2.loss import initial_priorities
from shoal.agents.r2d2.networks import R2D2Net
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.replay import SequenceAccumulator
from shoal.tree import leaves, map_tree


class R2D2Policy:
    """Epsilon-greedy on the recurrent Q-network for many rows; `prepare` makes sequences.

    `act(obs [n, ...], rows) -> (actions [n], extras)`, extras holding `"first"` `[n]` (the
    observation starts an episode) and `"core_h"`, `"core_c"` `[n, H]`: the state the step
    started from (zero where `first`), which sequences store (Kapturowski et al. 2019,
    section 3, "stored state"). After every env step the caller reports the rewards
    (`observe_rewards`), then the episodes that ended (`episode_ended`): those rows start
    afresh at their next `act`. `rows=None` means rows `0..n-1`; a change of n there starts
    every row afresh.

    Exploration (Ape-X, Horgan et al. 2018; R2D2 section 2.3): actor i of N explores with
    `apex_epsilon^(1 + apex_alpha i / (N - 1))`. With `exploration="per_env"` (the default)
    the rate is spread over every env of every actor (env j of actor i is number `i E + j` of
    `N E`), so a single actor stepping many envs explores at many rates too.
    """

    central_inference = True
    acts_per_env = False  # per-row state: every call must say which rows it acts for

    def __init__(
        self,
        spec: EnvSpec,
        config: R2D2Config,
        net: R2D2Net,
        seed: int,
        *,
        epsilon: float | None = None,
    ) -> None:
        self.config = config
        self.net = net
        self.version = 0
        self.rng = np.random.default_rng(seed)
        self.fixed_epsilon = epsilon  # evaluation: one rate for every row
        self.actor = (0, 1)  # (index, count) of the actor acting on rows given no `rows`
        self._sequences: SequenceAccumulator | None = None
        self._clear()

    # Per-row state.

    def _clear(self) -> None:
        """No rows: each is created, starting an episode, when first named."""
        self._h = self._c = torch.zeros(0, self.net.core.hidden_size)  # [R, H]
        self._first = np.zeros(0, bool)  # [R]: the row's next observation starts an episode
        self._prev_action = np.zeros(0, np.int64)  # [R]
        self._prev_reward = np.zeros(0, np.float32)  # [R]
        self._epsilon = np.zeros(0)  # [R]

    def _epsilons(self, index: int, count: int, width: int) -> np.ndarray:
        """Exploration rates of `width` envs of actor `index` of `count`."""
        if self.fixed_epsilon is not None:
            return np.full(width, self.fixed_epsilon)
        if self.config.exploration == "per_actor":
            return np.full(width, self.config.epsilon(index, count))
        return np.array(
            [self.config.epsilon(index * width + j, count * width) for j in range(width)]
        )

    def _grow(self, needed: int) -> None:
        have = self._first.shape[0]
        if needed <= have:
            return
        extra = needed - have
        device = module_device(self.net)
        zeros = torch.zeros(extra, self.net.core.hidden_size, device=device)
        self._h = torch.cat([self._h.to(device), zeros])
        self._c = torch.cat([self._c.to(device), zeros])
        self._first = np.concatenate([self._first, np.ones(extra, bool)])
        self._prev_action = np.concatenate([self._prev_action, np.zeros(extra, np.int64)])
        self._prev_reward = np.concatenate([self._prev_reward, np.zeros(extra, np.float32)])
        # Rows nobody assigned explore like envs of this policy's own actor.
        self._epsilon = np.concatenate([self._epsilon, self._epsilons(*self.actor, extra)])

    def _rows(self, width: int, rows: np.ndarray | None) -> np.ndarray:
        if rows is None:
            if width != self._first.shape[0]:
                self._clear()
            rows = np.arange(width)
        rows = np.asarray(rows, np.int64)
        self._grow(int(rows.max()) + 1 if rows.size else 0)
        return rows

    def set_actor_index(self, index: int, count: int, rows: np.ndarray | None = None) -> None:
        """Actor `index` of `count` acts on `rows` (all rows of this policy, now and later, when
        None): they explore at that actor's rates."""
        if rows is None:
            self.actor = (index, count)
            self._epsilon = self._epsilons(index, count, self._first.shape[0])
            return
        rows = self._rows(len(rows), rows)
        self._epsilon[rows] = self._epsilons(index, count, len(rows))

    def exploration_rates(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The epsilon each of `rows` (every row when None) acts with."""
        return self._epsilon.copy() if rows is None else self._epsilon[np.asarray(rows, np.int64)]

    def observe_rewards(self, rewards: np.ndarray, rows: np.ndarray | None = None) -> None:
        """`rewards [n]` of the step just taken: the rows' next `act` sees them as r_{t-1}."""
        rewards = np.asarray(rewards, np.float32)
        index = self._rows(rewards.shape[0], rows)
        self._prev_reward[index] = rewards

    def episode_ended(self, mask: np.ndarray, rows: np.ndarray | None = None) -> None:
        """`mask [n]` bool (terminated | truncated): these rows start afresh at the next `act`."""
        mask = np.asarray(mask, bool)
        index = self._rows(mask.shape[0], rows)[mask]
        self._first[index] = True
        self._prev_action[index], self._prev_reward[index] = 0, 0.0

    # Acting.

    @torch.no_grad()
    def q_values(
        self, obs: np.ndarray, rows: np.ndarray | None = None
    ) -> tuple[torch.Tensor, np.ndarray, dict[str, np.ndarray]]:
        """Advance the rows' LSTM one step: Q-values `[n, A]` (CPU), the row ids, the extras."""
        index = self._rows(leaves(obs)[0].shape[0], rows)
        device = module_device(self.net)
        at = torch.from_numpy(index).to(device)
        first_np = self._first[index]
        first = torch.from_numpy(first_np).to(device)
        # Zeroed here as well as in the core, so the recorded state is the one this step used.
        h = torch.where(first[:, None], 0.0, self._h[at])
        c = torch.where(first[:, None], 0.0, self._c[at])
        q, (h_next, c_next) = self.net.unroll(
            map_tree(lambda x: torch.from_numpy(x).to(device)[None], obs),
            torch.from_numpy(self._prev_action[index]).to(device)[None],
            torch.from_numpy(self._prev_reward[index]).to(device)[None],
            first[None],
            (h, c),
        )
        self._h[at], self._c[at] = h_next, c_next
        self._first[index] = False
        extras = {"first": first_np, "core_h": h.cpu().numpy(), "core_c": c.cpu().numpy()}
        return q[0].cpu(), index, extras

    def act(
        self, obs: np.ndarray, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        q, index, extras = self.q_values(obs, rows)
        greedy = q.argmax(-1).numpy()
        explore = self.rng.random(len(index)) < self._epsilon[index]
        actions = np.where(explore, self.rng.integers(0, self.net.num_actions, len(index)), greedy)
        self._prev_action[index] = actions
        self._prev_reward[index] = 0.0  # until `observe_rewards` reports this step's reward
        return actions, extras

    # Experience.

    def prepare(self, unroll: Unroll) -> Transitions:
        """The sequences this unroll completes, with initial priorities if prioritised.

        Only the unroll is read (its `first`, `core_h`, `core_c` extras), never this policy's
        rows, so under central inference a separate policy can prepare each actor's unrolls.
        """
        config = self.config
        width = unroll.batch_size
        if self._sequences is None or self._sequences.num_envs != width:
            self._sequences = SequenceAccumulator(
                width, config.sequence_length, config.sequence_period
            )
        extras = unroll.extras
        data = self._sequences.extend(
            unroll.obs[:-1],  # the last observation comes again as the next unroll's first
            unroll.actions,
            unroll.rewards,
            unroll.terminated,
            unroll.truncated,
            extras["first"],
            extras["core_h"],
            extras["core_c"],
            unroll.final_obs,
            unroll.final_index,
        )
        if config.prioritized and len(data["reward"]):
            data["priority"] = initial_priorities(self.net, data, config)
        return Transitions(data, unroll.length * width, unroll.behaviour_version)

    def load_weights(self, weights: Weights, version: int) -> None:
        if version > self.version:
            self.net.load_state_dict(weights)
            self.version = version


class R2D2EvalPolicy:
    """Greedy on Q when deterministic, else epsilon-greedy with `eval_epsilon`; carries the
    LSTM state, so the caller reports rewards and episode ends after every step."""

    def __init__(
        self, spec: EnvSpec, config: R2D2Config, net: R2D2Net, deterministic: bool
    ) -> None:
        epsilon = 0.0 if deterministic else config.eval_epsilon
        self.policy = R2D2Policy(spec, config, net, seed=0, epsilon=epsilon)

    def act(self, obs: np.ndarray) -> np.ndarray:
        return self.policy.act(obs)[0]

    def exploration_rates(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The epsilon each of `rows` (every row when None) acts with."""
        return self.policy.exploration_rates(rows)

    def observe_rewards(self, rewards: np.ndarray) -> None:
        self.policy.observe_rewards(rewards)

    def episode_ended(self, mask: np.ndarray) -> None:
        self.policy.episode_ended(mask)
