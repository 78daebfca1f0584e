"""Tests for shoal.nets.heads: shapes, initial scales and the dueling combination."""

from __future__ import annotations

import torch
from torch import nn

from shoal.nets import CategoricalHead, DuelingQHead, GaussianHead, ValueHead

B, F, A, D = 5, 16, 6, 3


def features(seed: int = 0) -> torch.Tensor:
    return torch.randn(B, F, generator=torch.Generator().manual_seed(seed))


def assert_orthogonal_rows(linear: nn.Linear, gain: float) -> None:
    w = linear.weight.detach()
    torch.testing.assert_close(w @ w.T, gain**2 * torch.eye(w.shape[0]))
    assert not linear.bias.any()


def test_categorical_head_gives_small_logits() -> None:
    head = CategoricalHead(F, A)
    logits = head(features())
    assert logits.shape == (B, A)
    assert_orthogonal_rows(head.linear, 0.01)


def test_gaussian_head_mean_and_state_independent_log_std() -> None:
    head = GaussianHead(F, D, init_log_std=-0.5)
    assert head(features()).shape == (B, D)
    assert isinstance(head.log_std, nn.Parameter) and head.log_std.shape == (D,)
    assert torch.equal(head.log_std.detach(), torch.full((D,), -0.5))
    assert any(p is head.log_std for p in head.parameters())
    assert_orthogonal_rows(head.linear, 0.01)


def test_value_head_is_one_value_per_row() -> None:
    head = ValueHead(F)
    x = features()
    values = head(x)
    assert values.shape == (B,)
    torch.testing.assert_close(values, x @ head.linear.weight[0])
    assert_orthogonal_rows(head.linear, 1.0)


def test_dueling_head_is_identifiable() -> None:
    torch.manual_seed(0)
    head = DuelingQHead(F, A, hidden=32)
    x = features()
    q = head(x)
    value, advantage = head.streams(x)
    assert q.shape == (B, A) and value.shape == (B,) and advantage.shape == (B, A)
    # Wang et al. 2016 eq. 9: the mean over actions carries V, the centred part carries A.
    centred = advantage - advantage.mean(-1, keepdim=True)
    torch.testing.assert_close(q - q.mean(-1, keepdim=True), centred)
    torch.testing.assert_close(q.mean(-1), value)
    assert centred.abs().max() > 0


def test_dueling_gradients_reach_both_streams() -> None:
    torch.manual_seed(0)
    head = DuelingQHead(F, A, hidden=32)
    # A per-action weighting: the plain sum of Q is blind to the centred advantages.
    weights = torch.arange(A, dtype=torch.float32)
    (head(features()) * weights).sum().backward()
    for name, param in head.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name
