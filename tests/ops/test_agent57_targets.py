"""Agent57's combined Q-values and transformed greedy Retrace targets against float64 references
written from the papers (Agent57, Badia et al. 2020, section 4.1 and appendix; Retrace, Munos
et al. 2016, eq. 3; the rescaling h of Pohlen et al. 2018)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from shoal.ops import combine_q_values, transformed_greedy_retrace

EPS = 1e-3


def h(x: float) -> float:
    return math.copysign(math.sqrt(abs(x) + 1.0) - 1.0, x) + EPS * x


def h_inv(y: float) -> float:
    root = (math.sqrt(1.0 + 4.0 * EPS * (abs(y) + 1.0 + EPS)) - 1.0) / (2.0 * EPS)
    return math.copysign(root**2 - 1.0, y)


def test_combined_q_values_mix_the_heads_in_value_space():
    rng = np.random.default_rng(0)
    q_e, q_i = rng.normal(size=(4, 3)) * 5, rng.normal(size=(4, 3)) * 5
    beta = np.array([0.0, 0.1, 0.3, 1.0])
    got = combine_q_values(torch.tensor(q_e), torch.tensor(q_i), torch.tensor(beta), EPS)
    expected = [
        [h(h_inv(q_e[b, a]) + beta[b] * h_inv(q_i[b, a])) for a in range(3)] for b in range(4)
    ]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-10)
    # beta 0 is the extrinsic head alone, whatever the intrinsic one says.
    np.testing.assert_allclose(got[0].numpy(), q_e[0], atol=1e-9)


def _reference(q_target, actions, greedy, rewards, discounts, lam, ended):
    """Retrace as a sum (Munos et al. 2016, eq. 3) in the unscaled space, then rescaled:
    Q_ret(x_t, a_t) = Q(x_t, a_t) + Σ_{s>=t} (Π_{k=t}^{s-1} γ_k)(Π_{i=t+1}^{s} c_i) δ_s, with
    δ_s = r_s + γ_s Q(x_{s+1}, π(x_{s+1})) - Q(x_s, a_s), π greedy, c_i = λ 1[a_i = π(x_i)]."""
    t_len, width = rewards.shape
    q = np.vectorize(h_inv)(q_target)
    out = np.zeros((t_len, width))
    for b in range(width):
        for t in range(t_len):
            total, scale = q[t, b, actions[t, b]], 1.0
            for s in range(t, t_len):
                if s > t:
                    trace = lam * float(actions[s, b] == greedy[s, b])
                    scale *= discounts[s - 1, b] * trace
                bootstrap = q[s + 1, b, greedy[s + 1, b]]
                total += scale * (
                    rewards[s, b] + discounts[s, b] * bootstrap - q[s, b, actions[s, b]]
                )
                if ended[s, b]:
                    break
            out[t, b] = h(total)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_retrace_equals_the_paper_sum_with_the_combined_policy(seed):
    t, b, a = 12, 5, 4
    rng = np.random.default_rng(seed)
    q_e = rng.normal(size=(t + 1, b, a)) * 4
    q_i = rng.normal(size=(t + 1, b, a)) * 4
    beta = rng.choice([0.0, 0.3], size=(t + 1, b))
    greedy = combine_q_values(torch.tensor(q_e), torch.tensor(q_i), torch.tensor(beta))
    greedy = greedy.argmax(-1).numpy()
    # About half the actions are the greedy ones, so traces are both cut and carried.
    actions = np.where(rng.random((t, b)) < 0.5, greedy[:-1], rng.integers(0, a, (t, b)))
    rewards = rng.normal(size=(t, b)) * 3
    terminated = rng.random((t, b)) < 0.1
    ended = terminated | (rng.random((t, b)) < 0.1)
    gammas = rng.choice([0.9999, 0.997, 0.99], size=(t, b))
    discounts = gammas * ~terminated
    lam = 0.95
    expected = _reference(q_e, actions, greedy, rewards, discounts, lam, ended)
    got = transformed_greedy_retrace(
        torch.tensor(q_e),
        torch.tensor(actions),
        torch.tensor(greedy),
        torch.tensor(rewards),
        torch.tensor(discounts),
        lam,
        torch.tensor(ended),
        EPS,
    )
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-9, atol=1e-9)


def test_the_bootstrap_follows_the_given_policy_not_the_heads_own_argmax():
    # One step: the extrinsic head's own argmax at x_1 is action 0, the combined policy's is 1.
    q_e = torch.tensor([[[0.0, 0.0]], [[5.0, 1.0]]], dtype=torch.float64)
    q_i = torch.tensor([[[0.0, 0.0]], [[0.0, 50.0]]], dtype=torch.float64)
    combined = combine_q_values(q_e, q_i, torch.full((2, 1), 0.3, dtype=torch.float64))
    greedy = combined.argmax(-1)
    assert greedy[1, 0] == 1 and q_e[1, 0].argmax() == 0
    got = transformed_greedy_retrace(
        q_e,
        torch.zeros(1, 1, dtype=torch.long),
        greedy,
        torch.ones(1, 1, dtype=torch.float64),
        torch.full((1, 1), 0.99, dtype=torch.float64),
        0.95,
    )
    assert got.item() == pytest.approx(h(1.0 + 0.99 * h_inv(1.0)), abs=1e-12)


def test_greedy_retrace_rejects_q_values_without_the_bootstrap_entry():
    with pytest.raises(ValueError, match=r"T \+ 1"):
        transformed_greedy_retrace(
            torch.zeros(3, 2, 4),
            torch.zeros(3, 2, dtype=torch.long),
            torch.zeros(4, 2, dtype=torch.long),
            torch.zeros(3, 2),
            torch.zeros(3, 2),
            0.95,
        )
