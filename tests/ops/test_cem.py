"""Tests for shoal.ops.cem: against a float64 loop written from QT-Opt's description of CEM
(Kalashnikov et al. 2018, section 4.2: sample N, keep the best M, fit a Gaussian, repeat), and
against the closed-form maximum of concave quadratics, inside the box and on its boundary."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shoal.ops import cem_maximize


def quadratic(centre: torch.Tensor, scale: torch.Tensor):
    """Q(a) = -Σ_d scale_d (a_d - centre_d)², per state: `centre`, `scale` `[B, D]`. Its
    maximum over the box is at `clip(centre, low, high)` (the Q is separable)."""

    def q_fn(actions: torch.Tensor) -> torch.Tensor:
        return -(scale[:, None] * (actions - centre[:, None]).square()).sum(-1)

    return q_fn


def reference_cem(q_fn, noise, num_elites, low, high):
    """CEM one state at a time, one sample at a time, in float64."""
    iterations, batch, samples, dim = noise.shape
    actions_out, values_out = [], []
    for b in range(batch):
        mu = np.full(dim, (low + high) / 2)
        sigma = np.full(dim, (high - low) / 2)
        best_a, best_q = None, -np.inf
        for i in range(iterations):
            drawn = []
            for n in range(samples):
                a = np.clip(mu + sigma * noise[i, b, n].numpy(), low, high)
                drawn.append(a)
            all_actions = torch.tensor(np.stack(drawn))[None].expand(batch, -1, -1)
            q = q_fn(all_actions)[b].numpy()
            order = sorted(range(samples), key=lambda n: -q[n])[:num_elites]
            if q[order[0]] > best_q:
                best_q, best_a = q[order[0]], drawn[order[0]]
            elites = np.stack([drawn[n] for n in order])
            mu = elites.mean(0)
            sigma = np.sqrt(((elites - mu) ** 2).mean(0))
        actions_out.append(best_a)
        values_out.append(best_q)
    return np.stack(actions_out), np.array(values_out)


@pytest.mark.parametrize(("iterations", "samples", "elites"), [(2, 64, 6), (1, 5, 1), (4, 16, 16)])
def test_matches_the_reference_loop(iterations, samples, elites):
    g = torch.Generator().manual_seed(iterations * 100 + samples)
    batch, dim = 5, 3
    centre = 1.5 * torch.randn(batch, dim, generator=g, dtype=torch.float64)  # some outside
    scale = torch.rand(batch, dim, generator=g, dtype=torch.float64) + 0.1
    noise = torch.randn(iterations, batch, samples, dim, generator=g, dtype=torch.float64)
    q_fn = quadratic(centre, scale)
    out = cem_maximize(q_fn, noise, num_elites=elites, low=-1.0, high=1.0)
    want_a, want_q = reference_cem(q_fn, noise, elites, -1.0, 1.0)
    np.testing.assert_allclose(out.action.numpy(), want_a, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out.value.numpy(), want_q, rtol=1e-12, atol=1e-12)
    assert ((out.action >= -1) & (out.action <= 1)).all()


def test_finds_an_interior_maximum():
    g = torch.Generator().manual_seed(0)
    batch, dim = 64, 2
    centre = 0.8 * torch.rand(batch, dim, generator=g, dtype=torch.float64) - 0.4
    scale = torch.ones(batch, dim, dtype=torch.float64)
    q_fn = quadratic(centre, scale)
    # The paper's settings find it to within a few hundredths...
    noise = torch.randn(2, batch, 64, dim, generator=g, dtype=torch.float64)
    out = cem_maximize(q_fn, noise, num_elites=6)
    error = (out.action - centre).abs().max(-1).values
    assert error.median() < 0.1 and error.max() < 0.3
    # ...and more iterations mostly to within a thousandth (with 6 elites the Gaussian can
    # shrink before it reaches the centre: a few states stop a little short).
    noise = torch.randn(10, batch, 64, dim, generator=g, dtype=torch.float64)
    out = cem_maximize(q_fn, noise, num_elites=6)
    error = (out.action - centre).abs().max(-1).values
    assert error.median() < 1e-3 and error.max() < 0.05
    assert (out.value <= 0.0).all() and out.value.median() > -1e-6


def test_finds_a_maximum_on_the_boundary():
    """The quadratic's centre outside the box in some entries: the box's maximum is the
    centre clipped to it, reached exactly because samples are clipped to the box."""
    batch, dim = 32, 3
    g = torch.Generator().manual_seed(1)
    centre = torch.tensor([[2.5, -0.3, -1.7]], dtype=torch.float64).expand(batch, dim)
    scale = torch.tensor([[1.0, 2.0, 0.5]], dtype=torch.float64).expand(batch, dim)
    noise = torch.randn(8, batch, 64, dim, generator=g, dtype=torch.float64)
    low, high = torch.tensor([-1.0, -1.0, -2.0]), torch.tensor([1.0, 1.0, 0.5])
    out = cem_maximize(quadratic(centre, scale), noise, num_elites=6, low=low, high=high)
    best = torch.tensor([1.0, -0.3, -1.7], dtype=torch.float64)
    # Pinned to the bound: clipped samples land on it exactly.
    assert (out.action[:, 0] == 1.0).float().mean() > 0.5 and (out.action[:, 0] > 0.99).all()
    error = (out.action - best).abs().max(-1).values
    assert error.median() < 1e-2  # a few states stop short where Q is flat (see above)
    assert ((out.action >= low) & (out.action <= high)).all()
    true_max = -(scale[0] * (best - centre[0]).square()).sum()
    assert (out.value <= true_max + 1e-12).all()  # never above the true maximum
    gap = true_max - out.value
    assert gap.median() < 1e-4 and gap.max() < 0.05


def test_value_is_the_best_action_valued_and_never_worse_than_the_first_iteration():
    g = torch.Generator().manual_seed(2)
    batch, dim = 16, 2
    centre = torch.randn(batch, dim, generator=g)
    q_fn = quadratic(centre, torch.ones(batch, dim))
    noise = torch.randn(3, batch, 32, dim, generator=g)
    out = cem_maximize(q_fn, noise, num_elites=4)
    torch.testing.assert_close(q_fn(out.action[:, None])[:, 0], out.value)
    first = cem_maximize(q_fn, noise[:1], num_elites=4)
    assert (out.value >= first.value).all()


def test_rejects_bad_shapes_and_settings():
    q_fn = quadratic(torch.zeros(2, 1), torch.ones(2, 1))
    noise = torch.randn(2, 2, 8, 1)
    with pytest.raises(ValueError, match=r"\[I, B, N, D\]"):
        cem_maximize(q_fn, noise[0], num_elites=2)
    with pytest.raises(ValueError, match="num_elites"):
        cem_maximize(q_fn, noise, num_elites=9)
    with pytest.raises(ValueError, match="low < high"):
        cem_maximize(q_fn, noise, num_elites=2, low=1.0, high=1.0)
    with pytest.raises(ValueError, match=r"values \[B, N\]"):
        cem_maximize(lambda a: a.sum(-1).sum(-1), noise, num_elites=2)
