"""Demonstrations as R2D2 sequences for R2D3's demo replay (Paine et al. 2019, section 3).

The dataset's episodes are laid end to end as one stream, as an actor's env would play them,
and cut into R2D2's overlapping sequences (`shoal.replay.SequenceAccumulator`: `sequence_length`
steps, a new one every `sequence_period`, crossing episode boundaries, a truncated episode's
final observation in an entry of its own). Every sequence stores the network's initial
recurrent state, zeros, as the paper does for demonstrations (no network played them); the
learner's burn-in warms it. So that the last episode's last steps are in a sequence too, the
stream goes on into its first episodes again for the `sequence_length + 1` entries that takes,
and only the sequences that start in the demonstrations proper are kept (a sequence that
starts near the end thus ends in the stream's first steps, after an episode boundary, where
the network's state is reset).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.agents.value.recurrent_config import R2D2Config
from shoal.agents.value.sequences import STATE_KEYS
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.replay import SequenceAccumulator

__all__ = ["DemoEpisode", "demo_episodes", "demo_sequences"]

DemoEpisode = dict[str, np.ndarray]  # obs [T + 1, ...], action [T], reward, terminated, truncated


def demo_episodes(dataset: Any, spec: EnvSpec) -> list[DemoEpisode]:
    """The dataset's episodes with at least one step, as arrays of the env's dtypes."""
    out = []
    for episode in dataset.iterate_episodes():
        steps = len(episode.rewards)
        if steps == 0:
            continue
        action_dtype = np.int64 if spec.discrete else np.float32
        out.append(
            {
                "obs": np.asarray(episode.observations, spec.obs_dtype)[: steps + 1],
                "action": np.asarray(episode.actions, action_dtype)[:steps],
                "reward": np.asarray(episode.rewards, np.float32),
                "terminated": np.asarray(episode.terminations, bool),
                "truncated": np.asarray(episode.truncations, bool),
            }
        )
    if not out:
        raise ConfigError(f"The dataset {dataset.id!r} holds no steps to learn from.")
    return out


def _entries(episode: DemoEpisode) -> int:
    """Stream entries of an episode: its steps, and one more if it was truncated."""
    truncated = bool(episode["truncated"][-1]) and not bool(episode["terminated"][-1])
    return len(episode["reward"]) + truncated


def demo_sequences(episodes: list[DemoEpisode], config: R2D2Config) -> dict[str, np.ndarray]:
    """The sequences of `episodes` (`sequence_fields` arrays `[M, ...]`, module docstring)."""
    length, period = config.sequence_length, config.sequence_period
    stream = SequenceAccumulator(1, length, period)
    entries = sum(_entries(e) for e in episodes)
    keep = -(-entries // period)  # sequences starting at entries 0, period, ... < entries
    parts, fed, k = [], 0, 0
    while fed < entries + length + 1:
        episode = episodes[k % len(episodes)]
        steps = len(episode["reward"])
        first = np.zeros(steps, bool)
        first[0] = True
        ended = episode["truncated"][-1] and not episode["terminated"][-1]
        final_index = np.array([[steps - 1, 0]] if ended else np.zeros((0, 2)), np.int64)
        state = np.zeros((steps, 1, config.lstm_size), np.float32)
        parts.append(
            stream.extend(
                episode["obs"][:steps, None],
                episode["action"][:, None],
                episode["reward"][:, None],
                episode["terminated"][:, None],
                episode["truncated"][:, None],
                first[:, None],
                episode["obs"][steps:][:1] if ended else None,
                final_index if ended else None,
                start_fields=dict.fromkeys(STATE_KEYS, state),
            )
        )
        fed += _entries(episode)
        k += 1
    return {key: np.concatenate([p[key] for p in parts])[:keep] for key in parts[0]}
