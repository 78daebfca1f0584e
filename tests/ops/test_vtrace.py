"""V-trace against a slow float64 loop written from the paper's n-step sum (Espeholt et al. 2018).

As in torchbeast's test, the importance ratios are drawn from a wide range so that they fall on
both sides of every clipping threshold (ρ̄, c̄ and the policy-gradient ρ̄).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from shoal.ops import VTraceReturns, lambda_returns, vtrace, vtrace_policy_gradient_loss

GAMMA = 0.9


def rollout(t: int, b: int, seed: int, log_rho_scale: float = 1.0, dtype=torch.float64):
    """Random unroll data with consistent values, terminations and truncations.

    `v_t[t] = v_tm1[t + 1]` inside an episode; at an end, `v_t[t]` is the final observation's
    value (a separate draw), and `v_t[T - 1]` is the bootstrap value.
    """
    g = torch.Generator().manual_seed(seed)
    terminated = torch.rand(t, b, generator=g) < 0.1
    truncated = (torch.rand(t, b, generator=g) < 0.1) & ~terminated
    end_t = terminated | truncated
    values = torch.randn(t + 1, b, generator=g, dtype=dtype)
    final_values = torch.randn(t, b, generator=g, dtype=dtype)
    v_tm1 = values[:-1]
    v_t = torch.where(end_t, final_values, values[1:])
    r_t = torch.randn(t, b, generator=g, dtype=dtype)
    discount_t = GAMMA * (~terminated).to(dtype)
    log_rhos = log_rho_scale * torch.randn(t, b, generator=g, dtype=dtype)
    return dict(v_tm1=v_tm1, v_t=v_t, r_t=r_t, discount_t=discount_t, log_rhos=log_rhos), end_t


# ---- the reference: Espeholt et al. 2018, Remark 1, one (s, b) at a time ----


def ref_vtrace(v_tm1, v_t, r_t, discount_t, log_rhos, end_t, rho_bar, c_bar, pg_rho_bar, lam):
    """v_s = V(x_s) + Σ_{t=s}^{m} (Π_{i=s}^{t-1} γ_i c_i) δ_t V, δ_t V = ρ_t (r_t + γ_t V(x_{t+1})
    - V(x_t)), ρ_t = min(ρ̄, π/μ), c_i = λ min(c̄, π/μ), m the first episode end at or after s
    (or T - 1). The policy-gradient advantage is min(ρ̄_pg, π/μ)_s (r_s + γ_s v_{s+1} - V(x_s)),
    with v_{s+1} the v-trace target of the next state, or V(x_{s+1}) at an end or the last step.
    """
    v_tm1, v_t, r_t, gamma, log_rhos = (
        np.asarray(x, dtype=np.float64) for x in (v_tm1, v_t, r_t, discount_t, log_rhos)
    )
    end = np.zeros(r_t.shape, bool) if end_t is None else np.asarray(end_t, bool)
    horizon, batch = r_t.shape
    ratio = np.exp(log_rhos)
    vs = np.zeros((horizon, batch))
    pg = np.zeros((horizon, batch))
    rhos = np.zeros((horizon, batch))
    for b in range(batch):
        for s in range(horizon):
            total, weight = v_tm1[s, b], 1.0
            for t in range(s, horizon):
                rho_t = min(rho_bar, ratio[t, b])
                delta = rho_t * (r_t[t, b] + gamma[t, b] * v_t[t, b] - v_tm1[t, b])
                total += weight * delta
                if end[t, b]:
                    break
                weight *= gamma[t, b] * lam * min(c_bar, ratio[t, b])
            vs[s, b] = total
            rhos[s, b] = min(rho_bar, ratio[s, b])
    for b in range(batch):
        for s in range(horizon):
            last = s == horizon - 1 or end[s, b]
            v_next = v_t[s, b] if last else vs[s + 1, b]
            q = r_t[s, b] + gamma[s, b] * v_next
            pg[s, b] = min(pg_rho_bar, ratio[s, b]) * (q - v_tm1[s, b])
    return vs, pg, rhos


def check_against_reference(inputs, end_t, rho_bar, c_bar, pg_rho_bar, lam):
    out = vtrace(
        **inputs,
        rho_bar=rho_bar,
        c_bar=c_bar,
        pg_rho_bar=pg_rho_bar,
        lambda_=lam,
        end_t=end_t,
    )
    vs, pg, rhos = ref_vtrace(
        **inputs, end_t=end_t, rho_bar=rho_bar, c_bar=c_bar, pg_rho_bar=pg_rho_bar, lam=lam
    )
    np.testing.assert_allclose(out.vs.numpy(), vs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out.pg_advantages.numpy(), pg, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out.rhos.numpy(), rhos, rtol=1e-6, atol=1e-6)
    return out


@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (7, 4), (20, 5)])
@pytest.mark.parametrize("lam", [1.0, 0.9, 0.0])
def test_matches_the_paper_on_random_unrolls(shape, lam):
    inputs, end_t = rollout(*shape, seed=sum(shape))
    check_against_reference(inputs, end_t, 1.0, 1.0, 1.0, lam)
    # And without ends (values consistent across them): traces run to the end of the unroll.
    inputs["v_t"] = torch.cat([inputs["v_tm1"][1:], inputs["v_t"][-1:]])
    check_against_reference(inputs, None, 1.0, 1.0, 1.0, lam)


@pytest.mark.parametrize(
    ("rho_bar", "c_bar", "pg_rho_bar"),
    [(1.0, 1.0, 1.0), (2.0, 0.5, 1.5), (0.7, 1.3, 3.0), (math.inf, math.inf, math.inf)],
)
def test_matches_the_paper_when_ratios_cross_every_threshold(rho_bar, c_bar, pg_rho_bar):
    inputs, end_t = rollout(30, 6, seed=7, log_rho_scale=2.0)
    ratios = inputs["log_rhos"].exp()
    # The inputs exercise both sides of each finite threshold.
    for bar in (rho_bar, c_bar, pg_rho_bar):
        if math.isfinite(bar):
            assert (ratios > bar).any() and (ratios < bar).any()
    out = check_against_reference(inputs, end_t, rho_bar, c_bar, pg_rho_bar, 0.95)
    if math.isfinite(rho_bar):
        assert out.rhos.max().item() == pytest.approx(rho_bar)


def test_fully_random_values_match_the_sum_form():
    """The n-step sum uses v_t[t] as V(x_{t+1}) in δ_t, even where it differs from v_tm1[t+1]."""
    g = torch.Generator().manual_seed(3)
    inputs = {
        k: torch.randn(9, 3, generator=g, dtype=torch.float64)
        for k in ("v_tm1", "v_t", "r_t", "log_rhos")
    }
    inputs["discount_t"] = torch.full((9, 3), GAMMA, dtype=torch.float64)
    out = vtrace(**inputs, c_bar=0.8)
    vs, _, _ = ref_vtrace(**inputs, end_t=None, rho_bar=1.0, c_bar=0.8, pg_rho_bar=1.0, lam=1.0)
    np.testing.assert_allclose(out.vs.numpy(), vs, rtol=1e-6, atol=1e-6)


def test_hand_derived_two_steps():
    # ratios 2 and 0.5; ρ̄ = c̄ = 1: ρ = c = (1, 0.5). V = (1, 2), bootstrap 3, γ = 0.5, r = 1.
    v_tm1 = torch.tensor([[1.0], [2.0]])
    v_t = torch.tensor([[2.0], [3.0]])
    r_t = torch.ones(2, 1)
    discount_t = torch.full((2, 1), 0.5)
    log_rhos = torch.tensor([[math.log(2.0)], [math.log(0.5)]])
    out = vtrace(v_tm1, v_t, r_t, discount_t, log_rhos)
    # δ_1 = 0.5 (1 + 1.5 - 2) = 0.25, v_1 = 2.25;
    # δ_0 = 1 (1 + 1 - 1) = 1, v_0 = 1 + 1 + 0.5 · 1 · 0.25.
    assert out.vs[:, 0].tolist() == pytest.approx([2.125, 2.25])
    # A_0 = 1 · (1 + 0.5 · 2.25 - 1); A_1 = 0.5 · (1 + 0.5 · 3 - 2).
    assert out.pg_advantages[:, 0].tolist() == pytest.approx([1.125, 0.25])
    assert out.rhos[:, 0].tolist() == pytest.approx([1.0, 0.5])


@pytest.mark.parametrize("lam", [1.0, 0.8])
def test_on_policy_vtrace_is_the_lambda_return(lam):
    inputs, end_t = rollout(25, 4, seed=11)
    inputs["log_rhos"] = torch.zeros_like(inputs["log_rhos"])
    out = vtrace(**inputs, lambda_=lam, end_t=end_t)
    expected = lambda_returns(inputs["r_t"], inputs["discount_t"], inputs["v_t"], lam, end_t)
    torch.testing.assert_close(out.vs, expected, rtol=1e-10, atol=1e-10)
    assert torch.all(out.rhos == 1.0)


def test_on_policy_without_ends_gives_bootstrapped_n_step_returns():
    inputs, _ = rollout(12, 3, seed=5)
    inputs["log_rhos"] = torch.zeros_like(inputs["log_rhos"])
    # No ends at all: v_t is the value sequence shifted, so v_t[T-1] is the only bootstrap.
    inputs["v_t"] = torch.cat([inputs["v_tm1"][1:], torch.randn(1, 3, dtype=torch.float64)])
    inputs["discount_t"] = torch.full_like(inputs["discount_t"], GAMMA)
    out = vtrace(**inputs)
    expected = lambda_returns(inputs["r_t"], inputs["discount_t"], inputs["v_t"], 1.0)
    torch.testing.assert_close(out.vs, expected)
    # The first target is the discounted sum of all rewards plus γ^T times the bootstrap value.
    weights = GAMMA ** torch.arange(12, dtype=torch.float64)
    first = (weights[:, None] * inputs["r_t"]).sum(0) + GAMMA**12 * inputs["v_t"][-1]
    torch.testing.assert_close(out.vs[0], first)


def test_episode_ends_cut_traces():
    inputs, _ = rollout(10, 2, seed=2)
    end_t = torch.zeros(10, 2, dtype=torch.bool)
    end_t[4, 0] = True
    before = vtrace(**inputs, end_t=end_t)
    changed = dict(inputs, r_t=inputs["r_t"].clone(), log_rhos=inputs["log_rhos"].clone())
    changed["r_t"][5:, 0] += 100.0
    changed["log_rhos"][5:, 0] -= 3.0
    after = vtrace(**changed, end_t=end_t)
    # Nothing after the end at t = 4 reaches the targets of steps 0..4 of env 0 ...
    torch.testing.assert_close(after.vs[:5, 0], before.vs[:5, 0])
    torch.testing.assert_close(after.pg_advantages[:5, 0], before.pg_advantages[:5, 0])
    # ... but it does without the end, and it does reach the later steps.
    assert not torch.allclose(vtrace(**changed).vs[:5, 0], vtrace(**inputs).vs[:5, 0])
    assert not torch.allclose(after.vs[5:, 0], before.vs[5:, 0])


def test_truncation_bootstraps_from_the_final_value_and_termination_does_not():
    v_tm1 = torch.zeros(2, 1)
    v_t = torch.tensor([[4.0], [0.0]])  # step 0 ends; 4 is the final observation's value
    r_t = torch.ones(2, 1)
    log_rhos = torch.zeros(2, 1)
    end_t = torch.tensor([[True], [False]])
    truncated = vtrace(v_tm1, v_t, r_t, torch.full((2, 1), 0.5), log_rhos, end_t=end_t)
    terminated_discount = torch.tensor([[0.0], [0.5]])
    terminated = vtrace(v_tm1, v_t, r_t, terminated_discount, log_rhos, end_t=end_t)
    assert truncated.vs[0, 0].item() == pytest.approx(1.0 + 0.5 * 4.0)
    assert truncated.pg_advantages[0, 0].item() == pytest.approx(3.0)
    assert terminated.vs[0, 0].item() == pytest.approx(1.0)
    assert terminated.pg_advantages[0, 0].item() == pytest.approx(1.0)


def test_batched_equals_looped():
    inputs, end_t = rollout(15, 5, seed=9, log_rho_scale=1.5)
    kwargs = dict(rho_bar=1.2, c_bar=0.9, pg_rho_bar=2.0, lambda_=0.9)
    batched = vtrace(**inputs, end_t=end_t, **kwargs)
    for b in range(5):
        column = {k: v[:, b : b + 1] for k, v in inputs.items()}
        single = vtrace(**column, end_t=end_t[:, b : b + 1], **kwargs)
        for got, want in zip(single, batched, strict=True):
            torch.testing.assert_close(got, want[:, b : b + 1], rtol=0, atol=0)


def test_no_gradient_reaches_the_targets():
    inputs, end_t = rollout(6, 2, seed=4)
    inputs = {k: v.clone().requires_grad_(True) for k, v in inputs.items()}
    out = vtrace(**inputs, end_t=end_t, lambda_=torch.tensor(0.9, requires_grad=True))
    assert not any(x.requires_grad for x in out)
    log_pi_a = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
    pg_advantages = out.pg_advantages.clone().requires_grad_(True)
    loss = vtrace_policy_gradient_loss(log_pi_a, pg_advantages)
    torch.testing.assert_close(loss, -log_pi_a * out.pg_advantages)
    loss.sum().backward()
    torch.testing.assert_close(log_pi_a.grad, -out.pg_advantages)
    assert pg_advantages.grad is None


def test_float32_works_and_agrees_with_float64():
    inputs, end_t = rollout(20, 4, seed=6, log_rho_scale=2.0)
    out64 = vtrace(**inputs, end_t=end_t, lambda_=0.95)
    out32 = vtrace(**{k: v.float() for k, v in inputs.items()}, end_t=end_t, lambda_=0.95)
    assert isinstance(out32, VTraceReturns)
    assert all(x.dtype == torch.float32 for x in out32)
    for got, want in zip(out32, out64, strict=True):
        torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)


def test_huge_ratios_are_clipped_without_overflow():
    inputs, _ = rollout(5, 2, seed=8, dtype=torch.float32)
    inputs["log_rhos"] = torch.full((5, 2), 200.0)  # exp(200) overflows float32
    out = vtrace(**inputs)
    assert all(torch.isfinite(x).all() for x in out)
    assert torch.all(out.rhos == 1.0)


def test_wrong_shapes_and_thresholds_raise_naming_the_argument():
    inputs, _ = rollout(4, 3, seed=1)
    with pytest.raises(ValueError, match="log_rhos"):
        vtrace(**dict(inputs, log_rhos=inputs["log_rhos"][:, :2]))
    with pytest.raises(ValueError, match="end_t"):
        vtrace(**inputs, end_t=torch.zeros(4, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"\[T, B\]"):
        vtrace(**{k: v[0] for k, v in inputs.items()})
    with pytest.raises(ValueError, match="c_bar"):
        vtrace(**inputs, c_bar=0.0)
    with pytest.raises(ValueError, match="lambda_"):
        vtrace(**inputs, lambda_=1.5)
    with pytest.raises(ValueError, match="pg_advantages"):
        vtrace_policy_gradient_loss(torch.zeros(4, 3), torch.zeros(4, 2))
