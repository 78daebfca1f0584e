"""R2D3's network: R2D2's LSTM Q-network (`shoal.agents.value.recurrent`)."""

from __future__ import annotations

from shoal.agents.r2d3.config import R2D3Config
from shoal.agents.value.recurrent import R2D2Net, check_fits
from shoal.envs.spec import EnvSpec


def make_networks(spec: EnvSpec, config: R2D3Config) -> R2D2Net:
    net = R2D2Net(spec, config)
    check_fits(net, spec)
    return net
