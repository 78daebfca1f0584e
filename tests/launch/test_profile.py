"""Role profiles: `shoal train ... --runtime ray --profile FILE` in place of the per-role flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoal import api, experiment
from shoal.cli import main
from shoal.runtime.profile import ROLES, load_profile, merge_profile

EXAMPLE = Path(__file__).parents[2] / "examples" / "profiles" / "cluster.yaml"


def _profile(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    return path


def test_the_example_sets_every_role_and_the_run_takes_it():
    fields = load_profile(EXAMPLE)
    assert fields["runtime"] == "ray"
    assert {k: fields[k] for k in ("actors", "actor_cpus", "num_envs")} == {
        "actors": 32,
        "actor_cpus": 1.0,
        "num_envs": 16,
    }
    assert fields["learner_gpus"] == 1.0 and fields["learner_resources"] == "gpu_node=1"
    assert fields["replay_shards"] == 4 and fields["replay_memory_mb"] == 16000
    assert fields["inference"] == "actor"
    resolved = experiment.resolve("apex", "CartPole-v1", run_overrides=fields)
    assert resolved.run.replay_resources == "big_memory=1"
    assert resolved.run.actor_memory_mb == 2048 and resolved.run.learner_cpus == 4.0


def test_every_profile_key_is_a_run_setting():
    fields = {f for keys in ROLES.values() for f in keys.values()}
    from dataclasses import fields as dataclass_fields

    from shoal.runtime.config import RunConfig

    assert fields <= {f.name for f in dataclass_fields(RunConfig)}


def test_the_command_line_passes_the_profile_to_the_run(tmp_path, monkeypatch, capsys):
    seen = {}

    def fake_train(*args, **kwargs):
        seen.update(kwargs["run"])
        raise api.ConfigError("stop here")

    monkeypatch.setattr(api, "train", fake_train)
    path = _profile(tmp_path, "actors: {count: 3, cpus: 0.5}\nlearner: {cpus: 2}\n")
    code = main(["train", "ppo", "--env", "CartPole-v1", "--profile", str(path), "--seed", "1"])
    assert code == 2 and "stop here" in capsys.readouterr().err
    assert seen == {"runtime": "ray", "actors": 3, "actor_cpus": 0.5, "learner_cpus": 2.0}


@pytest.mark.parametrize(
    ("text", "flags", "message"),
    [
        ("actor: {count: 2}\n", [], "Unknown role 'actor' in profile"),
        ("actors: {cpu: 2}\n", [], "Unknown key actors.cpu in profile"),
        ("inference: {gpus: 1}\n", [], "runs in the learner's process"),
        ("actors: {count: 0}\n", [], "actors.count=0 must be a whole number > 0"),
        ("actors: {cpus: -1}\n", [], "actors.cpus=-1 must be a finite number >= 0"),
        ("learner: {gpus: .nan}\n", [], "learner.gpus"),
        ("actors: {count: many}\n", [], "actors.count"),
        ("actors: {resources: {cpu_node: -1}}\n", [], "actors.resources"),
        ("actors: 4\n", [], "role 'actors' must map keys to values"),
        ("learner: {device: cuda}\n", [], "learner_device cuda on ray needs --learner-gpus"),
        ("actors: {count: 2}\n", ["--actors", "4"], "--actors 4 and --profile"),
        ("actors: {count: 2}\n", ["--runtime", "inline"], "needs --runtime ray"),
        ("- a\n- b\n", [], "must hold a mapping"),
    ],
)
def test_profile_mistakes_exit_2_with_one_paragraph(tmp_path, capsys, text, flags, message):
    path = _profile(tmp_path, text)
    runs = tmp_path / "runs"
    code = main(
        [
            *("train", "ppo", "--env", "CartPole-v1", "--profile", str(path)),
            *("--runs-dir", str(runs), *flags),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not runs.exists()


def test_a_missing_profile_file_is_named(tmp_path, capsys):
    code = main(["train", "ppo", "--env", "CartPole-v1", "--profile", str(tmp_path / "no.yaml")])
    assert code == 2 and "does not exist" in capsys.readouterr().err


def test_runtime_ray_given_twice_is_no_conflict():
    merged = merge_profile({"runtime": "ray", "seed": 1}, {"runtime": "ray", "actors": 2}, "p")
    assert merged == {"runtime": "ray", "seed": 1, "actors": 2}
