"""Tests for shoal.ops.trust_region (Schulman et al. 2015, Appendix C), against float64
references in the paper's notation: the exact solve `(A + λI)⁻¹ g` and a conjugate-gradient loop
(Nocedal & Wright, Algorithm 5.2), the explicit Hessian of the mean KL `D̄_KL(θold, θ)` of a tiny
categorical and a tiny Gaussian policy (and the Fisher matrix it equals at `θ = θold`), and the
backtracking loop `θ = θold + shrink^k β s` with `β = sqrt(2δ / sᵀAs)`."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from shoal.ops import (
    backtracking_line_search,
    categorical_kl,
    conjugate_gradient,
    fisher_vector_product,
    gaussian_kl,
)

# ---- conjugate gradient -----------------------------------------------------------------------


def _spd(n: int, seed: int, condition: float = 100.0) -> np.ndarray:
    """A random symmetric positive-definite matrix with eigenvalues spread over `condition`."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return q @ np.diag(np.geomspace(1.0, condition, n)) @ q.T


def _reference_cg(a: np.ndarray, g: np.ndarray, iters: int) -> np.ndarray:
    """Nocedal & Wright Algorithm 5.2 on `A x = g` from x₀ = 0, `iters` steps, float64."""
    x = np.zeros_like(g)
    r = a @ x - g  # the book's residual: r = A x - b
    p = -r
    for _ in range(iters):
        alpha = (r @ r) / (p @ a @ p)
        x = x + alpha * p
        r_next = r + alpha * a @ p
        beta = (r_next @ r_next) / (r @ r)
        p = -r_next + beta * p
        r = r_next
    return x


def _matvec(a: np.ndarray, calls: list | None = None):
    matrix = torch.from_numpy(a)

    def product(v: torch.Tensor) -> torch.Tensor:
        if calls is not None:
            calls.append(1)
        return matrix @ v

    return product


@pytest.mark.parametrize("damping", [0.0, 0.1, 3.0])
def test_conjugate_gradient_is_the_exact_solve_after_n_steps(damping):
    n = 6
    a = _spd(n, seed=0)
    g = np.random.default_rng(1).normal(size=n)
    result = conjugate_gradient(
        _matvec(a), torch.from_numpy(g), max_iters=n, residual_tol=0.0, damping=damping
    )
    exact = np.linalg.solve(a + damping * np.eye(n), g)
    np.testing.assert_allclose(result.x.numpy(), exact, rtol=1e-7, atol=1e-9)
    assert result.iterations == n
    residual = g - (a + damping * np.eye(n)) @ result.x.numpy()
    assert result.residual_norm == pytest.approx(np.linalg.norm(residual), abs=1e-8)


@pytest.mark.parametrize("iters", [1, 2, 3, 5])
def test_truncated_conjugate_gradient_follows_the_reference_iterates(iters):
    n, damping = 8, 0.5
    a = _spd(n, seed=2, condition=1e4)
    g = np.random.default_rng(3).normal(size=n)
    result = conjugate_gradient(_matvec(a), torch.from_numpy(g), iters, 0.0, damping)
    expected = _reference_cg(a + damping * np.eye(n), g, iters)
    np.testing.assert_allclose(result.x.numpy(), expected, rtol=1e-9, atol=1e-12)
    assert result.iterations == iters
    # Not converged yet: still far from the exact solve (the test's inputs must show it).
    exact = np.linalg.solve(a + damping * np.eye(n), g)
    assert np.linalg.norm(result.x.numpy() - exact) > 1e-3


def test_conjugate_gradient_stops_on_the_residual_tolerance_before_max_iters():
    # Two distinct eigenvalues: CG solves exactly in two steps, and the tolerance stops it there.
    n = 6
    q, _ = np.linalg.qr(np.random.default_rng(4).normal(size=(n, n)))
    a = q @ np.diag([1.0, 1.0, 1.0, 5.0, 5.0, 5.0]) @ q.T
    g = np.random.default_rng(5).normal(size=n)
    calls: list = []
    result = conjugate_gradient(_matvec(a, calls), torch.from_numpy(g), 10, residual_tol=1e-20)
    assert result.iterations == 2 and len(calls) == 2
    assert result.residual_norm**2 <= 1e-20
    np.testing.assert_allclose(result.x.numpy(), np.linalg.solve(a, g), rtol=1e-10)
    # A looser tolerance stops even earlier, after one step, with the reference's iterate.
    r1 = g - a @ _reference_cg(a, g, 1)
    loose = conjugate_gradient(_matvec(a), torch.from_numpy(g), 10, residual_tol=r1 @ r1 * 1.01)
    assert loose.iterations == 1
    np.testing.assert_allclose(loose.x.numpy(), _reference_cg(a, g, 1), rtol=1e-12)


