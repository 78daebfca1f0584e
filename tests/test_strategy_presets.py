"""The presets of the other execution strategies (issue 18): ES and ARS for Pendulum and the MuJoCo
v5 tasks, A2C and A3C for MinAtar. Each resolves as `shoal train ALGO --env ID` resolves it,
and its network and acting policy build for the env and act on one observation."""

from __future__ import annotations

import numpy as np
import pytest

from shoal import catalog
from shoal.agents.base import StepInputs
from shoal.experiment import resolve, spec_of

MINATAR = ["minatar:asterix", "minatar:breakout", "minatar:freeway", "minatar:seaquest"]
MINATAR += ["minatar:space_invaders"]
CONTROL = ["Pendulum-v1", "Swimmer-v5", "Hopper-v5", "HalfCheetah-v5"]
CASES = [(algo, env) for algo in ("es", "ars") for env in CONTROL]
CASES += [(algo, env) for algo in ("a2c", "a3c") for env in MINATAR]


@pytest.mark.parametrize(("algo", "env"), CASES)
def test_the_preset_resolves_builds_and_acts(algo, env):
    if env.startswith("minatar:"):
        pytest.importorskip("minatar")
    else:
        pytest.importorskip("mujoco") if env != "Pendulum-v1" else None
    preset = catalog.presets(algo).get(env)
    assert preset is not None, f"no {algo} preset for {env}"
    resolved = resolve(algo, env)
    # The preset's settings are the ones resolved (nothing given on top of them).
    for key, value in preset.get("agent", {}).items():
        got = getattr(resolved.agent_config, key)
        assert (list(got) if isinstance(got, tuple) else got) == value, key
    for key, value in preset.get("run", {}).items():
        assert getattr(resolved.run, key) == value, key
    spec = spec_of(resolved)
    agent = resolved.agent
    net = agent.make_networks(spec, resolved.agent_config)
    # ES/ARS check here that the noise table holds a perturbation of the whole network.
    policy = agent.make_policy(spec, resolved.agent_config, net, 0, None)
    obs = spec.observation_space.sample()[None]
    slots = np.zeros(1, np.int64)
    inputs = StepInputs(
        first=np.ones(1, bool),
        prev_action=np.zeros((1, *spec.action_space.shape), spec.action_space.dtype),
        prev_reward=np.zeros(1, np.float32),
        slot=slots,
        steps=np.zeros(1, np.int64),
    )
    step = policy.step(obs, policy.initial_state(slots), inputs, "train")
    action = step.env_action if step.env_action is not None else step.action
    assert spec.action_space.contains(np.asarray(action[0], spec.action_space.dtype))
