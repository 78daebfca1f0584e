"""Tests for shoal.ops.distributions, with torch.distributions as the reference."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import Categorical, Normal

from shoal.ops import (
    categorical_entropy,
    categorical_log_prob,
    categorical_sample,
    gaussian_entropy,
    gaussian_log_prob,
    gaussian_sample,
)

BATCH_SHAPES = [(), (5,), (4, 3)]
DTYPES = [torch.float32, torch.float64]


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---- categorical ------------------------------------------------------------------------------


@pytest.mark.parametrize("batch", BATCH_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_categorical_log_prob_and_entropy_match_torch(batch, dtype):
    logits = 2.0 * torch.randn(*batch, 6, generator=gen(0), dtype=dtype)
    actions = torch.randint(0, 6, batch, generator=gen(1))
    reference = Categorical(logits=logits)
    got = categorical_log_prob(logits, actions)
    assert got.shape == batch and got.dtype == dtype
    torch.testing.assert_close(got, reference.log_prob(actions))
    got = categorical_entropy(logits)
    assert got.shape == batch
    torch.testing.assert_close(got, reference.entropy())


def test_categorical_hand_case():
    # logits [0, log 3] -> p = [1/4, 3/4]; log p(1) = log 0.75 = -0.287682;
    # H = -(0.25 log 0.25 + 0.75 log 0.75) = 0.346574 + 0.215762 = 0.562335.
    logits = torch.tensor([0.0, math.log(3.0)], dtype=torch.float64)
    got = categorical_log_prob(logits, torch.tensor(1))
    assert got.item() == pytest.approx(-0.2876820724517809, rel=1e-12)
    assert categorical_entropy(logits).item() == pytest.approx(0.5623351446188083, rel=1e-12)


def test_categorical_masked_logits():
    # An action masked with -inf has probability 0: entropy is that of the remaining actions,
    # finite, with finite gradients; it is never sampled.
    logits = torch.tensor([[0.0, float("-inf"), math.log(3.0)]], requires_grad=True)
    entropy = categorical_entropy(logits)
    torch.testing.assert_close(entropy, torch.tensor([0.5623351446188083]))
    entropy.sum().backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()
    samples = categorical_sample(logits.detach().expand(2000, 3), generator=gen(0))
    assert not (samples == 1).any()
    assert (samples == 0).any() and (samples == 2).any()


def test_categorical_log_prob_gradient_matches_torch():
    logits = torch.randn(4, 5, generator=gen(2), dtype=torch.float64, requires_grad=True)
    actions = torch.randint(0, 5, (4,), generator=gen(3))
    (categorical_log_prob(logits, actions) + categorical_entropy(logits)).sum().backward()
    ours = logits.grad
    logits.grad = None
    ref = Categorical(logits=logits)
    (ref.log_prob(actions) + ref.entropy()).sum().backward()
    torch.testing.assert_close(ours, logits.grad)


def test_categorical_sample_is_reproducible():
    logits = torch.randn(64, 5, generator=gen(4))
    a = categorical_sample(logits, generator=gen(7))
    b = categorical_sample(logits, generator=gen(7))
    c = categorical_sample(logits, generator=gen(8))
    assert a.dtype == torch.int64 and a.shape == (64,)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


@pytest.mark.parametrize("dtype", DTYPES)
def test_categorical_sample_frequencies_match_softmax(dtype):
    logits = torch.tensor([1.0, -0.5, 0.3, 2.0], dtype=dtype)
    n = 50_000
    samples = categorical_sample(logits.expand(n, 4), generator=gen(5))
    freq = torch.bincount(samples, minlength=4).double() / n
    # Each frequency has standard deviation <= sqrt(0.25 / n) = 0.0022; allow ~4.5 of them.
    torch.testing.assert_close(freq, torch.softmax(logits.double(), -1), atol=0.01, rtol=0.0)


# ---- gaussian ---------------------------------------------------------------------------------


@pytest.mark.parametrize("batch", BATCH_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("state_dependent_std", [True, False])
def test_gaussian_log_prob_and_entropy_match_torch(batch, dtype, state_dependent_std):
    d = 3
    mean = torch.randn(*batch, d, generator=gen(0), dtype=dtype)
    std_shape = (*batch, d) if state_dependent_std else (d,)
    log_std = 0.5 * torch.randn(*std_shape, generator=gen(1), dtype=dtype)
    actions = torch.randn(*batch, d, generator=gen(2), dtype=dtype)
    reference = Normal(mean, log_std.exp())
    got = gaussian_log_prob(mean, log_std, actions)
    assert got.shape == batch and got.dtype == dtype
    torch.testing.assert_close(got, reference.log_prob(actions).sum(-1))
    got = gaussian_entropy(log_std, batch_shape=batch)
    assert got.shape == batch
    torch.testing.assert_close(got, reference.entropy().sum(-1))


def test_gaussian_hand_case():
    # D = 1, μ = 0, σ = 1, a = 1: log N = -0.5 - 0.5 log 2π = -0.5 - 0.918939 = -1.418939.
    # D = 2, log σ = [0, log 2]: H = 2 (0.5 + 0.918939) + log 2 = 2.837877 + 0.693147 = 3.531024.
    got = gaussian_log_prob(torch.zeros(1), torch.zeros(1), torch.ones(1))
    assert got.item() == pytest.approx(-1.4189385, rel=1e-6)
    got = gaussian_entropy(torch.tensor([0.0, math.log(2.0)], dtype=torch.float64))
    assert got.shape == ()
    assert got.item() == pytest.approx(3.5310242469692907, rel=1e-12)


def test_gaussian_entropy_broadcasts_to_batch_shape():
    log_std = torch.tensor([0.1, -0.3], requires_grad=True)
    got = gaussian_entropy(log_std, batch_shape=torch.Size([4, 3]))
    assert got.shape == (4, 3)
    torch.testing.assert_close(got, gaussian_entropy(log_std).expand(4, 3))
    got.sum().backward()  # each of the 12 entries adds d/dlog σ_d = 1
    torch.testing.assert_close(log_std.grad, torch.full((2,), 12.0))
    with pytest.raises(ValueError, match="batch_shape"):
        gaussian_entropy(torch.zeros(5, 2), batch_shape=(4, 3))


def test_gaussian_sample_reproducible_and_reparameterised():
    mean = torch.randn(6, 2, generator=gen(0), requires_grad=True)
    log_std = torch.tensor([-0.5, 0.5], requires_grad=True)
    a = gaussian_sample(mean, log_std, generator=gen(1))
    b = gaussian_sample(mean, log_std, generator=gen(1))
    c = gaussian_sample(mean, log_std, generator=gen(2))
    assert a.shape == mean.shape
    assert torch.equal(a, b) and not torch.equal(a, c)
    a.sum().backward()
    # d a / d μ = 1; d a / d log σ = σ ε = a - μ.
    torch.testing.assert_close(mean.grad, torch.ones_like(mean))
    torch.testing.assert_close(log_std.grad, (a - mean).detach().sum(0))


def test_gaussian_sample_moments():
    mean = torch.tensor([1.0, -2.0], dtype=torch.float64)
    log_std = torch.tensor([0.0, math.log(0.5)], dtype=torch.float64)
    x = gaussian_sample(mean.expand(40_000, 2), log_std, generator=gen(3))
    # Standard errors: σ / sqrt(n) <= 0.005 for the mean, about σ / sqrt(2n) for the std.
    torch.testing.assert_close(x.mean(0), mean, atol=0.02, rtol=0.0)
    torch.testing.assert_close(x.std(0), log_std.exp(), atol=0.02, rtol=0.0)


# ---- shape checks -----------------------------------------------------------------------------


def test_shape_mismatch_raises():
    with pytest.raises(ValueError, match="actions must have shape"):
        categorical_log_prob(torch.zeros(4, 3), torch.zeros(5, dtype=torch.int64))
    with pytest.raises(ValueError, match="integer"):
        categorical_log_prob(torch.zeros(4, 3), torch.zeros(4))
    with pytest.raises(ValueError, match="log_std"):
        gaussian_log_prob(torch.zeros(4, 3), torch.zeros(2), torch.zeros(4, 3))
    with pytest.raises(ValueError, match="actions has shape"):
        gaussian_log_prob(torch.zeros(4, 3), torch.zeros(3), torch.zeros(4, 2))
    with pytest.raises(ValueError, match="log_std"):
        gaussian_sample(torch.zeros(4, 3), torch.zeros(5, 3))