def test_conjugate_gradient_of_a_zero_gradient_takes_no_product():
    calls: list = []
    result = conjugate_gradient(_matvec(np.eye(3), calls), torch.zeros(3, dtype=torch.float64))
    assert result.iterations == 0 and not calls and torch.equal(result.x, torch.zeros(3).double())


def test_conjugate_gradient_checks_its_arguments():
    ok = _matvec(np.eye(3))
    with pytest.raises(ValueError, match="flat vector"):
        conjugate_gradient(ok, torch.zeros(3, 1))
    with pytest.raises(ValueError, match="max_iters"):
        conjugate_gradient(ok, torch.ones(3), max_iters=0)
    with pytest.raises(ValueError, match="damping"):
        conjugate_gradient(ok, torch.ones(3), damping=-1.0)
    with pytest.raises(ValueError, match="matvec returned"):
        conjugate_gradient(lambda v: v[:2], torch.ones(3, dtype=torch.float64))


# ---- Fisher-vector products -------------------------------------------------------------------

S = torch.from_numpy(np.random.default_rng(6).normal(size=(5, 3)))  # 5 states, 3 features


def _categorical_kl_reference(w_old, b_old, w, b):
    """D̄_KL(θold, θ) = mean_s Σ_a π_old(a|s) log(π_old(a|s) / π_θ(a|s)), softmax(W s + b)."""
    total = 0.0
    for s in S:
        p_old = torch.softmax(w_old @ s + b_old, 0)
        p_new = torch.softmax(w @ s + b, 0)
        total = total + (p_old * (p_old.log() - p_new.log())).sum()
    return total / len(S)


def _gaussian_kl_reference(w_old, ls_old, w, ls):
    """D̄_KL(θold, θ) for N(W s, diag σ²), σ = exp(log_std), summed over dimensions."""
    total = 0.0
    for s in S:
        mu_old, mu = w_old @ s, w @ s
        for d in range(len(mu)):
            so, sn = ls_old[d].exp(), ls[d].exp()
            total = total + torch.log(sn / so) + (so**2 + (mu_old[d] - mu[d]) ** 2) / (2 * sn**2)
            total = total - 0.5
    return total / len(S)


def _unflatten(theta, shapes):
    out, i = [], 0
    for shape in shapes:
        n = math.prod(shape)
        out.append(theta[i : i + n].view(shape))
        i += n
    return out


def _products(kl_of_params, params, vs):
    """Products of the op's function, built from the KL with `params`' graph."""
    product = fisher_vector_product(kl_of_params(*params), params)
    return [product(v) for v in vs]


