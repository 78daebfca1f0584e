"""Adders: one actor's unrolls turned into replay items next to the policy that acted.

Ape-X (Horgan et al. 2018) assembles n-step transitions on the actor and gives them an initial
priority computed with the actor's own network, so new experience enters replay with an
informed priority rather than the maximum; R2D2 (Kapturowski et al. 2019) does the same with
overlapping sequences that store the recurrent state. An adder keeps what straddles two unrolls
(the n-step window, a sequence's tail), so each step is handed on exactly once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from shoal.data.unroll import Unroll
from shoal.replay.nstep import NStepAccumulator
from shoal.replay.sequence_accumulator import SequenceAccumulator

__all__ = ["STREAMS_PER_ACTOR", "NStepAdder", "SequenceAdder"]

# Each actor's envs get their own replay streams: actor i owns ids [i * STREAMS, (i + 1) * STREAMS).
STREAMS_PER_ACTOR = 1 << 20

# (items) -> initial priorities [M], computed with the network that acted.
Priorities = Callable[[Mapping[str, np.ndarray]], np.ndarray]


def _final_obs_by_step(unroll: Unroll) -> dict[int, dict[int, np.ndarray]]:
    final: dict[int, dict[int, np.ndarray]] = {}
    for k, (t, b) in enumerate(unroll.final_index):
        final.setdefault(int(t), {})[int(b)] = unroll.final_obs[k]
    return final


class NStepAdder:
    """An actor's unrolls as n-step transitions (`shoal.replay.NStepAccumulator`), with initial
    priorities when `priorities` is given; the fields `TransitionReplay.add` takes."""

    def __init__(
        self, n: int, gamma: float, actor: int = 0, priorities: Priorities | None = None
    ) -> None:
        self.n, self.gamma, self.actor = n, gamma, actor
        self.priorities = priorities
        self._nstep: NStepAccumulator | None = None

    def add(self, unroll: Unroll) -> dict[str, np.ndarray] | None:
        """The transitions this unroll completes (None if none). Those of steps near its end
        wait for the next unroll's rewards, so each is sent once, with its full n steps."""
        if self._nstep is None:
            streams = self.actor * STREAMS_PER_ACTOR + np.arange(unroll.batch_size)
            self._nstep = NStepAccumulator(unroll.batch_size, self.n, self.gamma, streams)
        final = _final_obs_by_step(unroll)
        parts = []
        for t in range(unroll.length):
            ended = unroll.terminated[t] | unroll.truncated[t]
            # A terminated episode bootstraps from nothing: its next_obs only fills the slot.
            final_obs = {int(b): unroll.obs[t + 1, b] for b in np.flatnonzero(ended)}
            final_obs |= final.get(t, {})
            parts.append(
                self._nstep.step(
                    unroll.obs[t],
                    unroll.actions[t],
                    unroll.rewards[t],
                    unroll.terminated[t],
                    unroll.truncated[t],
                    unroll.obs[t + 1],
                    final_obs,
                )
            )
        data = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
        if not len(data["reward"]):
            return None
        if self.priorities is not None:
            data["priority"] = self.priorities(data)
        return data


class SequenceAdder:
    """An actor's unrolls as overlapping sequences (`shoal.replay.SequenceAccumulator`).

    `step_keys` name the unroll extras stored at every step of a sequence, `start_keys` those
    stored as they were at its first step (R2D2: `core_h`, `core_c`, the recurrent state the
    runtime recorded). Initial priorities when `priorities` is given.
    """

    def __init__(
        self,
        length: int,
        period: int,
        *,
        step_keys: Sequence[str] = (),
        start_keys: Sequence[str] = (),
        priorities: Priorities | None = None,
    ) -> None:
        self.length, self.period = length, period
        self.step_keys, self.start_keys = tuple(step_keys), tuple(start_keys)
        self.priorities = priorities
        self._sequences: SequenceAccumulator | None = None

    def add(self, unroll: Unroll) -> dict[str, np.ndarray] | None:
        """The sequences this unroll completes (None if none)."""
        if self._sequences is None or self._sequences.num_envs != unroll.batch_size:
            self._sequences = SequenceAccumulator(unroll.batch_size, self.length, self.period)
        extras = unroll.extras
        data = self._sequences.extend(
            unroll.obs[:-1],  # the last observation comes again as the next unroll's first
            unroll.actions,
            unroll.rewards,
            unroll.terminated,
            unroll.truncated,
            extras["first"],
            unroll.final_obs,
            unroll.final_index,
            step_fields={key: extras[key] for key in self.step_keys},
            start_fields={key: extras[key] for key in self.start_keys},
        )
        if not len(data["reward"]):
            return None
        if self.priorities is not None:
            data["priority"] = self.priorities(data)
        return data
