"""Final scores of runs and, across Atari games, aggregate human-normalised scores
(`shoal report`).

A run's final score is, in order of preference, the mean score of its newest Atari no-op starts
evaluation (`shoal eval --protocol atari`, kept in `RUN_DIR/evaluations/`), its final
deterministic evaluation (`summary.json`), or, for a run that has neither (stopped early,
`--eval-episodes 0`), the mean return of its last training episodes (the last metrics row); the
table says which. Seeds of one experiment (one algorithm on one env with the same settings:
`shoal.run.runs.group_runs`; the settings that set groups apart are shown) are one row,
their mean with a 95% bootstrap interval. A run with no score yet is left out and a run still
going (no summary.json) is scored from its last training episodes, each with a note under
the table; so are seeds that ended at different steps. Across Atari games the median,
interquartile mean and mean of human-normalised scores come with 95% stratified bootstrap
intervals (Agarwal et al. 2021; `shoal.analysis.stats`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from shoal.analysis.stats import AGGREGATES, Estimate, mean_of_means, stratified_bootstrap
from shoal.config import write_atomically
from shoal.envs.atari_ids import is_atari_id
from shoal.errors import ConfigError
from shoal.run.runs import (
    Run,
    check_output,
    describe_group,
    group_runs,
    read_runs,
    same_seeds,
)

__all__ = [
    "MARKDOWN_FORMATS",
    "Aggregate",
    "EnvScores",
    "Normalizer",
    "Report",
    "aggregate_games",
    "atari_normalized",
    "build_report",
    "check_report_output",
    "env_scores",
    "final_score",
    "write_report",
]

# (env id, raw score) -> human-normalised score, or None outside the Atari-57 games.
Normalizer = Callable[[str, float], float | None]

MARKDOWN_FORMATS = ("md", "markdown")
_SOURCES = {
    "protocol": "no-op starts protocol",
    "evaluation": "final evaluation",
    "training": "last training episodes",
}


def atari_normalized(env_id: str, score: float) -> float | None:
    """The human-normalised score of an Atari id (`ALE/Pong-v5`, `PongNoFrameskip-v4`), from
    `shoal.envs.atari_scores`; None for other envs and for games outside the 57."""
    if not is_atari_id(env_id):
        return None
    from shoal.envs.atari import atari_game
    from shoal.envs.atari_scores import human_normalized

    return human_normalized(atari_game(env_id), score)


def final_score(run: Run) -> tuple[float, str]:
    """(score, source): the newest Atari no-op starts evaluation's mean score, else the final
    evaluation's mean return, else the last logged training mean return."""
    if isinstance((run.protocol or {}).get("mean_score"), int | float):
        return float(run.protocol["mean_score"]), "protocol"
    evaluation = (run.summary or {}).get("evaluation")
    if isinstance(evaluation, dict) and isinstance(evaluation.get("mean_return"), int | float):
        return float(evaluation["mean_return"]), "evaluation"
    returns = [row["return_mean"] for row in run.rows if row.get("return_mean") is not None]
    if not returns:
        raise ConfigError(
            f"{run.path} has no score yet: no final evaluation in summary.json and no "
            "return_mean in metrics.jsonl (no episode had finished by its last log row). "
            "Report it once it has trained longer, or leave it out."
        )
    return float(returns[-1]), "training"


@dataclass(frozen=True)
class EnvScores:
    """One algorithm's seeds on one env (with one set of settings)."""

    algo: str
    env: str
    scores: np.ndarray  # [seeds], in seed order
    seeds: list[int]
    source: str
    mean: Estimate  # mean over seeds, 95% bootstrap interval
    normalized: np.ndarray | None  # [seeds], Atari-57 games only
    settings: tuple[str, ...] = ()  # what sets it apart from others of its algo and env
    notes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The algorithm, with the settings that set this group apart."""
        return self.algo + (f" [{', '.join(self.settings)}]" if self.settings else "")


@dataclass(frozen=True)
class Aggregate:
    """One algorithm's human-normalised scores across Atari games."""

    algo: str
    games: int
    runs: int
    estimates: dict[str, Estimate]  # by AGGREGATES name


@dataclass(frozen=True)
class Report:
    envs: list[EnvScores]
    aggregates: list[Aggregate]
    reps: int
    seed: int
    notes: list[str] = field(default_factory=list)  # runs left out, unfinished, cut short

    def markdown(self) -> str:
        notes = ["", "Notes:", "", *(f"- {note}" for note in self.notes)] if self.notes else []
        return "\n".join([*_env_table(self.envs), *notes, "", *_aggregate_section(self)]) + "\n"


def build_report(
    paths: Sequence[str | Path],
    *,
    reps: int = 10_000,
    seed: int = 0,
    normalize: Normalizer = atari_normalized,
) -> Report:
    """Scores of the runs at `paths` (run directories or folders of them)."""
    if reps <= 0 or seed < 0:
        raise ConfigError(
            f"--reps must be a positive number of resamples and --seed a number >= 0, got "
            f"--reps {reps} --seed {seed}."
        )
    groups = group_runs(read_runs(paths))
    envs, notes, reasons = [], same_seeds(groups), []
    for key, members in groups.items():
        scored = []
        for run in members:
            try:
                final_score(run)
            except ConfigError as err:
                reasons.append(err)
                notes.append(f"left out {run.path}: {err}")
                continue
            scored.append(run)
        if scored:
            envs.append(env_scores(scored, reps, seed, normalize, settings=tuple(key[2:])))
    if not envs:
        raise reasons[0]
    notes += [note for env in envs for note in env.notes]
    return Report(envs, aggregate_games(envs, reps, seed), reps, seed, notes)


