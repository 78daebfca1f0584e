"""Agent57's acting: NGU's intrinsic reward, the meta-controller's mixture, epsilon-greedy on the
combined Q-values (Badia et al. 2020, "Agent57" section 4 and "Never Give Up" section 2).

Each row's recurrent state (held by the runtime) is both Q-networks' LSTM state, the intrinsic
reward of its previous step and its episode's mixture index j (-1 until its first step picks
one). At every step the policy

1. picks j for rows starting an episode from a sliding-window UCB bandit: one per actor
   (window 160, epsilon 0.5), or the evaluator's (window 3600, epsilon 0.01) for the evaluator
   row and in evaluation modes (`greedy` evaluation plays its best arm by windowed mean
   return, `sample` lets it choose as in training); the bandit learns from each episode's
   undiscounted extrinsic return, which `observe` adds up;
2. computes NGU's intrinsic reward of the observation x_t: the episodic reward of its embedding
   f(x_t) against the row's episodic memory (emptied at each episode start), times the lifelong
   multiplier of its RND error normalised by the actor's running mean and deviation;
3. acts epsilon-greedily (Ape-X's rates; the evaluator row and `sample` mode at eval_epsilon,
   `greedy` at 0) on `h(h^{-1}(Q_e) + β_j h^{-1}(Q_i))`.

The bandits and the novelty statistics are the policy's `state_dict`, keyed by actor and env
slot, so a resumed run continues them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from shoal import ops
from shoal.agents.agent57.bandit import SlidingWindowUCB
from shoal.agents.agent57.config import Agent57Config
from shoal.agents.agent57.networks import Agent57Net
from shoal.agents.base import ActMode, Layout, Policy, PolicyStep, State, StepInputs
from shoal.agents.value.exploration import epsilon_greedy, exploration_rates
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.ops.novelty import EpisodicMemory, RunningMeanStd, lifelong_multiplier
from shoal.tree import map_tree

EVALUATOR = "evaluator"


class Agent57Policy(Policy):
    def __init__(
        self,
        spec: EnvSpec,
        config: Agent57Config,
        net: Agent57Net,
        seed: int,
        layout: Layout | None = None,
    ) -> None:
        self.config, self.net = config, net
        self.layout = layout or Layout()
        self.table = config.mixtures()
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.memory = EpisodicMemory(
            0,
            config.embedding_size,
            capacity=config.episodic_capacity,
            k=config.num_neighbours,
            kernel_epsilon=config.kernel_epsilon,
            cluster_distance=config.cluster_distance,
            pseudo_count=config.pseudo_count,
            max_similarity=config.max_similarity,
            distance_mean=config.distance_mean,
        )
        self.bandits: dict[str, SlidingWindowUCB] = {}
        self.rnd_stats: dict[str, RunningMeanStd] = {}
        self.saved: dict[str, Any] = {}  # a checkpoint's entries, taken as bandits are made
        self.episode: dict[int, tuple[str, int, float]] = {}  # slot -> (bandit, arm, return)
        self.served: set[int] = set()  # the env slots this policy acted for

    # Which bandit and statistics a row uses.

    def evaluator_slot(self) -> int | None:
        total = self.layout.total_envs
        return total - 1 if self.config.evaluator_row and total > 1 else None

    def _actor(self, slot: int) -> str:
        return f"actor{slot // self.layout.envs_per_actor}"

    def _bandit(self, name: str) -> SlidingWindowUCB:
        bandit = self.bandits.get(name)
        if bandit is None:
            config = self.config
            evaluator = name == EVALUATOR
            bandit = SlidingWindowUCB(
                config.num_mixtures,
                config.eval_bandit_window if evaluator else config.bandit_window,
                config.eval_bandit_epsilon if evaluator else config.bandit_epsilon,
                config.bandit_bonus,
                seed=int(self.rng.integers(2**31)),
            )
            if f"{name}/bandit" in self.saved:
                bandit.load_state_dict(self.saved[f"{name}/bandit"])
            self.bandits[name] = bandit
        return bandit

    def _rnd(self, name: str) -> RunningMeanStd:
        stats = self.rnd_stats.get(name)
        if stats is None:
            stats = self.rnd_stats[name] = RunningMeanStd()
            if f"{name}/rnd" in self.saved:
                stats.load_state_dict(self.saved[f"{name}/rnd"])
        return stats

    def _bandit_of(self, slot: int, mode: ActMode) -> str:
        evaluating = mode != "train" or slot == self.evaluator_slot()
        return EVALUATOR if evaluating else self._actor(slot)

    # The contract.

    def initial_state(self, slots: np.ndarray) -> State:
        n, size = len(slots), self.config.lstm_size
        device = module_device(self.net)
        zeros = torch.zeros(n, size, device=device)
        return {
            "extrinsic_h": zeros,
            "extrinsic_c": zeros.clone(),
            "intrinsic_h": zeros.clone(),
            "intrinsic_c": zeros.clone(),
            "prev_intrinsic": torch.zeros(n, device=device),
            "arm": torch.full((n,), -1, dtype=torch.long, device=device),
        }

    def exploration_rates(self, slots: np.ndarray, mode: ActMode) -> np.ndarray:
        """R2D2's rates, with the evaluator row at `eval_epsilon` in `train` mode."""
        rates = exploration_rates(self.config, self.layout, slots, mode)
        evaluator = (slots == self.evaluator_slot()) & (mode == "train")
        return np.where(evaluator, self.config.eval_epsilon, rates)

    @torch.no_grad()
    def step(self, obs: Any, state: State, inputs: StepInputs, mode: ActMode) -> PolicyStep:
        net, config = self.net, self.config
        device = module_device(net)
        slots = inputs.slot
        arm = state["arm"].clone()
        for i in np.flatnonzero(arm.cpu().numpy() < 0):  # episode starts pick their mixture
            slot, name = int(slots[i]), self._bandit_of(int(slots[i]), mode)
            bandit = self._bandit(name)
            # Greedy evaluation is greedy in the mixture too: UCB's bonus would spend episodes
            # on arms the evaluator has barely played (`sample` evaluates as the paper does).
            arm[i] = bandit.best_arm() if mode == "greedy" else bandit.select()
            self.episode[slot] = (name, int(arm[i]), 0.0)
        x = map_tree(lambda o: torch.from_numpy(o).to(device), obs)
        episodic, multiplier = self._novelty(x, slots, inputs.first)
        intrinsic = episodic * multiplier

        def unroll(head: str) -> tuple[torch.Tensor, tuple]:
            core = (state[f"{head}_h"], state[f"{head}_c"])
            extra = net.extra_inputs(state["prev_intrinsic"][None], arm[None])
            q, core = getattr(net, head).unroll(
                map_tree(lambda o: o[None], x),
                torch.from_numpy(inputs.prev_action).to(device)[None],
                torch.from_numpy(inputs.prev_reward).to(device)[None],
                torch.from_numpy(inputs.first).to(device)[None],
                core,
                extra,
            )
            return q[0], core

        q_e, (e_h, e_c) = unroll("extrinsic")
        q_i, (i_h, i_c) = unroll("intrinsic")
        beta = self.table.select(arm, device=device).beta
        combined = ops.combine_q_values(q_e, q_i, beta, config.rescale_eps)
        rates = self.exploration_rates(slots, mode)
        actions = epsilon_greedy(combined, obs, rates, self.rng)
        new_state = {
            "extrinsic_h": e_h,
            "extrinsic_c": e_c,
            "intrinsic_h": i_h,
            "intrinsic_c": i_c,
            "prev_intrinsic": intrinsic.to(device),
            "arm": arm,
        }
        extras = {
            "mixture": arm.cpu().numpy(),
            "intrinsic_reward": intrinsic.cpu().numpy().astype(np.float32),
            "episodic_reward": episodic.cpu().numpy().astype(np.float32),
            "multiplier": multiplier.cpu().numpy().astype(np.float32),
        }
        return PolicyStep(actions, extras, new_state)

    def _novelty(
        self, x: Any, slots: np.ndarray, first: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """NGU's two factors of each row's intrinsic reward, `[n]` each (CPU)."""
        net = self.net
        if self.memory.rows <= int(slots.max()):
            self.memory.grow(int(slots.max()) + 1)
        self.served.update(slots.tolist())
        if first.any():
            self.memory.reset(slots[first])
        empty = torch.from_numpy(self.memory.sizes[slots] == 0)
        episodic = self.memory.reward(slots, net.embedding(x).float()).cpu()
        # An episode's first observation has nothing to be novel against: Algorithm 1's
        # 1 / c = 1000 there would dwarf every other intrinsic reward, so it gets none.
        episodic = torch.where(empty, torch.zeros_like(episodic), episodic)
        errors = net.rnd_error(x).float().cpu()
        multiplier = torch.empty_like(errors)
        actors = np.array([self._actor(int(s)) for s in slots])
        for name in np.unique(actors):
            rows = torch.from_numpy(actors == name)
            stats = self._rnd(str(name))
            stats.update(errors[rows])
            multiplier[rows] = lifelong_multiplier(
                errors[rows], stats.mean, stats.std, self.config.max_lifelong_multiplier
            )
        return episodic, multiplier

    def observe(self, slots: np.ndarray, rewards: np.ndarray, ended: np.ndarray) -> None:
        for slot, reward, done in zip(
            slots.tolist(), rewards.tolist(), ended.tolist(), strict=True
        ):
            record = self.episode.get(slot)
            if record is None:
                continue
            name, arm, total = record
            total += reward
            if done:
                self._bandit(name).update(arm, total)
                del self.episode[slot]
            else:
                self.episode[slot] = (name, arm, total)

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            f"{name}/bandit": b.state_dict() for name, b in self.bandits.items()
        }
        state |= {f"{name}/rnd": s.state_dict() for name, s in self.rnd_stats.items()}
        memory = self.memory.state_dict()
        sums, counts = memory["sq_distance_sum"], memory["sq_distance_count"]
        for slot in sorted(self.served):  # not others' loaded from a checkpoint: states merge
            state[f"slot{slot}/episodic"] = [float(sums[slot]), int(counts[slot])]
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.saved = dict(state)
        for name in list(self.bandits):
            if f"{name}/bandit" in state:
                self.bandits[name].load_state_dict(state[f"{name}/bandit"])
        slots = [int(key[4:].split("/")[0]) for key in state if key.endswith("/episodic")]
        if slots:
            rows = max(max(slots) + 1, self.memory.rows)
            self.memory.grow(rows)
            memory = self.memory.state_dict()
            sums, counts = list(memory["sq_distance_sum"]), list(memory["sq_distance_count"])
            for slot in slots:
                sums[slot], counts[slot] = state[f"slot{slot}/episodic"]
            self.memory.load_state_dict({"sq_distance_sum": sums, "sq_distance_count": counts})
