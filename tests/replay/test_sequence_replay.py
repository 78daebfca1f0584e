"""Sequence replay and the accumulator that cuts actors' steps into overlapping sequences."""

from __future__ import annotations

import numpy as np
import pytest

from shoal.replay import SequenceAccumulator, SequenceReplay, sequence_fields

H = 3  # LSTM width in these tests
STATE = {"core_h": ((H,), np.float32), "core_c": ((H,), np.float32)}


def _fields(obs_shape, dtype, length):
    """R2D2's sequences: the LSTM state at the first step stored with each."""
    return sequence_fields(obs_shape, dtype, length, start_fields=STATE)


def _steps(t0, steps, width, terminated=(), truncated=(), first=()):
    """`steps` steps of `width` envs whose observation and core state encode (env, step):
    obs[t, b] = [b, t0 + t]; rewards are t0 + t; actions (t0 + t) % 5."""
    t = np.arange(t0, t0 + steps, dtype=np.float32)
    obs = np.stack(np.broadcast_arrays(np.arange(width)[None, :], t[:, None]), -1)
    obs = obs.astype(np.float32)
    core = np.repeat(obs[..., 1:], H, axis=-1) + 100 * obs[..., :1]
    flags = {}
    for name, marks in (("terminated", terminated), ("truncated", truncated), ("first", first)):
        flags[name] = np.zeros((steps, width), bool)
        for step, b in marks:
            flags[name][step - t0, b] = True
    return dict(
        obs=obs,
        action=((t0 + np.arange(steps))[:, None] % 5).repeat(width, 1).astype(np.int64),
        reward=np.broadcast_to(t[:, None], (steps, width)).astype(np.float32),
        start_fields={"core_h": core, "core_c": -core},
        **flags,
    )


def test_sequences_overlap_by_length_minus_period_and_carry_across_calls():
    length, period, width = 6, 4, 2
    acc = SequenceAccumulator(width, length, period)
    out = []
    for t0 in range(0, 21, 3):  # unrolls of 3 steps, shorter than a sequence
        first = [(0, 0), (0, 1)] if t0 == 0 else []
        out.append(acc.extend(**_steps(t0, 3, width, first=first)))
    data = {k: np.concatenate([o[k] for o in out]) for k in out[0]}
    # 21 steps: sequences start at 0, 4, 8, 12 (entries s..s+6 must have arrived), per env.
    for b in range(width):
        mine = data["obs"][:, 0, 0] == b
        starts = data["obs"][mine, 0, 1]
        assert starts.tolist() == [0, 4, 8, 12]
        seqs = data["obs"][mine, :, 1]
        assert (seqs == starts[:, None] + np.arange(length + 1)).all()  # L + 1 inputs
        np.testing.assert_array_equal(seqs[1:, : length - period + 1], seqs[:-1, period:])
        # Each carries the state of its first step, and the previous step's action / reward.
        assert (data["core_h"][mine] == starts[:, None] + 100 * b).all()
        np.testing.assert_array_equal(data["core_c"][mine], -data["core_h"][mine])
        prev = data["prev_reward"][mine]
        assert prev[0, 0] == 0 and (prev[1:, 0] == starts[1:] - 1).all()
    assert data["action"].shape == (8, length) and data["first"].shape == (8, length + 1)
    assert data["acted"].all() and not data["end"].any()


