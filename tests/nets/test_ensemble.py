"""The ensemble MLP equals its members run as separate `nn.Linear` stacks: outputs, gradients
of the weights and of the input, one member alone, and the conversions both ways."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn

from shoal.nets.ensemble import EnsembleLinear, EnsembleMLP


def _stack(widths, activation):
    layers = []
    for a, b in itertools.pairwise(widths[:-1]):
        layers += [nn.Linear(a, b), nn.ReLU() if activation == "relu" else nn.Tanh()]
    layers.append(nn.Linear(widths[-2], widths[-1]))
    return nn.Sequential(*layers).double()


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("members", [1, 2, 3])
def test_ensemble_equals_separate_mlps_forward_and_backward(members, activation):
    torch.manual_seed(0)
    widths = [7, 16, 12, 3]
    stacks = [_stack(widths, activation) for _ in range(members)]
    ensemble = EnsembleMLP(members, 7, (16, 12), 3, activation).double()
    ensemble.load_linears([[m for m in s if isinstance(m, nn.Linear)] for s in stacks])
    x = torch.randn(5, 7, dtype=torch.float64, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_(True)
    out = ensemble(x)
    ref = torch.stack([s(x_ref) for s in stacks])
    assert out.shape == (members, 5, 3)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    g = torch.randn_like(ref)
    (out * g).sum().backward()
    (ref * g).sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=1e-12, atol=1e-12)
    grads = ensemble.linear_weights()  # the weights; their gradients, laid out the same way
    for e, stack in enumerate(stacks):
        linears = [m for m in stack if isinstance(m, nn.Linear)]
        for j, (layer, lin) in enumerate(zip(ensemble.layers, linears, strict=True)):
            torch.testing.assert_close(
                layer.weight.grad[e].t(), lin.weight.grad, rtol=1e-12, atol=1e-12
            )
            torch.testing.assert_close(layer.bias.grad[e, 0], lin.bias.grad, rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(grads[e][j][0], lin.weight, rtol=0, atol=0)
            torch.testing.assert_close(grads[e][j][1], lin.bias, rtol=0, atol=0)
        torch.testing.assert_close(
            ensemble.member(x.detach(), e), stack(x.detach()), rtol=1e-12, atol=1e-12
        )


def test_per_member_inputs_and_linear_initialisation_bounds():
    torch.manual_seed(1)
    layer = EnsembleLinear(2, 64, 8)
    bound = 1 / 64**0.5
    assert layer.weight.abs().max() <= bound and layer.bias.abs().max() <= bound
    assert layer.weight.std() > bound / 3  # spread over the range, not a constant
    x = torch.randn(2, 4, 64)
    expected = torch.stack([x[e] @ layer.weight[e] + layer.bias[e] for e in range(2)])
    torch.testing.assert_close(layer(x), expected)
    # A shared [B, in] input is every member's.
    torch.testing.assert_close(layer(x[0]), torch.stack([layer.member(x[0], e) for e in range(2)]))


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="at least one member"):
        EnsembleLinear(0, 3, 3)
    with pytest.raises(ValueError, match="activation"):
        EnsembleMLP(2, 3, (4,), 1, "gelu")  # type: ignore[arg-type]
    ensemble = EnsembleMLP(2, 3, (4,), 1, "relu")
    with pytest.raises(ValueError, match="2 members of 2 layers"):
        ensemble.load_linears([[nn.Linear(3, 4), nn.Linear(4, 1)]])
