"""The actor-critic family's config section (`shoal.agents.actor_critic.config`): every family
agent's config inherits it, keeps its defaults, its old setting name `rollout_length` and the
section's checks, each naming the flag that fixes it."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from shoal import catalog, experiment
from shoal.agents.actor_critic import (
    ActorCriticConfig,
    GAEConfig,
    LossWeightsConfig,
    LSTMConfig,
    ObservationNormConfig,
)
from shoal.errors import RenamedSettingWarning

FAMILY = ["ppo", "a2c", "a3c", "pg", "trpo"]

# A2C's and A3C's defaults (Mnih et al. 2016, with Adam), the section's own.
MNIH = {
    "learning_rate": 7e-4,
    "anneal_lr": False,
    "unroll_length": 5,
    "normalize_advantages": False,
    "value_coef": 0.5,
    "entropy_coef": 0.01,
    "max_grad_norm": 0.5,
    "shared_torso": None,
}
# The defaults of the settings the section declares, as each agent had them before it
# inherited the section (its paper's or sb3's); a section default must not leak into an agent
# whose paper differs.
DEFAULTS = {
    "ppo": {
        "learning_rate": 3e-4,
        "anneal_lr": True,
        "unroll_length": 128,
        "normalize_advantages": True,
        "gae_lambda": 0.95,
        "value_coef": 0.5,
        "entropy_coef": 0.0,
        "max_grad_norm": 0.5,
        "shared_torso": None,
    },
    "a2c": MNIH,
    "a3c": MNIH,
    "pg": {
        "learning_rate": 1e-3,
        "anneal_lr": False,
        "unroll_length": 256,
        "normalize_advantages": True,
        "value_coef": 0.5,
        "entropy_coef": 0.0,
        "max_grad_norm": 0.0,
        "shared_torso": None,
    },
    "trpo": {
        "learning_rate": 1e-3,
        "anneal_lr": False,
        "unroll_length": 2048,
        "normalize_advantages": True,
        "gae_lambda": 0.95,
        "shared_torso": False,
    },
}
SECTIONS = {
    "ppo": {ObservationNormConfig, GAEConfig, LossWeightsConfig, LSTMConfig},
    "a2c": {ObservationNormConfig, LossWeightsConfig, LSTMConfig},
    "a3c": {LossWeightsConfig, LSTMConfig},
    "pg": {ObservationNormConfig, LossWeightsConfig},
    "trpo": {ObservationNormConfig, GAEConfig},
}


def _config_cls(algo: str) -> type:
    return catalog.get_agent(algo).config_cls


@pytest.mark.parametrize("algo", FAMILY)
def test_each_agent_inherits_the_section_its_settings_and_its_defaults(algo):
    cls = _config_cls(algo)
    names = {f.name for f in dataclasses.fields(cls)}
    sections = (ActorCriticConfig, ObservationNormConfig, GAEConfig, LossWeightsConfig, LSTMConfig)
    assert {s for s in sections if issubclass(cls, s)} == {ActorCriticConfig, *SECTIONS[algo]}
    for section in sections:
        # An agent has a section's settings exactly when it inherits the section.
        declared = {f.name for f in dataclasses.fields(section)}
        assert issubclass(cls, section) == (declared <= names)
    config = cls()
    assert {k: getattr(config, k) for k in DEFAULTS[algo]} == DEFAULTS[algo]
    # The network's shared settings, alike in every agent of the family.
    assert (config.gamma, config.hidden_sizes, config.activation) == (0.99, (64, 64), "tanh")
    assert (config.torso, config.init_log_std) == ("auto", 0.0)


@pytest.mark.parametrize("algo", FAMILY)
def test_only_ppo_scales_rewards_and_a3c_normalises_no_observations(algo):
    cls = _config_cls(algo)
    names = {f.name for f in dataclasses.fields(cls)}
    assert ("normalize_reward" in names) == (algo == "ppo")
    assert ("normalize_obs" in names) == (algo != "a3c")
    # Off where the agent has no such setting: `ActorCritic` reads both.
    assert cls().normalize_reward is False and cls().normalize_obs is False


@pytest.mark.parametrize("algo", FAMILY)
def test_the_old_name_rollout_length_works_in_the_constructor_and_a_config_file(algo, tmp_path):
    cls = _config_cls(algo)
    with pytest.warns(RenamedSettingWarning, match="rollout_length is now called unroll_length"):
        assert cls(rollout_length=320) == cls(unroll_length=320)
    file = tmp_path / "c.yaml"
    file.write_text("agent:\n  rollout_length: 320\n")
    with pytest.warns(RenamedSettingWarning, match="rollout_length is now called unroll_length"):
        from_file = experiment.resolve(algo, "CartPole-v1", config_file=file)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RenamedSettingWarning)
        new = experiment.resolve(algo, "CartPole-v1", agent_overrides={"unroll_length": 320})
    assert from_file.agent_config == new.agent_config
    assert new.agent_config.unroll_length == 320


BAD = [
    ("learning_rate", 0.0, "learning-rate"),
    ("unroll_length", 0, "unroll-length"),
    ("gamma", 1.5, "gamma"),
    ("hidden_sizes", (), "hidden-sizes"),
    ("gae_lambda", -0.1, "gae-lambda"),
    ("value_coef", -1.0, "value-coef"),
    ("entropy_coef", float("inf"), "entropy-coef"),
    ("max_grad_norm", -0.5, "max-grad-norm"),
    ("lstm_size", 0, "lstm-size"),
]


@pytest.mark.parametrize(
    ("algo", "setting", "value", "flag"),
    [
        (algo, *bad)
        for algo in FAMILY
        for bad in BAD
        if bad[0] in {f.name for f in dataclasses.fields(_config_cls(algo))}
    ],
)
def test_a_bad_shared_setting_is_refused_naming_its_flag(algo, setting, value, flag):
    with pytest.raises(ValueError, match=rf"^{setting} must .*--agent\.{flag}"):
        _config_cls(algo)(**{setting: value})
