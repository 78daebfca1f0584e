"""Whole sequences for the actor-critic family's recurrent networks (recurrent PPO, A2C, A3C).

A rollout `[T, B]` holds one sequence of T steps per env column. The learner runs the LSTM over
each whole sequence in time order, from the state the actor recorded at its first step (the
runtime records the state every step started from, under the state's own keys), zeroing the
state where an episode starts inside it; PPO's minibatches are sets of whole columns
(`sequence_minibatches`), never steps shuffled out of their sequences.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch

from shoal.data import Unroll

__all__ = ["sequence_inputs", "sequence_minibatches"]


def sequence_inputs(
    unroll: Unroll, state_keys: Iterable[str]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """`first [T + 1, B]` bool (obs[t] starts an episode) and the state each column's sequence
    started from, `{key: [B, ...]}`, of an unroll acted by a recurrent policy.

    `first[0]` is what the runtime recorded at step 0; `first[t + 1]` is where step t ended an
    episode (terminated or truncated: obs[t + 1] is then the next episode's first)."""
    ended = unroll.terminated | unroll.truncated
    extras = unroll.extras
    starts = extras.get("first", np.zeros_like(ended))
    keys = list(state_keys)
    missing = [key for key in keys if key not in extras]
    if missing:
        raise RuntimeError(
            f"The unroll carries no recorded state {missing}: it was acted by a policy without "
            "an LSTM core, or by a runtime that did not record the state each step started "
            "from (Acting.act does). Learn from it with use_lstm false, or act with use_lstm true."
        )
    if not np.array_equal(starts[1:], ended[:-1]):
        raise RuntimeError(
            "The unroll's recorded episode starts do not follow its episode ends: the loop "
            "that stepped the envs did not report when episodes ended, so the LSTM state was "
            "carried from one episode into the next. Report every step's terminated | "
            "truncated to the acting rows (Acting.observe) so each ended episode's row starts "
            "afresh."
        )
    first = np.concatenate([starts[:1], ended])
    return first, {key: extras[key][0] for key in keys}


def sequence_minibatches(
    num_sequences: int, per_minibatch: int, device: torch.device | str = "cpu"
) -> list[torch.Tensor]:
    """The env columns `0..num_sequences-1` in a random order, cut into minibatches of
    `per_minibatch` columns (`[per_minibatch]` int64 each; a remainder too small for a whole
    minibatch is left out of this epoch, as the feed-forward minibatches leave theirs).

    Each column is a whole sequence: its steps stay together and in order."""
    if per_minibatch <= 0:
        raise ValueError(f"per_minibatch must be > 0, got {per_minibatch}")
    if num_sequences == 0:
        return []
    size = min(per_minibatch, num_sequences)
    order = torch.randperm(num_sequences).to(device)
    return [order[s : s + size] for s in range(0, num_sequences - size + 1, size)]
