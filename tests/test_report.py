"""`shoal report`: final scores per env and aggregate human-normalised Atari scores."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from run_dirs import rows, write_run

from shoal.analysis.report import atari_normalized, build_report
from shoal.analysis.stats import AGGREGATES, stratified_bootstrap
from shoal.cli import main

# A fixture table of random and human scores for four games (not the real one), so the
# aggregates are checked by hand independently of shoal.envs.atari_scores.
FIXTURE_TABLE = {
    "ALE/GameA-v5": (0.0, 100.0),
    "ALE/GameB-v5": (-10.0, 10.0),
    "ALE/GameC-v5": (50.0, 250.0),
    "ALE/GameD-v5": (1.0, 3.0),
}
RAW = {  # three seeds per game, final evaluations
    "ALE/GameA-v5": [10.0, 50.0, 120.0],
    "ALE/GameB-v5": [0.0, 5.0, -10.0],
    "ALE/GameC-v5": [250.0, 450.0, 150.0],
    "ALE/GameD-v5": [2.0, 2.5, 9.0],
}


def fixture_normalized(env: str, score: float) -> float | None:
    if env not in FIXTURE_TABLE:
        return None
    random, human = FIXTURE_TABLE[env]
    return (score - random) / (human - random)


@pytest.fixture
def atari_runs(tmp_path):
    runs = tmp_path / "runs"
    for env, scores in RAW.items():
        for seed, score in enumerate(scores):
            write_run(runs, f"{env[4:9]}-{seed}", env=env, seed=seed, evaluation=score)
    return runs


def test_human_normalised_score_of_a_pong_run_equals_the_hand_computation(tmp_path):
    # Pong in the table: random -20.7, human 14.6 (DQN Nature's values, in every later table).
    run = write_run(tmp_path, "pong", algo="impala", env="ALE/Pong-v5", evaluation=10.0)
    report = build_report([run], reps=100)
    (pong,) = report.envs
    assert pong.normalized[0] == pytest.approx((10.0 + 20.7) / (14.6 + 20.7), abs=1e-12)
    assert "| ALE/Pong-v5 | impala | 1 | 10.00 [10.00, 10.00] |" in report.markdown()
    assert "| 0.870 |" in report.markdown()
    # The same game under its v4 id; other envs have no human score.
    assert atari_normalized("PongNoFrameskip-v4", 10.0) == pong.normalized[0]
    assert atari_normalized("CartPole-v1", 10.0) is None


def test_aggregates_across_games_match_the_hand_computation(atari_runs):
    report = build_report([atari_runs], reps=1_000, seed=3, normalize=fixture_normalized)
    normalized = {env: [fixture_normalized(env, s) for s in scores] for env, scores in RAW.items()}
    # GameA: 0.1 0.5 1.2; GameB: 0.5 0.75 0; GameC: 1 2 0.5; GameD: 0.5 0.75 4.
    assert normalized["ALE/GameB-v5"] == [0.5, 0.75, 0.0]
    pooled = sorted(x for game in normalized.values() for x in game)
    game_means = sorted(math.fsum(g) / 3 for g in normalized.values())
    by_hand = {
        "IQM": math.fsum(pooled[3:9]) / 6,  # 12 runs: the middle 6
        "median": (game_means[1] + game_means[2]) / 2,
        "mean": math.fsum(game_means) / 4,
    }
    (aggregate,) = report.aggregates
    assert (aggregate.algo, aggregate.games, aggregate.runs) == ("ppo", 4, 12)
    for name, value in by_hand.items():
        estimate = aggregate.estimates[name]
        assert estimate.value == pytest.approx(value, abs=1e-12)
        # The interval is the stratified bootstrap of these games' normalised scores.
        expected = stratified_bootstrap(
            list(normalized.values()), AGGREGATES[name], reps=1_000, seed=3
        )
        assert (estimate.low, estimate.high) == pytest.approx((expected.low, expected.high))
        assert estimate.low < value < estimate.high


def test_per_env_rows_say_where_scores_come_from(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "a0", env="A-v0", seed=0, evaluation=4.0, rows=rows([100], [1.0]))
    write_run(runs, "a1", env="A-v0", seed=1, evaluation=6.0)
    write_run(runs, "b0", env="B-v0", seed=0, rows=rows([100, 200], [1.0, 3.0]))
    write_run(runs, "c0", env="C-v0", seed=0, evaluation=2.0)
    write_run(runs, "c1", env="C-v0", seed=1, rows=rows([100, 200], [5.0, None]))
    report = build_report([runs], reps=200)
    by_env = {e.env: e for e in report.envs}
    assert by_env["A-v0"].scores.tolist() == [4.0, 6.0]
    assert by_env["A-v0"].source == "final evaluation"
    assert by_env["A-v0"].mean.value == 5.0 and by_env["A-v0"].mean.low >= 4.0
    assert by_env["B-v0"].scores.tolist() == [3.0]  # the last logged training mean
    assert by_env["B-v0"].source == "last training episodes"
    assert by_env["C-v0"].scores.tolist() == [2.0, 5.0]  # the last row with a return
    assert by_env["C-v0"].source == "mixed: final evaluation, last training episodes"
    assert all(e.normalized is None for e in report.envs)
    assert "No Atari-57 game among these runs" in report.markdown()


def test_the_newest_atari_protocol_evaluation_comes_first(tmp_path):
    run = write_run(tmp_path, "pong", env="ALE/Pong-v5", evaluation=10.0, rows=rows([8], [1.0]))
    (run / "evaluations").mkdir()
    for steps, score in [(900, -3.0), (12_000, 4.5), (1_000, 2.0)]:  # written as shoal eval does
        record = {"env_id": "ALE/Pong-v5", "checkpoint_steps": steps, "mean_score": score}
        (run / "evaluations" / f"atari-step-{steps:012d}.json").write_text(json.dumps(record))
    (pong,) = build_report([run], reps=50).envs
    assert pong.scores.tolist() == [4.5] and pong.source == "no-op starts protocol"
    assert pong.normalized[0] == pytest.approx((4.5 + 20.7) / 35.3)


def test_cli_prints_and_writes_the_same_markdown(tmp_path, capsys):
    runs = tmp_path / "runs"
    for game, scores in {"Pong": [-5.0, 3.0], "Breakout": [20.0, 35.0]}.items():
        for seed, score in enumerate(scores):
            write_run(runs, f"{game}-{seed}", env=f"ALE/{game}-v5", seed=seed, evaluation=score)
    write_run(runs, "cartpole", env="CartPole-v1", evaluation=500.0)
    out = tmp_path / "report.md"
    assert main(["report", str(runs), "-o", str(out), "--reps", "500"]) == 0
    printed = capsys.readouterr().out
    assert out.read_text() == printed
    lines = printed.splitlines()
    assert "| algo | games | runs | median | IQM | mean |" in lines
    (row,) = [line for line in lines if line.startswith("| ppo | 2 | 4 |")]  # CartPole: no
    assert len(row.split("|")) == 8 and row.count("[") == 3
    assert any(line.startswith("| CartPole-v1 | ppo | 1 | 500.00 ") for line in lines)


def test_a_game_outside_the_57_has_no_normalised_score(tmp_path):
    run = write_run(tmp_path, "adv", env="ALE/Adventure-v5", evaluation=0.0)
    (env,) = build_report([run], reps=50).envs
    assert env.normalized is None


def test_user_mistakes_are_one_paragraph_and_write_nothing(tmp_path, capsys):
    out = tmp_path / "report.md"
    empty = write_run(tmp_path / "runs", "empty")
    cases = [
        (["report", str(tmp_path / "none")], "does not exist"),
        (["report", str(empty), "-o", str(out)], "has no score yet"),
        (["report", str(empty), "-o", str(tmp_path / "report.html")], ".md"),
        (["report", str(empty), "--reps", "0"], "--reps must be a positive"),
        (["report", str(empty), "--seed", "-1"], "--seed a number >= 0"),
    ]
    for argv, phrase in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("shoal: error: ") and phrase in err and "Traceback" not in err
    assert not out.exists() and not (tmp_path / "report.html").exists()


def test_numbers_in_the_table_are_the_estimates(atari_runs):
    report = build_report([atari_runs], reps=300, normalize=fixture_normalized)
    text = report.markdown()
    iqm = report.aggregates[0].estimates["IQM"]
    assert f"{iqm.value:.3f} [{iqm.low:.3f}, {iqm.high:.3f}]" in text
    game_a = next(e for e in report.envs if e.env == "ALE/GameA-v5")
    assert game_a.normalized.tolist() == pytest.approx([0.1, 0.5, 1.2])
    assert f"| {np.mean([0.1, 0.5, 1.2]):.3f} |" in text


def test_runs_with_other_settings_are_not_seeds_of_one_row(tmp_path):
    # Issue 35, item 10: two learning rates with the same seed were "2 seeds" of one row.
    runs = tmp_path / "runs"
    write_run(runs, "lr1", agent={"learning_rate": 0.001}, evaluation=100.0)
    write_run(runs, "lr2", agent={"learning_rate": 0.002}, evaluation=300.0)
    # Bookkeeping (where it logged, how often) does not part seeds.
    write_run(runs, "lr1-s1", seed=1, agent={"learning_rate": 0.001}, evaluation=200.0,
              run_settings={"log_interval": 5, "runs_dir": "/elsewhere"})  # fmt: skip
    report = build_report([runs], reps=100)
    rows = {e.settings: (e.seeds, e.scores.tolist()) for e in report.envs}
    assert rows == {
        ("agent.learning_rate=0.001",): ([0, 1], [100.0, 200.0]),
        ("agent.learning_rate=0.002",): ([0], [300.0]),
    }
    text = report.markdown()
    assert "| CartPole-v1 | ppo [agent.learning_rate=0.002] | 1 | 300.00 [300.00, 300.00] |" in text


def test_unfinished_and_empty_runs_are_noted_not_fatal(tmp_path, capsys):
    # Issue 35, item 10: one run without a score aborted the report.
    runs = tmp_path / "runs"
    write_run(runs, "done", seed=0, evaluation=4.0, rows=rows([100, 1000], [1.0, 3.0]))
    write_run(runs, "going", seed=1, rows=rows([100, 400], [1.0, 2.0]), finished=False)
    write_run(runs, "new", seed=2, finished=False)  # no metrics row yet
    report = build_report([runs], reps=100)
    (env,) = report.envs
    assert env.seeds == [0, 1] and env.scores.tolist() == [4.0, 2.0]
    notes = " ".join(report.notes)
    assert "seed 1 is unfinished" in notes and "at 400 steps" in notes
    assert f"left out {runs / 'new'}" in notes and "no score yet" in notes
    assert "ended at different steps (seed 0: 1,000, seed 1: 400)" in notes
    assert main(["report", str(runs)]) == 0
    assert "Notes:" in capsys.readouterr().out
