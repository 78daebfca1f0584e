"""Action-masking ops against slow float64 loops over each row's legal actions."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from shoal import ops

# Rows crossing the edge cases: all legal, one legal, all but one masked, none legal (treated
# as all legal), ties among legal actions, a larger illegal value than every legal one.
VALUES = [
    [1.0, 2.0, 3.0, 4.0],
    [1.0, 2.0, 3.0, 4.0],
    [5.0, -1.0, 7.0, 0.5],
    [0.0, 1.0, 2.0, 3.0],
    [2.0, 9.0, 2.0, 1.0],
    [-3.0, -3.0, 8.0, -3.0],
    [10.0, -20.0, 30.0, 0.0],
]
LEGAL = [
    [1, 1, 1, 1],
    [0, 1, 0, 0],
    [1, 0, 0, 0],
    [0, 0, 0, 0],
    [1, 0, 1, 0],
    [1, 1, 0, 1],
    [0, 1, 0, 0],
]


def _rows():
    for values, legal in zip(VALUES, LEGAL, strict=True):
        allowed = [a for a, ok in enumerate(legal) if ok] or list(range(len(values)))
        yield values, allowed


def _reference_argmax_and_max():
    arg, top = [], []
    for values, allowed in _rows():
        best = allowed[0]
        for a in allowed:  # strict >: the lowest index wins a tie
            if values[a] > values[best]:
                best = a
        arg.append(best)
        top.append(values[best])
    return arg, top


def _reference_softmax():
    """π(a) = exp(x_a) / Σ_{b legal} exp(x_b) for legal a, 0 otherwise; log π and entropy."""
    probs, logps, entropies = [], [], []
    for values, allowed in _rows():
        norm = math.log(sum(math.exp(values[b]) for b in allowed))
        p = [math.exp(values[a] - norm) if a in allowed else 0.0 for a in range(len(values))]
        probs.append(p)
        logps.append([values[a] - norm if a in allowed else None for a in range(len(values))])
        entropies.append(-sum(p[a] * (values[a] - norm) for a in allowed))
    return probs, logps, entropies


def _tensors(dtype=torch.float64):
    return torch.tensor(VALUES, dtype=dtype), torch.tensor(LEGAL, dtype=torch.int8)


def test_masked_argmax_and_max_match_the_reference():
    q, legal = _tensors()
    arg, top = _reference_argmax_and_max()
    assert ops.masked_argmax(q, legal).tolist() == arg
    torch.testing.assert_close(ops.masked_max(q, legal), torch.tensor(top, dtype=torch.float64))
    # Over a [T, B, A] batch too, bool masks as well as 0/1 integers.
    q3, legal3 = q.view(7, 1, 4), legal.bool().view(7, 1, 4)
    assert ops.masked_argmax(q3, legal3).view(-1).tolist() == arg


def test_masked_logits_give_the_legal_softmax_with_finite_log_probs_and_entropy():
    for dtype in (torch.float64, torch.float32):
        logits, legal = _tensors(dtype)
        masked = ops.masked_logits(logits, legal)
        probs, logps, entropies = _reference_softmax()
        got = torch.softmax(masked, -1)
        torch.testing.assert_close(got, torch.tensor(probs, dtype=dtype))
        log_p = torch.log_softmax(masked, -1)
        assert torch.isfinite(log_p).all()
        for row, expected in enumerate(logps):
            for a, value in enumerate(expected):
                if value is not None:
                    assert log_p[row, a].item() == pytest.approx(value, rel=1e-5, abs=1e-6)
        entropy = ops.categorical_entropy(masked)
        assert torch.isfinite(entropy).all()
        torch.testing.assert_close(
            entropy, torch.tensor(entropies, dtype=dtype), rtol=1e-5, atol=1e-6
        )


def test_masked_logits_pass_no_gradient_to_illegal_actions():
    logits, legal = _tensors()
    logits.requires_grad_(True)
    masked = ops.masked_logits(logits, legal)
    loss = ops.categorical_entropy(masked).sum() + torch.log_softmax(masked, -1)[:, 1].sum()
    loss.backward()
    grad = logits.grad
    assert torch.isfinite(grad).all()
    effective = legal.bool() | ~legal.bool().any(-1, keepdim=True)
    assert (grad[~effective] == 0).all()
    assert (grad[effective] != 0).any()


def test_samples_of_masked_logits_are_legal():
    logits, legal = _tensors(torch.float32)
    masked = ops.masked_logits(logits.repeat(200, 1), legal.repeat(200, 1))
    actions = ops.categorical_sample(masked, torch.Generator().manual_seed(0))
    effective = ops.legal_or_all(legal.repeat(200, 1))
    assert effective.gather(-1, actions[:, None]).all()


def test_uniform_legal_actions_are_legal_and_uniform():
    legal = np.array(LEGAL, bool)
    rng = np.random.default_rng(0)
    draws = np.stack([ops.uniform_legal_actions(legal, rng) for _ in range(4000)])  # [N, B]
    for row, (_values, allowed) in enumerate(_rows()):
        counts = np.bincount(draws[:, row], minlength=4)
        assert set(np.flatnonzero(counts)) == set(allowed)
        expected = 4000 / len(allowed)
        assert np.abs(counts[allowed] - expected).max() < 5 * math.sqrt(expected)


def test_masked_double_q_in_the_distributional_and_rescaled_targets():
    # Rainbow: the selector's best action is illegal in row 0; the target must use the legal one.
    atoms = torch.linspace(-1.0, 1.0, 5, dtype=torch.float64)
    logits_t = torch.randn(2, 3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    selector = torch.tensor([[9.0, 1.0, 2.0], [0.0, 1.0, 2.0]], dtype=torch.float64)
    legal = torch.tensor([[0, 1, 1], [1, 1, 1]], dtype=torch.bool)
    args = (atoms, logits_t, torch.tensor([0, 1]), torch.zeros(2, dtype=torch.float64))
    masked = ops.categorical_double_q_learning(
        *args, torch.ones(2, dtype=torch.float64), logits_t, selector, legal
    )
    expected = torch.softmax(logits_t[torch.arange(2), torch.tensor([2, 2])], -1)
    torch.testing.assert_close(masked.target, expected)
    # R2D2: one step, γ = 1, no reward: the target is Q_target(s', argmax over legal Q_online).
    q_target = torch.tensor([[[1.0, 2.0, 3.0]]], dtype=torch.float64)
    q_online = torch.tensor([[[0.0, 5.0, 1.0]]], dtype=torch.float64)
    legal_t = torch.tensor([[[1, 0, 1]]], dtype=torch.bool)
    zero, one = torch.zeros(1, 1, dtype=torch.float64), torch.ones(1, 1, dtype=torch.float64)
    y = ops.transformed_n_step_double_q_targets(zero, one, q_target, q_online, 1, legal_t=legal_t)
    torch.testing.assert_close(y, torch.tensor([[3.0]], dtype=torch.float64))


def test_shape_and_type_mistakes_are_refused():
    q, legal = _tensors()
    with pytest.raises(ValueError, match="legal must have the shape"):
        ops.masked_argmax(q, legal[:, :3])
    with pytest.raises(ValueError, match="floating-point"):
        ops.masked_max(q.long(), legal)
    with pytest.raises(ValueError, match=r"\[B, A\]"):
        ops.uniform_legal_actions(np.ones(4, bool), np.random.default_rng(0))
