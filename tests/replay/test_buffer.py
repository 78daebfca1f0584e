"""TransitionReplay: FIFO eviction, stacks rebuilt from single frames, memory, stale priorities."""

from __future__ import annotations

import tracemalloc
from collections import deque

import numpy as np
import pytest

from shoal.replay import NStepAccumulator, TransitionReplay

GAMMA = 0.9
FRAME = (2, 3)


class NaiveStackedEnvs:
    """E envs emitting random frames, stacked the slow obvious way (a deque per env).

    `padding="reset"` repeats an episode's first frame, like gymnasium's FrameStackObservation;
    `"zero"` pads with zeros. Episodes end at random, terminated or truncated.
    """

    def __init__(self, num_envs: int, k: int, padding: str, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.num_envs, self.k, self.padding = num_envs, k, padding
        self.stacks = [self._reset() for _ in range(num_envs)]

    def _frame(self) -> np.ndarray:
        return self.rng.integers(1, 256, size=FRAME).astype(np.uint8)

    def _reset(self) -> deque:
        first = self._frame()
        pad = first if self.padding == "reset" else np.zeros(FRAME, np.uint8)
        return deque([pad] * (self.k - 1) + [first], maxlen=self.k)

    def obs(self) -> np.ndarray:
        return np.stack([np.stack(s) for s in self.stacks])

    def step(self):
        terminated = self.rng.random(self.num_envs) < 0.06
        truncated = (self.rng.random(self.num_envs) < 0.04) & ~terminated
        final = {}
        for e, stack in enumerate(self.stacks):
            stack.append(self._frame())
            if terminated[e] or truncated[e]:
                final[e] = np.stack(stack)
                self.stacks[e] = self._reset()
        reward = self.rng.normal(size=self.num_envs)
        return reward, terminated, truncated, self.obs(), final


def naive_sampleable(log: list[dict], capacity: int, k: int) -> set[int]:
    """Actions (unique ids) of the transitions the replay must be able to sample.

    Rows are numbered in add order: one per transition, then one more for the final observation
    after each `last` one; the newest `capacity` rows are stored. A transition is sampleable when
    its row and the rows of the k - 1 steps before it in its episode are stored, and the row of
    its next observation (m steps on, within the episode) has been written.
    """
    rows: dict[tuple[int, int, int], int] = {}  # (stream, episode, step) -> row
    episode: dict[int, list[int]] = {}  # stream -> [episode number, next step]
    info = []
    row = 0
    for tr in log:
        s = int(tr["stream"])
        if tr["first"]:
            ep = episode.get(s, [-1, 0])[0] + 1
            episode[s] = [ep, 0]
        ep, t = episode[s]
        rows[(s, ep, t)] = row
        info.append((int(tr["action"]), s, ep, t, int(tr["steps"])))
        row += 1
        episode[s][1] += 1
        if tr["last"]:
            rows[(s, ep, t + 1)] = row
            row += 1
    oldest = row - capacity
    out = set()
    for action, s, ep, t, m in info:
        needed = [rows[(s, ep, u)] for u in range(max(0, t - k + 1), t + 1)]
        if (s, ep, t + m) in rows and min(needed) >= oldest:
            out.add(action)
    return out


@pytest.mark.parametrize(
    ("k", "padding", "n", "prioritized"),
    [(4, "reset", 3, False), (4, "zero", 1, False), (1, "reset", 3, False), (4, "reset", 5, True)],
)
def test_samples_equal_added_transitions_across_episodes_and_wraparound(
    k: int, padding: str, n: int, prioritized: bool
) -> None:
    capacity, envs_per_actor, unroll = 61, 2, 7
    replay = TransitionReplay(
        capacity,
        (k, *FRAME) if k > 1 else FRAME,
        np.uint8,
        frame_stack=k,
        padding=padding,
        prioritized=prioritized,
    )
    actors = []
    for a in range(2):  # two actors, interleaving their unrolls in one replay
        env = NaiveStackedEnvs(envs_per_actor, k, padding, seed=10 * a + n)
        ids = np.arange(envs_per_actor) + 100 * a
        actors.append((env, NStepAccumulator(envs_per_actor, n, GAMMA, stream_ids=ids)))
    log: list[dict] = []
    by_action: dict[int, dict] = {}
    rng = np.random.default_rng(0)
    action_id = 0
    for round_ in range(30):
        for env, acc in actors:
            parts = []
            for _ in range(unroll):
                obs = env.obs() if k > 1 else env.obs()[:, 0]
                actions = action_id + np.arange(envs_per_actor)
                action_id += envs_per_actor
                reward, term, trunc, next_obs, final = env.step()
                if k == 1:
                    next_obs, final = next_obs[:, 0], {e: f[0] for e, f in final.items()}
                parts.append(acc.step(obs, actions, reward, term, trunc, next_obs, final))
            batch = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
            replay.add(batch)
            for i in range(len(batch["action"])):
                tr = {key: value[i] for key, value in batch.items()}
                log.append(tr)
                by_action[int(tr["action"])] = tr
        if round_ % 3 != 2:
            continue
        expected = naive_sampleable(log, capacity, k)
        assert len(replay) == len(expected)
        seen = set()
        for _ in range(40):
            sample = replay.sample(64, 0.5, rng)
            for i, action in enumerate(sample["action"].tolist()):
                ref = by_action[action]
                np.testing.assert_array_equal(sample["obs"][i], ref["obs"])
                np.testing.assert_array_equal(sample["next_obs"][i], ref["next_obs"])
                assert sample["reward"][i] == ref["reward"]
                assert sample["discount"][i] == ref["discount"]
                seen.add(action)
        assert seen == expected
    assert replay.num_added == len(log)
    assert any(tr["first"] for tr in log[-capacity:])  # episode starts inside the window
    assert sum(tr["last"] for tr in log) >= 5


def one_stream(start: int, count: int, stream: int = 0) -> dict[str, np.ndarray]:
    """`count` 1-step transitions of one stream, frame_stack 1: obs = action = 1000 s + t."""
    t = np.arange(start, start + count)
    obs = (1000 * stream + t)[:, None].astype(np.float32)
    return {
        "obs": obs,
        "next_obs": obs + 1,
        "action": 1000 * stream + t,
        "reward": np.zeros(count),
        "discount": np.full(count, GAMMA),
        "stream": np.full(count, stream, np.int64),
        "first": t == 0,
        "last": np.zeros(count, bool),
    }


def test_fifo_eviction_by_capacity() -> None:
    replay = TransitionReplay(10, (1,), np.float32)
    replay.add(one_stream(0, 12))
    replay.add(one_stream(12, 13))
    # Rows hold steps 15..24; step 24 still waits for its next observation.
    assert len(replay) == 9
    sample = replay.sample(2000, 0.0, np.random.default_rng(0))
    assert set(sample["action"].tolist()) == set(range(15, 24))
    np.testing.assert_array_equal(sample["next_obs"][:, 0], sample["action"] + 1)
    np.testing.assert_array_equal(sample["weights"], 1.0)


def test_a_stream_idle_past_the_window_resumes_cleanly() -> None:
    replay = TransitionReplay(10, (1,), np.float32)
    replay.add(one_stream(0, 3, stream=0))
    replay.add(one_stream(0, 12, stream=1))  # evicts all of stream 0
    replay.add(one_stream(3, 4, stream=0))  # its predecessor row now belongs to stream 1
    sample = replay.sample(2000, 0.0, np.random.default_rng(0))
    np.testing.assert_array_equal(sample["obs"][:, 0], sample["action"])
    np.testing.assert_array_equal(sample["next_obs"][:, 0], sample["action"] + 1)
    assert set(sample["action"].tolist()) == {1006, 1007, 1008, 1009, 1010, 3, 4, 5}


def fill_atari(replay: TransitionReplay, frames: np.ndarray, count: int) -> None:
    """`count` transitions of one stream of 84x84 frames stacked by 4, added 100 at a time."""
    for start in range(0, count, 100):
        t = np.arange(start, start + 100)
        stacks = np.maximum(t[:, None] + np.arange(-3, 1), 0)  # reset padding at t = 0
        replay.add(
            {
                "obs": frames[stacks],
                "next_obs": frames[stacks + 1],
                "action": t,
                "reward": np.zeros(100),
                "discount": np.ones(100),
                "stream": np.zeros(100, np.int64),
                "first": t == 0,
                "last": t < 0,
            }
        )


def test_memory_is_one_frame_per_transition() -> None:
    frames = np.random.default_rng(0).integers(0, 256, size=(1004, 84, 84), dtype=np.uint8)
    frame_bytes = 1000 * 84 * 84
    # Warm up first so that lazy imports inside numpy are not counted below.
    fill_atari(TransitionReplay(100, (4, 84, 84), frame_stack=4, prioritized=True), frames, 100)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        replay = TransitionReplay(1000, (4, 84, 84), np.uint8, frame_stack=4, prioritized=True)
        fill_atari(replay, frames, 1000)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(replay) == 999
    assert frame_bytes <= replay.memory_bytes() <= 1.02 * frame_bytes
    assert held <= 1.02 * frame_bytes  # storing obs and next_obs stacks would be 8x
    sample = replay.sample(32, 1.0, np.random.default_rng(1))
    t = sample["action"]
    np.testing.assert_array_equal(
        sample["obs"], frames[np.maximum(t[:, None] + [-3, -2, -1, 0], 0)]
    )


def test_stale_priority_updates_are_ignored() -> None:
    replay = TransitionReplay(10, (1,), np.float32, prioritized=True, alpha=1.0)
    replay.add(one_stream(0, 11))
    rng = np.random.default_rng(0)
    old = replay.sample(8, 1.0, rng)["indices"]
    replay.update_priorities(old, np.ones(len(old)))  # live: accepted
    replay.add(one_stream(11, 10))  # every row is overwritten
    replay.update_priorities(old, np.full(len(old), 1e6))
    counts = np.bincount(replay.sample(4000, 1.0, rng)["action"], minlength=21)[11:20]
    assert counts.max() < 3 * counts.mean()  # nothing dominates: the stale update was dropped
    # The same update on live ids does dominate, so the check above can fail.
    live = replay.sample(1, 1.0, rng)["indices"]
    replay.update_priorities(live, np.array([1e6]))
    sample = replay.sample(4000, 1.0, rng)
    assert (sample["indices"] == live[0]).mean() > 0.99


def test_actor_priorities_set_the_initial_sampling_odds() -> None:
    replay = TransitionReplay(20, (1,), np.float32, prioritized=True, alpha=1.0, eps=1e-9)
    batch = one_stream(0, 11)  # Ape-X actors send |delta| with each transition
    replay.add(batch | {"priority": np.r_[np.full(5, 1.0), np.full(6, 9.0)]})
    actions = replay.sample(4000, 1.0, np.random.default_rng(0))["action"]
    assert set(actions.tolist()) == set(range(10))  # step 10 waits for its next observation
    assert (actions >= 5).mean() == pytest.approx(45 / 50, abs=0.01)


def test_contract_violations_are_clear_errors() -> None:
    replay = TransitionReplay(10, (1,), np.float32)
    with pytest.raises(ValueError, match="first"):
        replay.add(one_stream(3, 2))  # a stream's first transition must start an episode
    with pytest.raises(ValueError, match="lacks"):
        replay.add({"obs": np.zeros((1, 1))})
    with pytest.raises(ValueError, match="no complete transition"):
        replay.sample(1, 1.0, np.random.default_rng(0))
    stacked = TransitionReplay(10, (2, 3), np.uint8, frame_stack=2, padding="zero")
    batch = {key: value for key, value in one_stream(0, 1).items() if "obs" not in key}
    ones = np.ones((1, 2, 3), np.uint8)  # padded by repeating the frame, not by zeros
    with pytest.raises(ValueError, match="padding"):
        stacked.add(batch | {"obs": ones, "next_obs": ones})
