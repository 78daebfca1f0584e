"""`shoal record`: a run's policy played into a Minari dataset that Minari's own `load_dataset`
reads back as played, checked against an independent replay of each episode; its mistakes are
one-paragraph errors with exit code 2."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import shoal
from shoal.cli import main
from shoal.record import record

minari = pytest.importorskip("minari")


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    """A short PPO run on CartPole (its policy plays episodes of a few dozen steps)."""
    runs = tmp_path_factory.mktemp("runs")
    result = shoal.train(
        "ppo",
        "CartPole-v1",
        total_steps=512,
        run={"runs_dir": str(runs), "progress": False, "tensorboard": False, "eval_episodes": 0},
    )
    return result.run_dir


def _replay(run_dir, seed):
    """The episode the run's greedy policy plays from `reset(seed=seed)`, stepped here on
    gymnasium's own CartPole, not through shoal's recorder."""
    policy = shoal.load(run_dir)
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=seed)
    observations, actions, rewards, terminations, truncations = [obs], [], [], [], []
    done = False
    while not done:
        action = int(policy.act(obs))
        obs, reward, terminated, truncated, _ = env.step(action)
        observations.append(obs)
        actions.append(action)
        rewards.append(reward)
        terminations.append(terminated)
        truncations.append(truncated)
        done = terminated or truncated
    return observations, actions, rewards, terminations, truncations


def test_a_recorded_dataset_reads_back_in_minari_as_played(ppo_run, minari_root, capsys):
    code = main(
        [
            "record",
            str(ppo_run),
            "--episodes",
            "3",
            "--out",
            "cartpole/ppo-v0",
            "--seed",
            "7",
        ]
    )
    assert code == 0
    out, err = capsys.readouterr()
    assert "cartpole/ppo-v0" in out and "shoal train bc --env CartPole-v1 --dataset" in out
    assert "episode 3 (seed 9)" in err  # progress, one line per episode
    dataset = minari.load_dataset("cartpole/ppo-v0")  # Minari's own reader
    assert dataset.total_episodes == 3
    assert dataset.env_spec.id == "CartPole-v1"
    assert dataset.observation_space == gym.make("CartPole-v1").observation_space
    seeds = [meta["seed"] for meta in dataset.storage.get_episode_metadata(range(3))]
    assert seeds == [7, 8, 9]
    for seed, episode in zip(seeds, dataset.iterate_episodes(), strict=True):
        observations, actions, rewards, terminations, truncations = _replay(ppo_run, seed)
        assert len(episode) == len(actions) > 0
        np.testing.assert_array_equal(episode.observations, np.stack(observations))
        assert episode.observations.dtype == np.float32
        np.testing.assert_array_equal(episode.actions, np.asarray(actions))
        np.testing.assert_array_equal(episode.rewards, np.asarray(rewards))
        np.testing.assert_array_equal(episode.terminations, np.asarray(terminations))
        np.testing.assert_array_equal(episode.truncations, np.asarray(truncations))
        assert episode.terminations[-1] or episode.truncations[-1]
    assert dataset.total_steps == sum(len(e) for e in dataset.iterate_episodes())


def test_recording_mistakes_are_one_paragraph_with_exit_code_2(ppo_run, minari_root, capsys):
    assert (
        main(["record", str(ppo_run.parent / "nope"), "--episodes", "2", "--out", "ns/data-v0"])
        == 2
    )
    assert "No such run directory" in capsys.readouterr().err
    assert main(["record", str(ppo_run), "--episodes", "2", "--out", "no version"]) == 2
    assert "not a Minari dataset id" in capsys.readouterr().err
    assert main(["record", str(ppo_run), "--episodes", "0", "--out", "ns/data-v0"]) == 2
    assert "--episodes" in capsys.readouterr().err
    record(ppo_run, 1, "ns/data-v0")
    assert main(["record", str(ppo_run), "--episodes", "1", "--out", "ns/data-v0"]) == 2
    assert "never overwritten" in capsys.readouterr().err
    with pytest.raises(SystemExit) as help_exit:
        main(["record", "--help"])
    assert help_exit.value.code == 0
    assert "--episodes" in capsys.readouterr().out
