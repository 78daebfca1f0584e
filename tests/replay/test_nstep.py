"""NStepAccumulator against a brute-force reference over random streams of episodes."""

from __future__ import annotations

import numpy as np
import pytest

from shoal.replay import NStepAccumulator

GAMMA = 0.9


def random_streams(num_envs: int, steps: int, seed: int) -> dict[str, np.ndarray]:
    """Per-step env data `[T, E]` with terminations and truncations (sometimes both at once).

    Observation `[e, t, 0]` is env e's observation before step t; the final observation of an
    episode ending at step t is `[e, t, 1]`, distinct from the reset observation `[e, t + 1, 0]`.
    """
    rng = np.random.default_rng(seed)
    terminated = rng.random((steps, num_envs)) < 0.06
    truncated = rng.random((steps, num_envs)) < 0.06
    return {
        "reward": rng.normal(size=(steps, num_envs)),
        "action": rng.integers(0, 5, size=(steps, num_envs)),
        "terminated": terminated,
        "truncated": truncated,
    }


def obs_at(e: int, t: int, final: bool = False) -> np.ndarray:
    return np.array([e, t, int(final)], np.float64)


def reference(data: dict[str, np.ndarray], n: int) -> list[dict]:
    """Every transition an n-step accumulator must emit, one env and one step at a time.

    Step t of an episode [t0, end] yields m = min(n, end + 1 - t) rewards; it is emitted only once
    m = n steps have been seen or the episode ended. discount = 0 if the episode terminated within
    the m steps, else gamma^m; next_obs is obs_{t+m}, or the final observation at an episode end.
    """
    steps, num_envs = data["reward"].shape
    ended = data["terminated"] | data["truncated"]
    out = []
    for e in range(num_envs):
        start = 0
        for t in range(steps):
            if t > 0 and ended[t - 1, e]:
                start = t
            end = next((u for u in range(t, steps) if ended[u, e]), None)
            if end is None and t + n > steps:
                continue  # neither n steps nor an episode end seen yet: still pending
            m = n if end is None else min(n, end + 1 - t)
            reward = sum(GAMMA**k * data["reward"][t + k, e] for k in range(m))
            hits_end = end is not None and t + m - 1 == end
            terminal = hits_end and data["terminated"][end, e]
            out.append(
                {
                    "obs": obs_at(e, t),
                    "action": data["action"][t, e],
                    "reward": reward,
                    "discount": 0.0 if terminal else GAMMA**m,
                    "next_obs": obs_at(e, t + m - 1, final=True) if hits_end else obs_at(e, t + m),
                    "steps": m,
                    "first": t == start,
                    "last": end == t,
                    "stream": 10 + e,
                }
            )
    return out


def run_accumulator(data: dict[str, np.ndarray], n: int, final_as_array: bool) -> list[dict]:
    steps, num_envs = data["reward"].shape
    acc = NStepAccumulator(num_envs, n, GAMMA, stream_ids=np.arange(num_envs) + 10)
    emitted = []
    for t in range(steps):
        obs = np.stack([obs_at(e, t) for e in range(num_envs)])
        ended = data["terminated"][t] | data["truncated"][t]
        finals = {int(e): obs_at(int(e), t, final=True) for e in np.flatnonzero(ended)}
        final_obs: dict | np.ndarray = finals
        if final_as_array:
            final_obs = np.stack([finals.get(e, np.full(3, -1.0)) for e in range(num_envs)])
        batch = acc.step(
            obs,
            data["action"][t],
            data["reward"][t],
            data["terminated"][t],
            data["truncated"][t],
            np.stack([obs_at(e, t + 1) for e in range(num_envs)]),
            final_obs,
        )
        sizes = {len(v) for v in batch.values()}
        assert len(sizes) == 1
        emitted += [{k: v[i] for k, v in batch.items()} for i in range(sizes.pop())]
    return emitted


@pytest.mark.parametrize("n", [1, 3, 5])
@pytest.mark.parametrize("final_as_array", [False, True])
def test_matches_brute_force_reference(n: int, final_as_array: bool) -> None:
    data = random_streams(num_envs=4, steps=150, seed=n)
    assert (data["terminated"] & data["truncated"]).any()
    got = run_accumulator(data, n, final_as_array)
    want = reference(data, n)
    assert len(got) == len(want)

    def key(tr: dict) -> tuple[int, int]:
        return int(tr["stream"]), int(tr["obs"][1])

    got_by_key = {key(tr): tr for tr in got}
    assert len(got_by_key) == len(got)  # no transition emitted twice
    for ref in want:
        tr = got_by_key[key(ref)]
        np.testing.assert_array_equal(tr["obs"], ref["obs"])
        np.testing.assert_array_equal(tr["next_obs"], ref["next_obs"])
        assert tr["action"] == ref["action"]
        assert tr["reward"] == pytest.approx(ref["reward"], rel=1e-6, abs=1e-6)
        assert tr["discount"] == pytest.approx(ref["discount"], rel=1e-6)
        assert (tr["steps"], tr["first"], tr["last"]) == (ref["steps"], ref["first"], ref["last"])

    # The replay's contract: per stream, transitions come out in step order.
    for e in range(4):
        times = [int(tr["obs"][1]) for tr in got if tr["stream"] == 10 + e]
        assert times == sorted(times)


def test_dtypes_and_field_names_fit_the_replay() -> None:
    acc = NStepAccumulator(2, 1, GAMMA)
    obs = np.zeros((2, 4, 84, 84), np.uint8)
    batch = acc.step(obs, np.array([1, 2]), np.ones(2), [False] * 2, [False] * 2, obs)
    assert set(batch) == {
        "obs", "action", "reward", "discount", "next_obs", "steps", "first", "last", "stream"
    }  # fmt: skip
    assert batch["obs"].dtype == np.uint8 and batch["obs"].shape == (2, 4, 84, 84)
    assert batch["reward"].dtype == np.float32 and batch["discount"].dtype == np.float32
    assert batch["first"].all() and not batch["last"].any()


def test_missing_final_observation_is_an_error() -> None:
    acc = NStepAccumulator(2, 3, GAMMA)
    obs = np.zeros((2, 3))
    with pytest.raises(ValueError, match="final_obs"):
        acc.step(obs, np.zeros(2), np.zeros(2), [True, False], [False, False], obs)
