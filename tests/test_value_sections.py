"""The value family's config sections: DQN's, Ape-X's, Rainbow's, R2D2's and Agent57's configs
declare their replay, priority and n-step fields once (`shoal.agents.value.config`) and keep
each section's defaults and checks."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from shoal.agents.agent57 import Agent57Config
from shoal.agents.apex import ApexConfig
from shoal.agents.dqn import DQNConfig
from shoal.agents.r2d2.config import R2D2Config
from shoal.agents.rainbow.config import RainbowConfig
from shoal.agents.value.config import (
    ConfigSection,
    NStepTargetConfig,
    ReplayConfig,
    SequenceReplayConfig,
)

CONFIGS = [DQNConfig, ApexConfig, RainbowConfig, R2D2Config, Agent57Config]
SECTIONS = [ReplayConfig, SequenceReplayConfig, NStepTargetConfig]


def _own_fields(cls: type) -> set[str]:
    return set(inspect.get_annotations(cls))


def _defaults(cls: type) -> dict[str, object]:
    return {f.name: f.default for f in dataclasses.fields(cls)}


@pytest.mark.parametrize("config_cls", CONFIGS)
def test_a_config_keeps_each_sections_default_unless_it_redeclares_the_field(
    config_cls: type,
) -> None:
    """A field inherited from a section has the default of the nearest class that declares it:
    two bases may not bring one field with two defaults (R2D2's sections), the later winning."""
    got = _defaults(config_cls)
    mro = config_cls.__mro__
    for name in got:
        declaring = next(c for c in mro if name in _own_fields(c))
        assert got[name] == _defaults(declaring)[name], (config_cls.__name__, name)


def test_the_sections_each_agent_has() -> None:
    for config_cls in (DQNConfig, ApexConfig, RainbowConfig):
        assert issubclass(config_cls, ReplayConfig) and issubclass(config_cls, NStepTargetConfig)
        assert not issubclass(config_cls, SequenceReplayConfig)
    assert issubclass(R2D2Config, SequenceReplayConfig) and issubclass(
        R2D2Config, NStepTargetConfig
    )
    assert issubclass(Agent57Config, SequenceReplayConfig)
    # Agent57 learns by Retrace: it has no n-step target, discount or Polyak rate to set.
    assert not issubclass(Agent57Config, NStepTargetConfig)
    assert not {"gamma", "n_step", "target_tau"} & set(_defaults(Agent57Config))
    # The n-step section brings only its own fields (no replay defaults of its own).
    assert set(_defaults(NStepTargetConfig)) == _own_fields(NStepTargetConfig)
    assert _defaults(ConfigSection) == {}


@pytest.mark.parametrize("config_cls", CONFIGS)
@pytest.mark.parametrize(
    ("values", "flag"),
    [
        ({"replay_capacity": 0}, "replay-capacity"),
        ({"samples_per_insert": -1.0}, "samples-per-insert"),
        ({"priority_beta": 1.5}, "priority-beta"),
        ({"priority_alpha": float("inf")}, "priority-alpha"),
        ({"min_replay_size": 10, "replay_capacity": 5}, "min-replay-size"),
    ],
)
def test_every_config_runs_the_replay_sections_checks(
    config_cls: type, values: dict[str, float], flag: str
) -> None:
    with pytest.raises(ValueError, match=flag):
        config_cls(**values)


@pytest.mark.parametrize("config_cls", [DQNConfig, RainbowConfig, R2D2Config])
def test_the_n_step_section_is_checked_where_it_is_inherited(config_cls: type) -> None:
    with pytest.raises(ValueError, match="n-step"):
        config_cls(n_step=0)
    with pytest.raises(ValueError, match="target_tau must be > 0"):
        config_cls(target_tau=0.0)
    with pytest.raises(ValueError, match="gamma"):
        config_cls(gamma=1.5)


@pytest.mark.parametrize("config_cls", [R2D2Config, Agent57Config])
def test_the_sequence_section_is_checked_in_both_sequence_agents(config_cls: type) -> None:
    with pytest.raises(ValueError, match="sequence-period"):
        config_cls(sequence_length=10, sequence_period=11)
    with pytest.raises(ValueError, match="burn-in"):
        config_cls(sequence_length=10, burn_in=10)
    with pytest.raises(ValueError, match="eta"):
        config_cls(eta=2.0)
    # A batch larger than replay is refused by the shared check, in sequences here.
    with pytest.raises(ValueError, match="exceeds replay_capacity"):
        config_cls(batch_size=64, replay_capacity=32, min_replay_size=0)
