"""Tests for shoal.ops.distributional against a float64 loop written from Algorithm 1 of
Bellemare et al. 2017 ("A Distributional Perspective on RL"), with the fix for a target that
lands exactly on an atom, and the categorical double-Q loss of Rainbow (Hessel et al. 2018)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from shoal.ops import categorical_double_q_learning, categorical_projection

# Δz = 0.5, exact in binary, so that a target can land exactly on an atom.
V_MIN, V_MAX, N = -10.0, 10.0, 41
ATOMS = torch.linspace(V_MIN, V_MAX, N, dtype=torch.float64)


def algorithm_1(r, discount, p, v_min=V_MIN, v_max=V_MAX, n=N, fix_exact_atoms=True):
    """Bellemare et al. 2017, Algorithm 1, one transition at a time, in float64.

    m_i = 0; for each j: T̂z_j <- [r + γ z_j] clipped to [V_min, V_max]; b_j <- (T̂z_j - V_min)/Δz;
    l <- ⌊b_j⌋, u <- ⌈b_j⌉; m_l += p_j (u - b_j); m_u += p_j (b_j - l). With `fix_exact_atoms`,
    a b_j that is an integer (l = u) gives all of p_j to m_l, which the paper's lines lose.
    """
    delta = (v_max - v_min) / (n - 1)
    z = [v_min + i * delta for i in range(n)]
    out = np.zeros((len(r), n))
    for b_index in range(len(r)):
        m = [0.0] * n
        for j in range(n):
            tz = min(max(float(r[b_index]) + float(discount[b_index]) * z[j], v_min), v_max)
            b = (tz - v_min) / delta
            lower, upper = math.floor(b), math.ceil(b)
            pj = float(p[b_index][j])
            if lower == upper and fix_exact_atoms:
                m[lower] += pj
            else:
                m[lower] += pj * (upper - b)
                m[upper] += pj * (b - lower)
        out[b_index] = m
    return out


def random_distributions(batch, n, seed):
    g = torch.Generator().manual_seed(seed)
    logits = 2 * torch.randn(batch, n, generator=g, dtype=torch.float64)
    return torch.softmax(logits, -1)


def edge_case_batch():
    """Rewards and discounts that cross every branch of Algorithm 1.

    - r = ±15 and ±12 with discount 0.99: much of r + γz lies outside [-10, 10] (clipped);
    - discount 0 (terminated): the whole target is the point r (on an atom, between two, or
      past an end);
    - r = 0.5 = Δz with discount 1: T̂z_j = z_{j+1}, every b_j an integer (l = u), the case
      the paper's lines drop; r = 0.25, discount 1: every target halfway between two atoms;
    - n-step discounts γ^3 and γ^5, and a truncated transition (discount γ, not 0).
    """
    gamma = 0.99
    r = [15.0, -15.0, 1.5, 0.3, 12.0, -12.0, 0.5, 0.25, 1.3, -2.7, 0.6, 0.0]
    discount = [gamma, gamma, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, gamma**3, gamma**5, gamma, 1.0]
    return torch.tensor(r, dtype=torch.float64), torch.tensor(discount, dtype=torch.float64)


def test_projection_matches_algorithm_1_on_every_edge_case():
    r, discount = edge_case_batch()
    p = random_distributions(len(r), N, 0)
    got = categorical_projection(ATOMS, r, discount, p)
    expected = algorithm_1(r.numpy(), discount.numpy(), p.numpy())
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)
    # No mass is lost or created, whatever was clipped or landed on an atom.
    np.testing.assert_allclose(got.sum(-1).numpy(), 1.0, rtol=1e-12)


def test_projection_matches_algorithm_1_on_random_batches_and_supports():
    g = torch.Generator().manual_seed(1)
    for v_min, v_max, n in ((-10.0, 10.0, 51), (0.0, 100.0, 11), (-1.0, 3.0, 2)):
        atoms = torch.linspace(v_min, v_max, n, dtype=torch.float64)
        r = (v_max - v_min) * torch.randn(64, generator=g, dtype=torch.float64)
        steps = torch.randint(1, 6, (64,), generator=g)
        terminated = torch.rand(64, generator=g) < 0.25
        discount = (0.97**steps) * (~terminated)
        p = random_distributions(64, n, 2)
        got = categorical_projection(atoms, r, discount.to(torch.float64), p)
        expected = algorithm_1(r.numpy(), discount.numpy(), p.numpy(), v_min, v_max, n)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)


def test_target_exactly_on_an_atom_keeps_its_mass_where_the_papers_lines_drop_it():
    # r = Δz = 0.5, discount 1: T̂z_j = z_{j+1}, every b_j an integer, l = u.
    r, discount = torch.tensor([0.5], dtype=torch.float64), torch.ones(1, dtype=torch.float64)
    p = random_distributions(1, N, 3)
    naive = algorithm_1(r.numpy(), discount.numpy(), p.numpy(), fix_exact_atoms=False)
    assert naive.sum() < 0.5  # the classic bug: almost all of the mass vanishes
    got = categorical_projection(ATOMS, r, discount, p)
    assert float(got.sum()) == pytest.approx(1.0, abs=1e-12)
    # The distribution moves one atom up; the top atom gathers what was clipped at V_max.
    np.testing.assert_allclose(got[0, 1:-1].numpy(), p[0, :-2].numpy(), rtol=1e-10)
    assert float(got[0, -1]) == pytest.approx(float(p[0, -2] + p[0, -1]), abs=1e-12)
    assert float(got[0, 0]) == pytest.approx(0.0, abs=1e-12)


def test_hand_derived_cases():
    atoms = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    p = torch.tensor([[0.5, 0.25, 0.25]] * 3, dtype=torch.float64)
    r = torch.tensor([0.25, 5.0, 0.5], dtype=torch.float64)
    discount = torch.tensor([1.0, 0.9, 0.0], dtype=torch.float64)
    got = categorical_projection(atoms, r, discount, p)
    # r + z = (0.25, 1.25, 2.25 -> 2): 0.5 splits 0.75/0.25 over atoms 0 and 1, 0.25 splits
    # 0.75/0.25 over atoms 1 and 2, and the clipped 0.25 goes to atom 2.
    torch.testing.assert_close(got[0], torch.tensor([0.375, 0.3125, 0.3125], dtype=torch.float64))
    # Every target past V_max: all mass on the top atom.
    torch.testing.assert_close(got[1], torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64))
    # Terminal: a point mass at r = 0.5, halfway between atoms 0 and 1.
    torch.testing.assert_close(got[2], torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64))


def test_identity_shift_leaves_the_distribution_as_it_is():
    p = random_distributions(8, N, 4)
    zeros, ones = torch.zeros(8, dtype=torch.float64), torch.ones(8, dtype=torch.float64)
    torch.testing.assert_close(categorical_projection(ATOMS, zeros, ones, p), p)


def reference_loss(logits_tm1, a_tm1, r, discount, logits_t, selector):
    """-Σ_i m_i log p_i(s, a) and Σ_i m_i log(m_i / p_i(s, a)), one transition at a time."""
    ce, kl = [], []
    for b in range(len(r)):
        best = int(np.argmax(selector[b]))
        p_t = np.exp(logits_t[b, best]) / np.exp(logits_t[b, best]).sum()
        m = algorithm_1(r[b : b + 1], discount[b : b + 1], p_t[None])[0]
        row = logits_tm1[b, a_tm1[b]]
        log_p = row - np.log(np.exp(row).sum())
        ce.append(-sum(m[i] * log_p[i] for i in range(N)))
        kl.append(sum(m[i] * (np.log(m[i]) - log_p[i]) for i in range(N) if m[i] > 0))
    return np.array(ce), np.array(kl)


def loss_inputs(batch=32, actions=3, seed=5):
    g = torch.Generator().manual_seed(seed)
    logits_tm1 = torch.randn(batch, actions, N, generator=g, dtype=torch.float64)
    logits_t = 3 * torch.randn(batch, actions, N, generator=g, dtype=torch.float64)
    selector = torch.randn(batch, actions, generator=g, dtype=torch.float64)
    a_tm1 = torch.randint(0, actions, (batch,), generator=g)
    r = 8 * torch.randn(batch, generator=g, dtype=torch.float64)
    steps = torch.randint(1, 4, (batch,), generator=g)
    discount = (0.99**steps * (torch.rand(batch, generator=g) > 0.2)).to(torch.float64)
    r[:2] = torch.tensor([0.5, 0.0], dtype=torch.float64)  # on an atom, twice
    discount[:2] = torch.tensor([1.0, 0.0], dtype=torch.float64)
    return logits_tm1, a_tm1, r, discount, logits_t, selector


def test_loss_matches_the_reference_and_kl_is_cross_entropy_less_the_targets_entropy():
    logits_tm1, a_tm1, r, discount, logits_t, selector = loss_inputs()
    out = categorical_double_q_learning(ATOMS, logits_tm1, a_tm1, r, discount, logits_t, selector)
    ce, kl = reference_loss(
        *(x.numpy() for x in (logits_tm1, a_tm1, r, discount, logits_t, selector))
    )
    np.testing.assert_allclose(out.cross_entropy.detach().numpy(), ce, rtol=1e-10)
    np.testing.assert_allclose(out.kl.detach().numpy(), kl, rtol=1e-9, atol=1e-12)
    assert bool((out.kl >= -1e-12).all()) and out.target.requires_grad is False


def test_double_q_bootstraps_the_target_distribution_at_the_selectors_argmax():
    logits_tm1, a_tm1, r, discount, logits_t, _ = loss_inputs(batch=4, actions=2)
    prefer_0 = torch.tensor([[1.0, 0.0]] * 4, dtype=torch.float64)
    prefer_1 = torch.tensor([[0.0, 1.0]] * 4, dtype=torch.float64)
    for selector, action in ((prefer_0, 0), (prefer_1, 1)):
        out = categorical_double_q_learning(
            ATOMS, logits_tm1, a_tm1, r, discount, logits_t, selector
        )
        p_t = torch.softmax(logits_t[:, action], -1)
        torch.testing.assert_close(out.target, categorical_projection(ATOMS, r, discount, p_t))


def test_gradients_reach_the_online_logits_of_the_taken_action_only():
    logits_tm1, a_tm1, r, discount, logits_t, selector = loss_inputs(batch=6)
    logits_tm1.requires_grad_(True)
    logits_t.requires_grad_(True)
    out = categorical_double_q_learning(ATOMS, logits_tm1, a_tm1, r, discount, logits_t, selector)
    out.cross_entropy.sum().backward()
    assert logits_t.grad is None
    grad = logits_tm1.grad
    for b in range(6):
        for a in range(3):
            assert bool((grad[b, a] != 0).any()) == (a == int(a_tm1[b]))
    # d CE / d logits = softmax(logits) - m at the taken action.
    taken = torch.softmax(logits_tm1[torch.arange(6), a_tm1], -1) - out.target
    torch.testing.assert_close(grad[torch.arange(6), a_tm1], taken.detach())


def test_a_perfect_prediction_has_zero_kl():
    atoms = torch.linspace(-1.0, 1.0, 5, dtype=torch.float64)
    target_logits = torch.zeros(1, 1, 5, dtype=torch.float64)
    r, discount = torch.zeros(1, dtype=torch.float64), torch.ones(1, dtype=torch.float64)
    out = categorical_double_q_learning(
        atoms,
        target_logits,
        torch.zeros(1, dtype=torch.long),
        r,
        discount,
        target_logits,
        torch.zeros(1, 1, dtype=torch.float64),
    )
    assert float(out.kl) == pytest.approx(0.0, abs=1e-12)
    assert float(out.cross_entropy) == pytest.approx(math.log(5))


def test_bad_shapes_and_supports_are_refused():
    p = random_distributions(4, N, 6)
    r, d = torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64)
    with pytest.raises(ValueError, match="evenly spaced"):
        categorical_projection(torch.tensor([0.0, 1.0, 3.0], dtype=torch.float64), r, d, p[:, :3])
    with pytest.raises(ValueError, match="evenly spaced"):
        categorical_projection(ATOMS.flip(0), r, d, p)
    with pytest.raises(ValueError, match="p_t must be"):
        categorical_projection(ATOMS, r, d, p[:, :10])
    with pytest.raises(ValueError, match="discount_t"):
        categorical_projection(ATOMS, r, d[:3], p)
    with pytest.raises(ValueError, match=r"r_t must be a batch \[B\]"):
        categorical_projection(ATOMS, r[None], d[None], p)
    logits = torch.zeros(4, 2, N, dtype=torch.float64)
    actions = torch.zeros(4, dtype=torch.long)
    with pytest.raises(ValueError, match="q_t_selector"):
        categorical_double_q_learning(ATOMS, logits, actions, r, d, logits, torch.zeros(4, 3))
    with pytest.raises(ValueError, match="a_tm1"):
        categorical_double_q_learning(
            ATOMS, logits, actions.double(), r, d, logits, torch.zeros(4, 2)
        )
    with pytest.raises(ValueError, match="logits_tm1"):
        categorical_double_q_learning(
            ATOMS, logits[:, :, :5], actions, r, d, logits, logits[..., 0]
        )
