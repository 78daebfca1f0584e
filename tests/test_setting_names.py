"""One vocabulary across agents: a renamed setting's old name still works everywhere a setting
is given (a config file, a flag, a dict, a saved run's config.yaml, the config's constructor),
loads to the same config and says once what replaced it; `anneal_lr` wherever a learner has a
learning rate."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest
import yaml
from continuous_helpers import fake_batch

import shoal
from shoal import catalog, config, experiment
from shoal.agents.a3c import A3CConfig
from shoal.agents.es import ESConfig
from shoal.agents.sac import SACConfig
from shoal.agents.sac.learner import SACLearner
from shoal.agents.sac.networks import make_networks as sac_networks
from shoal.agents.td3 import TD3Config
from shoal.agents.td3.learner import TD3Learner
from shoal.agents.td3.networks import make_networks as td3_networks
from shoal.cli import main
from shoal.config import param
from shoal.errors import ConfigError, RenamedSettingWarning

NOTE = r"agent\.tau is now called target_tau \(--agent\.target-tau"


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_an_old_name_in_a_dict_a_file_and_a_flag_loads_the_same_config(algo, tmp_path):
    with pytest.warns(RenamedSettingWarning, match=NOTE):
        from_dict = experiment.resolve(algo, "Pendulum-v1", agent_overrides={"tau": 0.1})
    file = tmp_path / "c.yaml"
    file.write_text("agent:\n  tau: 0.1\n")
    with pytest.warns(RenamedSettingWarning, match=NOTE):
        from_file = experiment.resolve(algo, "Pendulum-v1", config_file=file)
    new = experiment.resolve(algo, "Pendulum-v1", agent_overrides={"target_tau": 0.1})
    assert from_dict.agent_config == from_file.agent_config == new.agent_config
    assert new.agent_config.target_tau == 0.1


def test_an_old_name_in_a_later_layer_overrides_the_new_name_in_an_earlier_one(tmp_path):
    file = tmp_path / "c.yaml"
    file.write_text("agent:\n  target_tau: 0.2\n")
    with pytest.warns(RenamedSettingWarning):
        resolved = experiment.resolve(
            "sac", "Pendulum-v1", config_file=file, agent_overrides={"tau": "0.3"}
        )
    assert resolved.agent_config.target_tau == 0.3


def test_both_names_in_one_place_are_refused():
    with pytest.raises(ConfigError, match="are one setting, target_tau"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RenamedSettingWarning)
        config.build(SACConfig, {"tau": 0.1, "target-tau": 0.2}, "agent")


def test_the_constructor_and_attributes_keep_the_old_name():
    with pytest.warns(RenamedSettingWarning, match="SACConfig: tau is now called target_tau"):
        old = SACConfig(tau=0.25)
    assert old == SACConfig(target_tau=0.25)
    with pytest.warns(RenamedSettingWarning):
        assert old.tau == 0.25
    with pytest.warns(RenamedSettingWarning):
        assert config.replace(TD3Config(), {"tau": 0.5}, "agent").target_tau == 0.5


def test_a_flag_with_the_old_name_trains_and_an_old_run_directory_resumes(tmp_path, capsys):
    runs = tmp_path / "runs"
    quiet = ["--progress", "false", "--tensorboard", "false", "--eval-episodes", "0"]
    argv = ["train", "sac", "--env", "Pendulum-v1", "--agent.tau", "0.1", "--agent.batch-size"]
    argv += ["8", "--agent.hidden-sizes", "8", "--total-steps", "16", "--runs-dir", str(runs)]
    assert main([*argv, *quiet]) == 0
    assert "shoal: note: agent.tau is now called target_tau" in capsys.readouterr().err
    (run_dir,) = runs.iterdir()
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["agent"]["target_tau"] == 0.1 and "tau" not in saved["agent"]

    # A run written before the rename holds the old name: it loads, acts and resumes.
    saved["agent"]["tau"] = saved["agent"].pop("target_tau")
    (run_dir / "config.yaml").write_text(yaml.safe_dump(saved, sort_keys=False))
    with pytest.warns(RenamedSettingWarning, match=NOTE):
        assert experiment.read_run_dir(run_dir).agent_config.target_tau == 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RenamedSettingWarning)
        policy = shoal.load(run_dir)
    assert policy is not None
    assert main(["train", "--resume", str(run_dir), "--total-steps", "32"]) == 0
    err = capsys.readouterr().err
    assert "shoal: note: agent.tau is now called target_tau" in err


def test_list_shows_the_old_name():
    (doc,) = [d for n, _, _, d in config.describe(SACConfig) if n == "target_tau"]
    assert doc.endswith("(formerly tau)")


@dataclass(frozen=True, kw_only=True)
class _Renamed:
    length: int = param(4, "a length", was=("rollout", "n_steps"))


def test_every_old_name_of_a_field_is_taken_and_noted_once_per_place():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            assert config.build(_Renamed, {"rollout": 5}, "x").length == 5
        assert config.build(_Renamed, {"n-steps": 6}, "x").length == 6
    notes = [str(w.message) for w in caught if w.category is RenamedSettingWarning]
    assert notes == [
        "x: rollout is now called length; the old name still works.",
        "x: n_steps is now called length; the old name still works.",
    ]


@pytest.mark.parametrize(
    "algo",
    ["ppo", "a2c", "a3c", "pg", "impala", "dqn", "apex", "r2d2", "agent57", "sac", "td3", "es"],
)
def test_every_agent_with_a_learning_rate_can_anneal_it(algo):
    names = {name for name, *_ in config.describe(catalog.get_agent(algo).config_cls)}
    assert {"learning_rate", "anneal_lr"} <= names


@pytest.mark.parametrize("anneal", [False, True])
def test_sac_and_td3_anneal_their_learning_rates_only_when_asked(pendulum, anneal):
    for cls, networks, learner_cls in (
        (SACConfig, sac_networks, SACLearner),
        (TD3Config, td3_networks, TD3Learner),
    ):
        agent = cls(hidden_sizes=(8, 8), batch_size=16, anneal_lr=anneal, learning_rate=1e-3)
        learner = learner_cls(pendulum, agent, networks(pendulum, agent))
        learner.update(fake_batch(pendulum), 0.75)
        rates = sorted({opt.lr for opt in learner.declared_optimizers()})
        assert rates == pytest.approx([2.5e-4 if anneal else 1e-3])


def test_a3c_and_es_keep_their_learning_rates_unless_annealed():
    assert A3CConfig().anneal_lr is False and ESConfig().anneal_lr is False