def env_scores(
    runs: list[Run],
    reps: int,
    seed: int,
    normalize: Normalizer,
    settings: tuple[str, ...] = (),
) -> EnvScores:
    scored = [final_score(run) for run in runs]
    scores = np.array([score for score, _ in scored])
    sources = [_SOURCES[s] for s in _SOURCES if s in {source for _, source in scored}]
    normalized = [normalize(runs[0].env, score) for score in scores]
    label = describe_group((runs[0].algo, runs[0].env, *settings))
    notes = [
        f"{label}: seed {run.seed} is unfinished (no summary.json: still running, or stopped "
        f"without one); scored by its last training episodes, at {_last_step(run):,} steps."
        for run in runs
        if not run.finished
    ]
    ends = [_last_step(run) for run in runs]
    if len(set(ends)) > 1:
        notes.append(
            f"{label}: the seeds ended at different steps ("
            + ", ".join(f"seed {run.seed}: {end:,}" for run, end in zip(runs, ends, strict=True))
            + "), so their scores are of policies trained for different lengths."
        )
    return EnvScores(
        runs[0].algo,
        runs[0].env,
        scores,
        [run.seed for run in runs],
        sources[0] if len(sources) == 1 else "mixed: " + ", ".join(sources),
        stratified_bootstrap([scores], mean_of_means, reps=reps, seed=seed),
        None if None in normalized else np.array(normalized, dtype=np.float64),
        settings,
        tuple(notes),
    )


def _last_step(run: Run) -> int:
    """The steps a run trained: its summary's, else its last metrics row's."""
    steps = (run.summary or {}).get("env_steps")
    if isinstance(steps, int):
        return steps
    logged = [row["env_steps"] for row in run.rows if isinstance(row.get("env_steps"), int)]
    return logged[-1] if logged else 0


def aggregate_games(envs: list[EnvScores], reps: int, seed: int) -> list[Aggregate]:
    """Per algorithm, the AGGREGATES of human-normalised scores over its games, each with a
    stratified bootstrap interval (the games are the strata, the seeds are resampled)."""
    by_algo: dict[str, list[np.ndarray]] = {}
    for env in envs:
        if env.normalized is not None:
            by_algo.setdefault(env.name, []).append(env.normalized)
    return [
        Aggregate(
            algo,
            len(games),
            sum(len(g) for g in games),
            {
                name: stratified_bootstrap(games, statistic, reps=reps, seed=seed)
                for name, statistic in AGGREGATES.items()
            },
        )
        for algo, games in by_algo.items()
    ]


def write_report(report: Report, output: str | Path) -> None:
    write_atomically(output, report.markdown())


def check_report_output(output: str | Path) -> None:
    check_output(Path(output), MARKDOWN_FORMATS, "a markdown")


def _interval(estimate: Estimate, digits: int) -> str:
    return f"{estimate.value:.{digits}f} [{estimate.low:.{digits}f}, {estimate.high:.{digits}f}]"


def _env_table(envs: list[EnvScores]) -> list[str]:
    lines = [
        "## Final scores",
        "",
        "Mean over seeds with its 95% bootstrap confidence interval; human-normalised: "
        "(score − random) / (human − random), Atari-57 games only.",
        "",
        "| env | algo | seeds | score: mean [95% CI] | per seed | human-normalised | source |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for env in envs:
        per_seed = ", ".join(
            f"{s:.2f} (seed {i})" for s, i in zip(env.scores, env.seeds, strict=True)
        )
        normalized = "" if env.normalized is None else f"{env.normalized.mean():.3f}"
        lines.append(
            f"| {env.env} | {env.name} | {len(env.scores)} | {_interval(env.mean, 2)} | "
            f"{per_seed} | {normalized} | {env.source} |"
        )
    return lines


def _aggregate_section(report: Report) -> list[str]:
    lines = ["## Atari: human-normalised scores across games", ""]
    if not report.aggregates:
        return [
            *lines,
            "No Atari-57 game among these runs (ids such as ALE/Pong-v5 or "
            "PongNoFrameskip-v4), so no aggregate.",
        ]
    names = list(AGGREGATES)
    lines += [
        "1.0 is the human tester's score, 0 a random policy's. Median and mean are over games "
        "of each game's mean over seeds; the interquartile mean (IQM) is the mean of the "
        "middle 50% of all runs' scores. Brackets: 95% stratified bootstrap confidence "
        f"intervals (Agarwal et al. 2021), {report.reps:,} resamples of the seeds within each "
        f"game, seed {report.seed}.",
        "",
        "| algo | games | runs | " + " | ".join(names) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for agg in report.aggregates:
        cells = " | ".join(_interval(agg.estimates[name], 3) for name in names)
        lines.append(f"| {agg.algo} | {agg.games} | {agg.runs} | {cells} |")
    return lines
