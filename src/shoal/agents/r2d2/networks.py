"""R2D2's network: the value family's LSTM Q-network (`shoal.agents.value.recurrent`)."""

from __future__ import annotations

from shoal.agents.value.recurrent import R2D2Net, check_fits
from shoal.agents.value.recurrent_config import R2D2Config
from shoal.envs.spec import EnvSpec


def make_networks(spec: EnvSpec, config: R2D2Config) -> R2D2Net:
    net = R2D2Net(spec, config)
    check_fits(net, spec)
    return net


__all__ = ["R2D2Net", "check_fits", "make_networks"]
