"""Tests for shoal.nets.noisy: Fortunato et al. 2018's initialisation, factorised noise drawn
anew at each training forward pass, mean weights in eval mode, and the dueling C51 head."""

from __future__ import annotations

import math

import pytest
import torch

from shoal.nets import DuelingQHead, NoisyLinear, mean_weights, noisy_layers


def test_init_ranges_follow_section_3_2():
    torch.manual_seed(0)
    layer = NoisyLinear(64, 300, sigma_0=0.5)
    bound = 1 / math.sqrt(64)
    for mu in (layer.weight_mu, layer.bias_mu):
        assert float(mu.abs().max()) <= bound
        assert float(mu.abs().max()) > 0.95 * bound  # uniform over the whole range
        assert abs(float(mu.std()) - bound / math.sqrt(3)) < 0.05 * bound  # U[-b, b]
    for sigma in (layer.weight_sigma, layer.bias_sigma):
        torch.testing.assert_close(sigma, torch.full_like(sigma, 0.5 / math.sqrt(64)))
    assert set(layer.state_dict()) == {"weight_mu", "weight_sigma", "bias_mu", "bias_sigma"}


def test_noise_is_factorised_and_scaled_by_f():
    torch.manual_seed(1)
    layer = NoisyLinear(5, 4)
    layer(torch.zeros(1, 5))
    weight, bias = layer.noisy_weight()
    noise_w = (weight - layer.weight_mu) / layer.weight_sigma
    noise_b = (bias - layer.bias_mu) / layer.bias_sigma
    # ε^w_ij = f(ε_i) f(ε_j) and ε^b_j = f(ε_j): the weight noise is an outer product of rank 1
    # whose output factor is the bias noise.
    torch.testing.assert_close(noise_w, torch.outer(noise_b, layer.epsilon_in))
    assert torch.linalg.matrix_rank(noise_w.detach()) == 1
    # f(x) = sgn(x) √|x| of standard normals: E f(ε)^2 = E|ε| = √(2/π).
    torch.manual_seed(2)
    big = NoisyLinear(20_000, 1)
    big.reset_noise()
    assert abs(float(big.epsilon_in.square().mean()) - math.sqrt(2 / math.pi)) < 0.02


def test_training_forward_redraws_the_noise_and_eval_uses_the_means():
    torch.manual_seed(3)
    layer = NoisyLinear(8, 3)
    x = torch.randn(10, 8)
    first, second = layer(x), layer(x)
    assert not torch.allclose(first, second)  # new noise each forward pass in training
    mean = torch.nn.functional.linear(x, layer.weight_mu, layer.bias_mu)
    layer.eval()
    torch.testing.assert_close(layer(x), mean)
    torch.testing.assert_close(layer(x), layer(x))
    layer.train()
    with mean_weights(layer):
        torch.testing.assert_close(layer(x), mean)
    assert layer.training and not torch.allclose(layer(x), mean)


def test_gradients_reach_means_and_scales_and_two_passes_backpropagate():
    layer = NoisyLinear(4, 2)
    x = torch.randn(3, 4)
    loss = layer(x).sum() + layer(x).sum()  # two noise draws in one graph
    loss.backward()
    for p in layer.parameters():
        assert p.grad is not None and bool(p.grad.abs().sum() > 0)


def test_dueling_c51_head_combines_value_and_advantage_atom_by_atom():
    torch.manual_seed(4)
    head = DuelingQHead(16, 3, hidden=32, atoms=7, noisy=True)
    assert len(noisy_layers(head)) == 4
    features = torch.randn(5, 16)
    head.eval()
    logits = head(features)
    assert logits.shape == (5, 3, 7)
    value, advantage = head.streams(features)
    assert value.shape == (5, 7) and advantage.shape == (5, 3, 7)
    expected = value[:, None] + advantage - advantage.mean(1, keepdim=True)
    torch.testing.assert_close(logits, expected)
    plain = DuelingQHead(16, 3, hidden=32)
    assert plain(features).shape == (5, 3) and not noisy_layers(plain)
    with pytest.raises(ValueError, match="atoms"):
        DuelingQHead(16, 3, atoms=0)
    with pytest.raises(ValueError, match="sigma_0"):
        NoisyLinear(3, 3, sigma_0=0.0)
