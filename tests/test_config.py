from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest

from shoal.config import build, coerce, load_yaml, param, replace, to_dict
from shoal.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class Example:
    rate: float = param(0.1, "a rate")
    count: int = param(3, "a count")
    flag: bool = param(False, "a flag")
    mode: Literal["a", "b"] = param("a", "a mode")
    widths: tuple[int, ...] = param((8, 8), "widths")
    limit: float | None = param(None, "optional limit")

    def __post_init__(self) -> None:
        if self.rate <= 0:
            raise ValueError(f"rate must be > 0, got {self.rate}.")


def test_strings_from_the_command_line_become_field_types():
    config = build(
        Example,
        {
            "rate": "1e-3",
            "count": "1e5",
            "flag": "true",
            "mode": "b",
            "widths": "4,5",
            "limit": "none",
        },
    )
    assert config == Example(rate=1e-3, count=100_000, flag=True, mode="b", widths=(4, 5))


def test_unknown_key_lists_the_valid_ones_and_suggests_a_close_match():
    with pytest.raises(ConfigError) as err:
        build(Example, {"rat": 0.5}, "agent")
    message = str(err.value)
    assert "agent.rat" in message and "'rate'" in message
    assert "count, flag, limit, mode, rate, widths" in message


@pytest.mark.parametrize(
    ("key", "value"),
    [("count", "2.5"), ("flag", "maybe"), ("mode", "c"), ("rate", "fast"), ("count", True)],
)
def test_values_of_the_wrong_type_are_rejected(key, value):
    with pytest.raises(ConfigError, match=key):
        build(Example, {key: value})


def test_post_init_validation_becomes_a_config_error():
    with pytest.raises(ConfigError, match="rate must be > 0"):
        build(Example, {"rate": -1})


def test_replace_and_to_dict_round_trip():
    config = replace(Example(), {"count": 7})
    assert config.count == 7
    assert build(Example, to_dict(config)) == config


def test_optional_float_accepts_numbers_and_none():
    hint = float | None
    assert coerce(hint, "2", "x") == 2.0
    assert coerce(hint, None, "x") is None


def test_yaml_errors_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_yaml(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("agent: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_yaml(bad)
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("3\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_yaml(scalar)


def test_every_preset_builds_a_valid_config():
    from shoal import catalog
    from shoal import config as configs
    from shoal.runtime.config import RunConfig
    from shoal.runtime.program import run_layout

    checked = 0
    for algo in catalog.AGENTS:
        agent = catalog.get_agent(algo)
        for preset in catalog.presets(algo).values():
            run = configs.build(RunConfig, preset.get("run", {}), "run")
            settings = configs.build(agent.config_cls, preset.get("agent", {}), "agent")
            agent.validate(settings, run_layout(run))  # raises ValueError on a bad preset
            checked += 1
    assert checked >= 20
