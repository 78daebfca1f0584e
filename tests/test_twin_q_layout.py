"""The twin critics are one two-member ensemble: they equal two separate MLPs, and SAC's and
TD3's checkpoints of the earlier layout (`critic.q1.*`, `critic.q2.*`, the critic optimiser's
moments in that order) load and continue as the checkpoint's learner would."""

from __future__ import annotations

import pytest
import torch
from continuous_helpers import fake_batch
from torch import nn

from shoal.agents.continuous import TwinQ
from shoal.agents.sac import SACConfig
from shoal.agents.sac.learner import SACLearner
from shoal.agents.sac.networks import make_networks as sac_networks
from shoal.agents.td3 import TD3Config
from shoal.agents.td3.learner import TD3Learner
from shoal.agents.td3.networks import make_networks as td3_networks
from shoal.errors import ConfigError


def _old_critic(state, prefix, layers):
    """`state` (a module's state dict) with the ensemble's keys under `prefix` turned into the
    earlier layout: `q1.{2j}.weight [out, in]`, `q1.{2j}.bias [out]`, then `q2`'s."""
    out = {k: v for k, v in state.items() if not k.startswith(f"{prefix}q.")}
    for j in range(layers):
        w, b = state[f"{prefix}q.layers.{j}.weight"], state[f"{prefix}q.layers.{j}.bias"]
        for m in range(2):
            out[f"{prefix}q{m + 1}.{2 * j}.weight"] = w[m].t().clone()
            out[f"{prefix}q{m + 1}.{2 * j}.bias"] = b[m, 0].clone()
    return out


def _old_moments(flat, critic):
    """A flat moment laid out for the ensemble, back in the earlier order."""
    torso = sum(p.numel() for p in critic.torso.parameters())
    pieces, offset = {}, torso
    for j, layer in enumerate(critic.q.layers):
        for name in ("weight", "bias"):
            n = getattr(layer, name).numel()
            pieces[(j, name)] = flat[offset : offset + n].view(getattr(layer, name).shape)
            offset += n
    parts = [flat[:torso]]
    for m in range(2):
        for j in range(len(critic.q.layers)):
            parts += [pieces[(j, "weight")][m].t().reshape(-1), pieces[(j, "bias")][m].reshape(-1)]
    return torch.cat(parts)


def _old_checkpoint(state, critic):
    layers = len(critic.q.layers)
    old = dict(state)
    old["network"] = _old_critic(state["network"], "critic.", layers)
    old["target_critic"] = _old_critic(state["target_critic"], "", layers)
    optimizer = dict(state["critic_optimizer"])
    for moment in ("exp_avg", "exp_avg_sq"):
        optimizer[moment] = _old_moments(optimizer[moment], critic)
    old["critic_optimizer"] = optimizer
    return old


def test_twin_q_equals_two_separate_critics(pendulum):
    config = SACConfig(hidden_sizes=(32, 32))
    critic = TwinQ(pendulum, config).double()
    separate = [
        nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
        for _ in range(2)
    ]
    weights = [
        [(lin.weight, lin.bias) for lin in s if isinstance(lin, nn.Linear)] for s in separate
    ]
    critic.q.load_linear_weights(weights)
    separate = [s.double() for s in separate]
    obs, action = torch.randn(9, 3, dtype=torch.float64), torch.randn(9, 1, dtype=torch.float64)
    x = critic._inputs(obs, action)  # the torso's features (float32-rounded) and the action
    q1, q2 = critic(obs, action)
    torch.testing.assert_close(q1, separate[0](x).squeeze(-1), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(q2, separate[1](x).squeeze(-1), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(critic.q1_only(obs, action), q1, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_a_checkpoint_of_the_earlier_layout_loads_and_continues(pendulum, algo):
    if algo == "sac":
        config, networks, learner_cls = (
            SACConfig(hidden_sizes=(32, 32), batch_size=16),
            sac_networks,
            SACLearner,
        )
    else:
        config, networks, learner_cls = (
            TD3Config(hidden_sizes=(32, 32), batch_size=16),
            td3_networks,
            TD3Learner,
        )
    learner = learner_cls(pendulum, config, networks(pendulum, config))
    for seed in range(3):
        learner.update(fake_batch(pendulum, seed=seed), 0.0)
    state = learner.state_dict()
    old = _old_checkpoint(state, learner.net.critic)
    assert "critic.q1.0.weight" in old["network"] and "q2.4.bias" in old["target_critic"]
    # What shoal.load does with a run's network alone.
    net = networks(pendulum, config)
    net.load_state_dict(old["network"])
    for key, value in state["network"].items():
        torch.testing.assert_close(net.state_dict()[key], value, rtol=0, atol=0)
    copy = learner_cls(pendulum, config, networks(pendulum, config))
    copy.load_state_dict(old)
    for name in ("network", "target_critic", "critic_optimizer"):
        for key, value in state[name].items():
            if isinstance(value, torch.Tensor):
                torch.testing.assert_close(copy.state_dict()[name][key], value, rtol=0, atol=0)
    batch = fake_batch(pendulum, seed=9)
    torch.manual_seed(5)
    first = learner.update(batch, 0.0).metrics
    torch.manual_seed(5)
    second = copy.update(batch, 0.0).metrics
    assert first == second


def test_an_old_checkpoint_of_other_widths_is_refused_clearly(pendulum):
    config = SACConfig(hidden_sizes=(32, 32), batch_size=16)
    learner = SACLearner(pendulum, config, sac_networks(pendulum, config))
    old = _old_checkpoint(learner.state_dict(), learner.net.critic)
    wider = SACConfig(hidden_sizes=(32, 48), batch_size=16)
    other = SACLearner(pendulum, wider, sac_networks(pendulum, wider))
    with pytest.raises((ConfigError, RuntimeError), match=r"other network widths|size mismatch"):
        other.load_state_dict(old)