def test_episode_boundaries_inside_a_sequence_are_flagged_and_truncation_keeps_final_obs():
    acc = SequenceAccumulator(1, 8, 8)
    steps = _steps(0, 10, 1, terminated=[(2, 0)], truncated=[(5, 0)], first=[(0, 0), (3, 0)])
    steps["first"][6, 0] = True  # after the truncation, a new episode
    final_obs = np.array([[7.0, 55.0]], np.float32)  # the truncated episode's true last obs
    data = acc.extend(**steps, final_obs=final_obs, final_index=np.array([[5, 0]]))
    assert len(data["obs"]) == 1  # 11 entries (10 steps + the final observation): one of 8 + 1
    obs_t = data["obs"][0, :, 1].tolist()
    assert obs_t == [0, 1, 2, 3, 4, 5, 55, 6, 7]  # entry 6 holds the final observation
    assert data["first"][0].tolist() == [1, 0, 0, 1, 0, 0, 0, 1, 0]
    assert data["end"][0].tolist() == [0, 0, 1, 0, 0, 1, 1, 0]
    assert data["terminated"][0].tolist() == [0, 0, 1, 0, 0, 0, 0, 0]
    assert data["acted"][0].tolist() == [1, 1, 1, 1, 1, 1, 0, 1]
    # The network's inputs: previous action and reward, zero at episode starts; the final
    # observation is seen with the truncated step's action and reward.
    assert data["prev_reward"][0].tolist() == [0, 0, 1, 0, 3, 4, 5, 0, 6]
    assert data["prev_action"][0].tolist() == [0, 0, 1, 0, 3, 4, 0, 0, 1]  # a_t = t % 5
    with pytest.raises(ValueError, match="final_obs"):
        SequenceAccumulator(1, 4, 2).extend(**_steps(0, 3, 1, truncated=[(1, 0)]))


def test_a_final_observation_entry_that_starts_a_sequence_has_a_zero_state():
    acc = SequenceAccumulator(1, 3, 1)
    steps = _steps(0, 6, 1, truncated=[(1, 0)], first=[(0, 0), (2, 0)])
    data = acc.extend(**steps, final_obs=np.zeros((1, 2), np.float32), final_index=[[1, 0]])
    starts = data["acted"][:, 0]
    assert starts.tolist() == [True, True, False, True]
    assert not data["core_h"][2].any() and data["core_h"][3].any()


def test_an_episode_cut_without_an_end_drops_the_pending_steps():
    acc = SequenceAccumulator(1, 4, 2)
    first = acc.extend(**_steps(0, 3, 1, first=[(0, 0)]))
    # The actor reconnected: step 3 starts an episode although step 2 did not end one.
    later = acc.extend(**_steps(3, 7, 1, first=[(3, 0)]))
    assert len(first["obs"]) == 0
    starts = later["obs"][:, 0, 1].tolist()
    assert starts == [3, 5]  # nothing that mixes steps 0..2 with the new episode
    assert later["first"][:, 0].tolist() == [True, False]


def _sequences(count, start=0, length=4):
    fields = _fields((2,), np.float32, length)
    data = {k: np.zeros((count, *shape), dtype) for k, (shape, dtype) in fields.items()}
    data["action"] = np.arange(start, start + count)[:, None].repeat(length, 1)  # an id
    return data


def test_sampling_returns_sequences_with_ids_and_weights_and_fifo_overwrites():
    replay = SequenceReplay(4, _fields((2,), np.float32, 4), alpha=1.0)
    replay.add(_sequences(3))
    replay.add(_sequences(3, start=3))  # ids 0 and 1 are overwritten
    assert len(replay) == 4 and replay.num_added == 6
    batch = replay.sample(64, 0.5, np.random.default_rng(0))
    assert batch["obs"].shape == (64, 5, 2) and batch["core_h"].shape == (64, H)
    assert set(batch["indices"].tolist()) == {2, 3, 4, 5}
    np.testing.assert_array_equal(batch["action"][:, 0], batch["indices"])
    np.testing.assert_array_equal(batch["weights"], np.ones(64, np.float32))  # equal priorities
    # Priorities steer sampling; stale ids are ignored.
    replay.update_priorities(np.array([5, 0]), np.array([100.0, 100.0]))
    drawn = replay.sample(200, 0.5, np.random.default_rng(1))["indices"]
    assert (drawn == 5).mean() > 0.8
    assert replay.priority_total == pytest.approx(3 * 1.0 + 100.0, rel=1e-4)
    # A batch larger than the capacity keeps its newest sequences.
    replay.add(_sequences(6, start=10))
    assert set(replay.sample(64, 0.5, np.random.default_rng(2))["indices"]) == {8, 9, 10, 11}


