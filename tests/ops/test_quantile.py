"""QR-DQN's quantile Huber loss and its double-Q n-step form against float64 loops written from
Dabney et al. 2018, Algorithm 1."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shoal import ops


def _reference_loss(theta: np.ndarray, target: np.ndarray, kappa: float) -> np.ndarray:
    """Σ_i (1/M) Σ_j |τ̂_i - 1{u_ij < 0}| L_κ(u_ij) / κ, u_ij = target_j - theta_i, per row."""
    batch, n = theta.shape
    out = np.zeros(batch)
    for b in range(batch):
        for i in range(n):
            tau = (2 * (i + 1) - 1) / (2 * n)
            for t in target[b]:
                u = t - theta[b, i]
                huber = 0.5 * u * u if abs(u) <= kappa else kappa * (abs(u) - 0.5 * kappa)
                out[b] += abs(tau - (u < 0)) * huber / kappa / target.shape[1]
    return out


def test_midpoints_are_the_papers():
    np.testing.assert_allclose(ops.quantile_midpoints(4).numpy(), [0.125, 0.375, 0.625, 0.875])
    with pytest.raises(ValueError, match=">= 1"):
        ops.quantile_midpoints(0)


@pytest.mark.parametrize("kappa", [1.0, 0.3, 5.0])
def test_the_loss_equals_a_float64_loop(kappa):
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(5, 7)) * 2
    target = rng.normal(size=(5, 6)) * 2
    got = ops.quantile_huber_loss(torch.tensor(theta), torch.tensor(target), kappa)
    assert got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), _reference_loss(theta, target, kappa), rtol=1e-12)


def test_exact_quantiles_of_the_target_are_the_minimum():
    # The target's own quantiles at the midpoints minimise the loss: moving any one up or down
    # raises it (Lemma 2; with a small kappa the loss is the quantile regression loss).
    target = torch.linspace(-3.0, 3.0, 401, dtype=torch.float64)[None]
    tau = ops.quantile_midpoints(4, torch.float64)
    best = torch.quantile(target[0], tau)[None]
    base = ops.quantile_huber_loss(best, target, 1e-3)
    for i in range(4):
        for step in (-0.1, 0.1):
            moved = best.clone()
            moved[0, i] += step
            assert ops.quantile_huber_loss(moved, target, 1e-3) > base


def test_the_gradient_pulls_each_quantile_towards_its_own_level():
    # One target sample above every estimate: each quantile is pushed up, by τ̂_i (1/N weights).
    theta = torch.zeros(1, 4, dtype=torch.float64, requires_grad=True)
    ops.quantile_huber_loss(
        theta, torch.full((1, 1), 10.0, dtype=torch.float64), 1.0
    ).sum().backward()
    np.testing.assert_allclose(-theta.grad.numpy()[0], ops.quantile_midpoints(4).numpy(), rtol=1e-6)


def test_double_q_form_bootstraps_from_the_selected_actions_quantiles():
    rng = np.random.default_rng(1)
    batch, actions, n = 4, 3, 5
    theta_tm1 = torch.tensor(rng.normal(size=(batch, actions, n)), requires_grad=True)
    theta_t = torch.tensor(rng.normal(size=(batch, actions, n)))
    selector = torch.tensor(rng.normal(size=(batch, actions)))
    a_tm1 = torch.tensor([0, 2, 1, 2])
    r_t = torch.tensor([1.0, -0.5, 0.0, 2.0], dtype=torch.float64)
    discount_t = torch.tensor([0.99, 0.0, 0.9801, 0.5], dtype=torch.float64)  # 0: terminated
    legal = torch.tensor(
        [[True, True, True], [True, False, True], [False, True, False], [True] * 3]
    )
    out = ops.quantile_double_q_learning(
        theta_tm1, a_tm1, r_t, discount_t, theta_t, selector, legal, kappa=1.0
    )
    masked = np.where(legal.numpy(), selector.numpy(), -np.inf)
    best = masked.argmax(1)
    want_target = (
        r_t.numpy()[:, None] + discount_t.numpy()[:, None] * theta_t.numpy()[np.arange(batch), best]
    )
    np.testing.assert_allclose(out.target.numpy(), want_target, rtol=1e-12)
    np.testing.assert_allclose(out.target.numpy()[1], [-0.5] * n)  # terminated: reward only
    taken = theta_tm1.detach().numpy()[np.arange(batch), a_tm1.numpy()]
    np.testing.assert_allclose(
        out.loss.detach().numpy(), _reference_loss(taken, want_target, 1.0), rtol=1e-12
    )
    out.loss.sum().backward()
    grad = theta_tm1.grad.numpy()
    for b in range(batch):  # only the taken action's quantiles get a gradient
        assert np.abs(grad[b, a_tm1[b]]).sum() > 0
        others = [a for a in range(actions) if a != a_tm1[b]]
        assert np.abs(grad[b, others]).sum() == 0


def test_shapes_and_kappa_are_checked():
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="kappa"):
        ops.quantile_huber_loss(x, x, float("inf"))
    with pytest.raises(ValueError, match=r"\[B, N\]"):
        ops.quantile_huber_loss(x, torch.zeros(3, 3))
    with pytest.raises(ValueError, match="a_tm1"):
        ops.quantile_double_q_learning(
            torch.zeros(2, 2, 3),
            torch.zeros(2),
            torch.zeros(2),
            torch.ones(2),
            torch.zeros(2, 2, 3),
            torch.zeros(2, 2),
        )
