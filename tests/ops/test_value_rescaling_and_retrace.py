"""Value rescaling, R2D2's transformed targets and Retrace against float64 references written from
the papers' definitions, including episode ends inside a sequence."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from shoal.ops import (
    retrace,
    signed_hyperbolic,
    signed_parabolic,
    transformed_n_step_double_q_targets,
)

GAMMA = 0.95
EPS = 1e-3


def test_rescaling_round_trips_and_fixes_zero():
    x = torch.linspace(-1000, 1000, 200_001, dtype=torch.float64)
    assert torch.allclose(signed_parabolic(signed_hyperbolic(x)), x, atol=1e-4, rtol=0)
    assert torch.allclose(signed_hyperbolic(signed_parabolic(x)), x, atol=1e-4, rtol=0)
    assert signed_hyperbolic(torch.zeros(1)).item() == 0.0
    # float32, as networks use it: the inverse's sqrt cancels near 0 and amplifies at 1000.
    x32 = x.float()
    assert torch.allclose(signed_parabolic(signed_hyperbolic(x32)), x32, atol=1e-3, rtol=1e-5)


def test_rescaling_matches_its_formula_and_squashes():
    for value in (-250.0, -1.0, 0.5, 3.0, 1e4):
        h = math.copysign(math.sqrt(abs(value) + 1) - 1, value) + EPS * value
        assert signed_hyperbolic(torch.tensor([value], dtype=torch.float64)).item() == (
            pytest.approx(h, rel=1e-12)
        )
    assert signed_hyperbolic(torch.tensor([1e4])).item() < 120  # about sqrt(x) + eps x


def _episodes(t: int, b: int, seed: int):
    rng = np.random.default_rng(seed)
    terminated = rng.random((t, b)) < 0.1
    truncated = (rng.random((t, b)) < 0.1) & ~terminated
    rewards = rng.normal(size=(t, b)) * 5
    return rewards, terminated, truncated


def test_transformed_targets_equal_the_definition_across_episode_ends():
    t, b, a, n = 12, 4, 3, 5
    rewards, terminated, truncated = _episodes(t, b, 0)
    rng = np.random.default_rng(1)
    q_target = rng.normal(size=(t, b, a)) * 3
    q_online = rng.normal(size=(t, b, a))
    discount = GAMMA * ~terminated
    ended = terminated | truncated
    expected = np.zeros((t, b))
    for col in range(b):
        for start in range(t):
            # Sum rewards until n steps, an episode end, or the sequence's end; bootstrap there.
            total, scale, step = 0.0, 1.0, start
            while True:
                total += scale * rewards[step, col]
                scale *= discount[step, col]
                if step - start + 1 == n or ended[step, col] or step == t - 1:
                    break
                step += 1
            best = int(np.argmax(q_online[step, col]))
            q = q_target[step, col, best]
            h_inv = np.sign(q) * (
                ((np.sqrt(1 + 4 * EPS * (abs(q) + 1 + EPS)) - 1) / (2 * EPS)) ** 2 - 1
            )
            g = total + scale * h_inv
            expected[start, col] = np.sign(g) * (np.sqrt(abs(g) + 1) - 1) + EPS * g

    def tensor(x):
        return torch.tensor(x, dtype=torch.float64)

    got = transformed_n_step_double_q_targets(
        tensor(rewards),
        tensor(discount),
        tensor(q_target),
        tensor(q_online),
        n,
        torch.tensor(ended),
    )
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-9, atol=1e-9)


def _retrace_reference(q_tm1, v_t, r_t, discount_t, c_t, ended):
    """Munos et al. 2016, eq. (3) as a sum, with the sum stopped at the first episode end."""
    t_len, b = r_t.shape
    out = np.zeros((t_len, b))
    for col in range(b):
        for t in range(t_len):
            total, scale = q_tm1[t, col], 1.0
            for s in range(t, t_len):
                if s > t:
                    scale *= discount_t[s - 1, col] * c_t[s, col]
                delta = r_t[s, col] + discount_t[s, col] * v_t[s, col] - q_tm1[s, col]
                total += scale * delta
                if ended[s, col]:
                    break
            out[t, col] = total
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_retrace_equals_the_paper_sum_across_episode_ends(seed):
    t, b = 15, 5
    rewards, terminated, truncated = _episodes(t, b, seed)
    rng = np.random.default_rng(seed + 10)
    q_tm1, v_t = rng.normal(size=(t, b)), rng.normal(size=(t, b))
    ratios = np.exp(rng.normal(size=(t, b)))  # both sides of 1, so min(1, ·) matters
    c_t = 0.9 * np.minimum(1.0, ratios)
    discount = GAMMA * ~terminated
    ended = terminated | truncated
    expected = _retrace_reference(q_tm1, v_t, rewards, discount, c_t, ended)
    args = [torch.tensor(x, dtype=torch.float64) for x in (q_tm1, v_t, rewards, discount, c_t)]
    got = retrace(*args, torch.tensor(ended))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-9, atol=1e-9)


def test_retrace_with_zero_traces_is_the_one_step_expected_sarsa_target():
    rewards, terminated, _ = _episodes(6, 3, 4)
    q_tm1, v_t = torch.randn(6, 3, dtype=torch.float64), torch.randn(6, 3, dtype=torch.float64)
    r = torch.tensor(rewards)
    discount = torch.tensor(GAMMA * ~terminated)
    got = retrace(q_tm1, v_t, r, discount, torch.zeros(6, 3, dtype=torch.float64))
    torch.testing.assert_close(got, r + discount * v_t)


def test_retrace_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="c_t"):
        retrace(*[torch.zeros(4, 2)] * 4, torch.zeros(4, 3))