@pytest.mark.parametrize("at_old", [True, False])
def test_fisher_vector_product_of_a_categorical_policy_is_the_kl_hessian(at_old):
    rng = np.random.default_rng(7)
    w_old = torch.from_numpy(rng.normal(size=(4, 3)))
    b_old = torch.from_numpy(rng.normal(size=4))
    shift = 0.0 if at_old else 0.3
    w = (w_old + shift * torch.from_numpy(rng.normal(size=(4, 3)))).requires_grad_()
    b = (b_old + shift * torch.from_numpy(rng.normal(size=4))).requires_grad_()
    shapes = [(4, 3), (4,)]

    def kl_op(w, b):  # what the learner builds: the shoal op on logits, θold detached
        return categorical_kl(S @ w_old.T + b_old, S @ w.T + b).mean()

    vs = [torch.from_numpy(rng.normal(size=16)) for _ in range(3)]
    hessian = torch.autograd.functional.hessian(
        lambda theta: _categorical_kl_reference(w_old, b_old, *_unflatten(theta, shapes)),
        torch.cat([w.detach().reshape(-1), b.detach()]),
    )
    for v, hv in zip(vs, _products(kl_op, [w, b], vs), strict=True):
        torch.testing.assert_close(hv, hessian @ v, rtol=1e-10, atol=1e-12)
    if at_old:
        # At θold the Hessian is the Fisher matrix: mean_s Jᵀ (diag p - p pᵀ) J, logits = J θ.
        fisher = torch.zeros(16, 16, dtype=torch.float64)
        for s in S:
            p = torch.softmax(w_old @ s + b_old, 0)
            jac = torch.cat([torch.kron(torch.eye(4, dtype=torch.float64), s), torch.eye(4)], 1)
            fisher += jac.T @ (torch.diag(p) - torch.outer(p, p)) @ jac
        torch.testing.assert_close(hessian, fisher / len(S), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("at_old", [True, False])
def test_fisher_vector_product_of_a_gaussian_policy_is_the_kl_hessian(at_old):
    rng = np.random.default_rng(8)
    w_old = torch.from_numpy(rng.normal(size=(2, 3)))
    ls_old = torch.from_numpy(rng.normal(size=2) * 0.5)
    shift = 0.0 if at_old else 0.3
    w = (w_old + shift * torch.from_numpy(rng.normal(size=(2, 3)))).requires_grad_()
    ls = (ls_old + shift * torch.from_numpy(rng.normal(size=2))).requires_grad_()
    shapes = [(2, 3), (2,)]

    def kl_op(w, ls):
        return gaussian_kl(S @ w_old.T, ls_old, S @ w.T, ls).mean()

    vs = [torch.from_numpy(rng.normal(size=8)) for _ in range(3)]
    hessian = torch.autograd.functional.hessian(
        lambda theta: _gaussian_kl_reference(w_old, ls_old, *_unflatten(theta, shapes)),
        torch.cat([w.detach().reshape(-1), ls.detach()]),
    )
    for v, hv in zip(vs, _products(kl_op, [w, ls], vs), strict=True):
        torch.testing.assert_close(hv, hessian @ v, rtol=1e-10, atol=1e-12)
    # Also under no_grad, where conjugate gradient calls it.
    product = fisher_vector_product(kl_op(w, ls), [w, ls])
    with torch.no_grad():
        torch.testing.assert_close(product(vs[0]), hessian @ vs[0], rtol=1e-10, atol=1e-12)
    if at_old:
        # The Gaussian's Fisher: mean_s Jᵀ diag(σ⁻²) J for the mean's weights, 2 I for log σ.
        fisher = torch.zeros(8, 8, dtype=torch.float64)
        precision = torch.diag(torch.exp(-2 * ls_old))
        for s in S:
            jac = torch.kron(torch.eye(2, dtype=torch.float64), s)
            fisher[:6, :6] += jac.T @ precision @ jac / len(S)
        fisher[6:, 6:] = 2 * torch.eye(2)
        torch.testing.assert_close(hessian, fisher, rtol=1e-10, atol=1e-12)


def test_fisher_vector_product_gives_zero_rows_to_parameters_the_kl_ignores():
    w = torch.zeros(4, 3, dtype=torch.float64, requires_grad=True)
    unused = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    kl = categorical_kl(S @ torch.ones(3, 4, dtype=torch.float64), S @ w.T).mean()
    product = fisher_vector_product(kl, [w, unused])
    hv = product(torch.from_numpy(np.random.default_rng(12).normal(size=14)))
    assert hv.shape == (14,) and torch.all(hv[12:] == 0) and torch.any(hv[:12] != 0)
    with pytest.raises(ValueError, match=r"shape \(14,\)"):
        product(torch.ones(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="scalar"):
        fisher_vector_product(categorical_kl(S @ w.T, S @ w.T), [w])


def test_kls_match_torch_distributions():
    rng = np.random.default_rng(9)
    lp, lq = (torch.from_numpy(rng.normal(size=(7, 5))) for _ in range(2))
    expected = torch.distributions.kl_divergence(
        torch.distributions.Categorical(logits=lp), torch.distributions.Categorical(logits=lq)
    )
    torch.testing.assert_close(categorical_kl(lp, lq), expected)
    masked = lp.clone()
    masked[:, 0] = -math.inf  # p never takes action 0: finite, and 0 where p = q
    assert torch.isfinite(categorical_kl(masked, lq)).all()
    assert torch.equal(categorical_kl(masked, masked), torch.zeros(7, dtype=torch.float64))
    mp, mq = (torch.from_numpy(rng.normal(size=(7, 3))) for _ in range(2))
    sp, sq = (torch.from_numpy(rng.normal(size=3) * 0.5) for _ in range(2))
    expected = torch.distributions.kl_divergence(
        torch.distributions.Normal(mp, sp.exp()), torch.distributions.Normal(mq, sq.exp())
    ).sum(-1)
    torch.testing.assert_close(gaussian_kl(mp, sp, mq, sq), expected)


# ---- backtracking line search -----------------------------------------------------------------


def _reference_line_search(evaluate, theta_old, s, shs, l_old, delta, shrink, max_backtracks):
    """θ = θold + shrink^k β s, β = sqrt(2δ / sᵀAs): the first with L(θ) > L(θold) and
    D̄_KL ≤ δ, else θold."""
    beta = np.sqrt(2 * delta / shs)
    for k in range(max_backtracks):
        theta = theta_old + shrink**k * beta * s
        l_theta, kl = evaluate(theta)
        if l_theta > l_old and kl <= delta:
            return theta, k
    return theta_old, None


class _Problem:
    """L(θ) = gᵀd - c ‖d‖², D̄_KL(θ) = m · ½ dᵀ A d with d = θ - θold: `m` > 1 makes the KL
    steeper than its quadratic model, `c` bends the surrogate down for long steps."""

    def __init__(self, kl_scale: float, bend: float, sign: float = 1.0) -> None:
        rng = np.random.default_rng(10)
        self.a = _spd(4, seed=11, condition=10.0)
        self.g = rng.normal(size=4)
        self.theta_old = rng.normal(size=4)
        self.s = sign * np.linalg.solve(self.a, self.g)  # the natural gradient (or its opposite)
        self.kl_scale, self.bend = kl_scale, bend
        self.calls = 0

    def evaluate(self, theta):
        self.calls += 1
        d = np.asarray(theta) - self.theta_old
        return self.g @ d - self.bend * d @ d, self.kl_scale * 0.5 * d @ self.a @ d

    def run(self, delta: float = 0.01, shrink: float = 0.8, max_backtracks: int = 10):
        shs = self.s @ self.a @ self.s
        ours = backtracking_line_search(
            lambda theta: self.evaluate(theta.numpy()),
            torch.from_numpy(self.theta_old),
            torch.from_numpy(self.s),
            torch.tensor(shs),
            0.0,
            delta,
            shrink,
            max_backtracks,
        )
        calls, self.calls = self.calls, 0
        reference = _reference_line_search(
            self.evaluate, self.theta_old, self.s, shs, 0.0, delta, shrink, max_backtracks
        )
        return ours, reference, calls


def test_line_search_accepts_the_full_step_when_it_improves_within_the_region():
    ours, (theta, k), calls = _Problem(kl_scale=0.9, bend=0.0).run()
    assert ours.accepted and k == 0 and ours.backtracks == 0 and calls == 1
    assert ours.step_fraction == 1.0
    np.testing.assert_allclose(ours.theta.numpy(), theta, rtol=1e-12)
    # The full step's quadratic KL is δ: ½ (βs)ᵀ A (βs) = δ, here scaled by 0.9.
    assert ours.kl == pytest.approx(0.9 * 0.01, rel=1e-9) and ours.surrogate > 0


@pytest.mark.parametrize(
    ("kl_scale", "bend", "shrinks"),
    [(3.0, 0.0, 3), (20.0, 0.0, 7), (0.5, 50.0, 5)],
)
def test_line_search_shrinks_until_both_conditions_hold(kl_scale, bend, shrinks):
    ours, (theta, k), calls = _Problem(kl_scale, bend).run()
    # The KL: 3 · 0.8^(2k) ≤ 1 first at k = 3, 20 · 0.8^(2k) ≤ 1 at k = 7. The surrogate (a KL
    # well inside the region): gᵀd 0.8^k > 50 ‖d‖² 0.8^(2k) first at k = 5 for these inputs.
    assert k == shrinks
    assert ours.accepted and ours.backtracks == k and calls == k + 1
    assert ours.step_fraction == pytest.approx(0.8**k, rel=1e-12)
    np.testing.assert_allclose(ours.theta.numpy(), theta, rtol=1e-12)
    assert ours.kl <= 0.01 and ours.surrogate > 0


def test_line_search_rejecting_every_step_keeps_the_old_parameters():
    # Stepping against the gradient never improves the surrogate.
    ours, (theta, k), calls = _Problem(kl_scale=1.0, bend=0.0, sign=-1.0).run(max_backtracks=6)
    assert k is None and not ours.accepted and calls == 6 and ours.backtracks == 6
    assert torch.equal(ours.theta, torch.from_numpy(theta))
    assert ours.step_fraction == 0.0 and ours.kl == 0.0 and ours.surrogate == 0.0
    # Inside the region but never within it: a KL far steeper than its model.
    ours, (theta, k), _ = _Problem(kl_scale=1e6, bend=0.0).run(max_backtracks=10)
    assert k is None and not ours.accepted and np.array_equal(ours.theta.numpy(), theta)


def test_line_search_without_curvature_keeps_the_old_parameters_unevaluated():
    calls = []
    theta = torch.ones(3, dtype=torch.float64)
    for curvature in (0.0, -1.0, math.nan):
        out = backtracking_line_search(
            lambda t: calls.append(t) or (1.0, 0.0),
            theta,
            torch.ones(3).double(),
            curvature,
            0.0,
            0.01,
        )
        assert not out.accepted and out.theta is theta
    assert not calls
    with pytest.raises(ValueError, match="shrink_factor"):
        backtracking_line_search(lambda t: (1.0, 0.0), theta, theta, 1.0, 0.0, 0.01, 1.0)
    with pytest.raises(ValueError, match="max_kl"):
        backtracking_line_search(lambda t: (1.0, 0.0), theta, theta, 1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="flat vectors"):
        backtracking_line_search(lambda t: (1.0, 0.0), theta, theta[:2], 1.0, 0.0, 0.01)
