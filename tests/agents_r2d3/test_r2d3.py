"""R2D3: the maze's scripted demonstrator and its recording, demonstrations cut into R2D2
sequences, the demo replay mixed element by element into batches (priorities back to the right
replay, snapshots), mistakes in naming a dataset, a short run, and (integration) the snake maze
learned from 10 demonstrations."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import shoal
from shoal.agents.r2d3 import R2D3Config
from shoal.agents.r2d3.demos import demo_episodes, demo_sequences
from shoal.cli import main
from shoal.data.datasets import open_dataset
from shoal.data.demos import DemoReplayTable
from shoal.envs.config import EnvConfig
from shoal.envs.maze import GridMaze, shortest_path_policy, snake_layout, snake_maze
from shoal.envs.registry import env_spec
from shoal.errors import ConfigError
from shoal.record import record_scripted
from shoal.replay import SequenceReplay

minari = pytest.importorskip("minari")
MAZE = "shoal.envs.maze:snake_maze"


def _record(root, episodes: int = 3, out: str = "maze/expert-v0"):
    act = shortest_path_policy(snake_maze())
    return record_scripted(MAZE, act, episodes, out, datasets_dir=root, name="shortest path")


def test_the_scripted_policy_takes_a_shortest_path():
    for width, corridors in ((9, 4), (3, 1), (4, 3)):
        maze = GridMaze(snake_layout(width, corridors), max_steps=200)
        act = shortest_path_policy(maze)
        obs, _ = maze.reset()
        steps, terminated = 0, False
        while not terminated:
            obs, reward, terminated, truncated, _ = maze.step(act(obs))
            steps += 1
            assert not truncated
        # Corridors of `width` cells joined by one-cell gaps: every cell but the start's once.
        assert steps == width * corridors + (corridors - 1) - 1 and reward == 1.0


def test_a_scripted_recording_reads_back_as_played(tmp_path):
    result = _record(tmp_path, episodes=2)
    dataset = open_dataset(str(result.folder))
    episodes = list(dataset.iterate_episodes())
    assert len(episodes) == 2 and result.steps == 76 and result.mean_return == 1.0
    for played, read in zip(result.episodes, episodes, strict=True):
        np.testing.assert_array_equal(np.stack(played.observations), read.observations)
        np.testing.assert_array_equal(np.stack(played.actions), read.actions)
        assert read.terminations[-1] and not read.truncations.any()
    with pytest.raises(ConfigError, match="already exists"):
        _record(tmp_path, episodes=1)


def _episode(steps: int, terminated: bool, offset: int) -> dict:
    obs = np.zeros((steps + 1, 99), np.float32)
    obs[np.arange(steps + 1), offset + np.arange(steps + 1)] = 1.0
    return {
        "obs": obs,
        "action": (offset + np.arange(steps)) % 4,
        "reward": np.r_[np.zeros(steps - 1), float(terminated)].astype(np.float32),
        "terminated": np.r_[np.zeros(steps - 1, bool), terminated],
        "truncated": np.r_[np.zeros(steps - 1, bool), not terminated],
    }


def test_demonstrations_become_sequences_with_zero_state_covering_every_step():
    config = R2D3Config(sequence_length=8, sequence_period=4, burn_in=2, n_step=2, lstm_size=5)
    episodes = [_episode(7, True, 0), _episode(5, False, 20), _episode(9, True, 40)]
    seqs = demo_sequences(episodes, config)
    entries = 7 + (5 + 1) + 9  # the truncated episode's final observation has an entry
    assert len(seqs["reward"]) == -(-entries // 4)  # one sequence every 4 entries
    assert not seqs["core_h"].any() and not seqs["core_c"].any()
    # Every step of every episode is in some sequence with its action and reward; the last
    # episode's goal step too (the stream wraps into the first episode for it).
    seen = set()
    for m in range(len(seqs["reward"])):
        for t in np.flatnonzero(seqs["acted"][m]):
            cell = int(np.argmax(seqs["obs"][m, t]))
            seen.add((cell, int(seqs["action"][m, t]), float(seqs["reward"][m, t])))
    for episode in episodes:
        for t in range(len(episode["reward"])):
            cell = int(np.argmax(episode["obs"][t]))
            assert (cell, int(episode["action"][t]), float(episode["reward"][t])) in seen
    # The truncated episode's final observation is an entry no action was taken at.
    finals = [(m, t) for m in range(len(seqs["reward"])) for t in range(8)]
    final = [(m, t) for m, t in finals if np.argmax(seqs["obs"][m, t]) == 25]
    assert final and all(not seqs["acted"][m, t] and seqs["end"][m, t] for m, t in final)
    assert seqs["first"].sum() >= 3 and seqs["reward"].sum() >= 2


def _replay(marker: float, items: int) -> SequenceReplay:
    replay = SequenceReplay(64, prioritized=True, alpha=1.0, eps=1e-6)
    replay.add({"x": np.full((items, 2), marker, np.float32)})
    return replay


def _table(ratio: float, seed: int = 0, fill: bool = True) -> DemoReplayTable:
    """20 agent items (x = 0), inserted as actors insert, and 5 demo items (x = 1)."""
    table = DemoReplayTable(
        SequenceReplay(64, {"x": ((2,), np.float32)}, prioritized=True, alpha=1.0, eps=1e-6),
        _replay(1.0, 5),
        demo_ratio=ratio,
        batch_size=16,
        samples_per_insert=1e6,
        min_size=1,
        seed=seed,
    )
    if fill:
        assert table.insert({"x": np.zeros((20, 2), np.float32)}, 0, block=False)
    return table


def test_each_batch_element_comes_from_the_demo_replay_with_the_demo_ratio():
    for ratio in (0.0, 1.0):
        batch = _table(ratio).sample(0.0, 0.0)
        assert np.all(batch.data["x"][:, 0] == ratio) and np.all(batch.data["demo"] == ratio)
    table, demo = _table(0.25, seed=3), 0
    for _ in range(200):
        batch = table.sample(0.0, 0.0)
        np.testing.assert_array_equal(batch.data["demo"], batch.data["x"][:, 0] == 1.0)
        demo += int(batch.data["demo"].sum())
    # 3200 Bernoulli(0.25) draws: mean 800, standard deviation 24.5.
    assert 700 < demo < 900 and table.stats()["demo_sampled"] == demo


def test_priorities_go_back_to_the_replay_each_element_came_from(tmp_path):
    table = _table(0.5, seed=1)
    batch = table.sample(0.0, 0.0)
    agent = int((~batch.data["demo"]).sum())
    assert 0 < agent < 16
    priorities = np.where(batch.data["demo"], 100.0, 1e-3)
    table.after_update(batch, priorities, 1)
    demo_ids = np.unique(batch.data["indices"][agent:])
    agent_ids = np.unique(batch.data["indices"][:agent])
    assert table.demos.priority_total == pytest.approx(100.0 * len(demo_ids) + 5 - len(demo_ids))
    assert table.replay.priority_total == pytest.approx(1e-3 * len(agent_ids) + 20 - len(agent_ids))
    # A snapshot holds the agent replay; the demo replay is made again from the dataset.
    table.write_snapshot(tmp_path / "table.npz")
    again = _table(0.5, seed=1, fill=False)
    assert again.read_snapshot(tmp_path / "table.npz") == 20
    assert again.replay.priority_total == pytest.approx(table.replay.priority_total)
    assert again.demos.priority_total == pytest.approx(5.0)


def test_r2d3_names_what_to_pass_and_runs(tmp_path, minari_root, quiet_run, capsys):
    runs = ["--runs-dir", str(tmp_path / "runs"), "--progress", "false"]
    assert main(["train", "r2d3", "--env", MAZE, *runs]) == 2
    assert "pass --dataset" in capsys.readouterr().err
    folder = _record(minari_root, episodes=2).folder
    assert main(["train", "r2d3", "--env", "CartPole-v1", "--dataset", str(folder), *runs]) == 2
    assert not (tmp_path / "runs").exists()  # nothing was written
    capsys.readouterr()
    spec = env_spec(MAZE, EnvConfig())
    sequences = demo_sequences(demo_episodes(open_dataset("maze/expert-v0"), spec), R2D3Config())
    assert len(sequences["reward"]) == -(-76 // 10) and sequences["reward"].sum() >= 2
    result = shoal.train(
        "r2d3",
        MAZE,
        agent={"dataset": "maze/expert-v0", "demo_ratio": 0.5, "min_replay_size": 8},
        run={**quiet_run, "total_steps": 1200, "num_envs": 4},
    )
    lines = (Path(result.run_dir) / "metrics.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    learned = [row for row in rows if "demo_fraction" in row]
    assert learned and learned[-1]["demo_size"] == len(sequences["reward"])
    assert learned[-1]["demo_sampled"] > 0


@pytest.mark.integration
def test_r2d3_solves_the_snake_maze_from_ten_demonstrations(tmp_path, quiet_run):
    folder = _record(tmp_path / "datasets", episodes=10).folder
    # The preset: 200k steps, demo_ratio 1/4 (benchmarks/r2d3_maze.py: 1.0 on seeds 0-2, first
    # at 100k-160k steps; R2D2 without the demonstrations is never rewarded).
    result = shoal.train("r2d3", MAZE, seed=0, agent={"dataset": str(folder)}, run=quiet_run)
    assert result.evaluation.mean_return == 1.0


@pytest.mark.distributed
@pytest.mark.timeout(900)
@pytest.mark.integration
def test_r2d3_runs_on_ray_with_two_replay_shards(ray_cluster, tmp_path, quiet_run):
    """Each shard reads the dataset and holds the whole demo replay; batches mix demos in."""
    folder = _record(tmp_path / "datasets", episodes=2).folder
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 2, "replay_shards": 2}
    run |= {"eval_episodes": 1}
    agent = {"dataset": str(folder), "demo_ratio": 0.5, "min_replay_size": 8}
    result = shoal.train("r2d3", MAZE, seed=0, total_steps=2_000, agent=agent, run=run)
    assert result.env_steps >= 2_000 and result.summary["updates"] > 0
    lines = (Path(result.run_dir) / "metrics.jsonl").read_text().splitlines()
    learned = [row for row in map(json.loads, lines) if "demo_sampled" in row]
    assert learned and learned[-1]["demo_sampled"] > 0 and learned[-1]["demo_size"] == 8