def test_initial_priorities_memory_and_field_checks():
    replay = SequenceReplay(8, alpha=1.0)  # laid out by the first add
    assert replay.memory_bytes() < 1000
    data = _sequences(2)
    data["priority"] = np.array([1.0, 3.0])
    replay.add(data)
    per_sequence = sum(v[0].nbytes for k, v in data.items() if k != "priority")
    assert replay.memory_bytes() >= 8 * per_sequence
    assert replay.priority_total == pytest.approx(4.0, rel=1e-4)
    weights = replay.sample(32, 1.0, np.random.default_rng(0))
    # w = (P(i) / P_max)^-β over the batch (both drawn): the priority-3 sequence weighs 1/3.
    np.testing.assert_allclose(np.unique(weights["weights"]), [1 / 3, 1.0], rtol=1e-5)
    with pytest.raises(ValueError, match="fields"):
        replay.add({k: v for k, v in _sequences(1).items() if k != "acted"})
    with pytest.raises(ValueError, match="'obs'"):
        replay.add(_sequences(1, length=5))
    uniform = SequenceReplay(4, prioritized=False)
    uniform.add(_sequences(2))
    uniform.update_priorities(np.array([0]), np.array([50.0]))  # ignored without priorities
    assert uniform.priority_total == 2.0


def _stacked_sequences(padding, k=3, width=3, steps=40, seed=0):
    """Sequences of stacked random frames from envs whose episodes end at random, stacked the
    slow obvious way (a list per env), as an env's frame stack does."""
    rng = np.random.default_rng(seed)

    def frame():
        return rng.integers(1, 256, size=(2, 2)).astype(np.uint8)

    def reset():
        first = frame()
        return [first if padding == "reset" else np.zeros((2, 2), np.uint8)] * (k - 1) + [first]

    stacks = [reset() for _ in range(width)]
    acc = SequenceAccumulator(width, 6, 2)
    out, starting = [], np.ones(width, bool)
    for _ in range(steps // 4):
        obs, first, ended, cut, finals, index = [], [], [], [], [], []
        for t in range(4):
            obs.append(np.stack([np.stack(s) for s in stacks]))
            first.append(starting.copy())
            terminated = rng.random(width) < 0.1
            truncated = ~terminated & (rng.random(width) < 0.1)
            for b in range(width):
                stacks[b] = [*stacks[b][1:], frame()]
                if truncated[b]:
                    finals.append(np.stack(stacks[b]))
                    index.append((t, b))
                if terminated[b] or truncated[b]:
                    stacks[b] = reset()
            starting = terminated | truncated
            ended.append(terminated)
            cut.append(truncated)
        core = np.zeros((4, width, H), np.float32)
        out.append(
            acc.extend(
                np.stack(obs),
                np.zeros((4, width), np.int64),
                np.zeros((4, width), np.float32),
                np.stack(ended),
                np.stack(cut),
                np.stack(first),
                np.stack(finals) if finals else np.zeros((0, k, 2, 2), np.uint8),
                np.array(index).reshape(-1, 2),
                start_fields={"core_h": core, "core_c": core},
            )
        )
    return {key: np.concatenate([o[key] for o in out]) for key in out[0]}


@pytest.mark.parametrize("padding", ["reset", "zero"])
def test_stacked_frames_are_stored_once_and_rebuilt_exactly(padding):
    data = _stacked_sequences(padding)
    fields = _fields((3, 2, 2), np.uint8, 6)
    full = SequenceReplay(64, fields)
    packed = SequenceReplay(64, fields, frame_stack=3, padding=padding)
    for replay in (full, packed):
        replay.add(data)
    assert data["first"][:, 1:].any()  # episodes start inside sequences
    a = full.sample(50, 0.5, np.random.default_rng(0))
    b = packed.sample(50, 0.5, np.random.default_rng(0))
    np.testing.assert_array_equal(a["indices"], b["indices"])
    np.testing.assert_array_equal(a["obs"], b["obs"])
    assert packed.memory_bytes() < full.memory_bytes()
    other = "zero" if padding == "reset" else "reset"
    with pytest.raises(ValueError, match="padding"):
        SequenceReplay(64, fields, frame_stack=3, padding=other).add(data)
