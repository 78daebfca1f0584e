"""Finished or running run directories, read for comparison (`shoal plot`, `shoal report`).

Only the files a run wrote are read (config.yaml, metrics.jsonl, summary.json): no config is
resolved, so no module a run names is imported and runs from other machines and older shoal
versions load too. Runs in a bucket (`s3://BUCKET/runs/...`) are read from a copy of those
files only, never their checkpoints.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from shoal.config import load_yaml
from shoal.errors import ConfigError, did_you_mean
from shoal.run import storage
from shoal.run.layout import CONFIG_FILE, METRICS_FILE, PROTOCOL_RECORDS, SUMMARY_FILE
from shoal.run.summary import read_summary
from shoal.telemetry import read_metrics
from shoal.tree import flatten_dict

__all__ = [
    "CONFIG_FILE",
    "PROTOCOL_RECORDS",
    "SUMMARY_FILE",
    "Run",
    "check_output",
    "describe_group",
    "group_runs",
    "read_runs",
    "same_seeds",
    "series",
]


# Settings of config.yaml that say where and how a run was kept, not what it learned: runs
# differing only in these (and in the seed) are seeds of one experiment.
_BOOKKEEPING = frozenset(
    {
        "seed",
        "run.runs_dir",
        "run.run_name",
        "run.progress",
        "run.tensorboard",
        "run.logger",
        "run.log_interval",
        "run.checkpoint_interval",
        "run.keep_checkpoints",
        "run.checkpoint_replay",
        "run.replay_snapshot_budget",
        "run.keep_best",
        "run.video_every",
        "run.max_time",
        "run.eval_max_time",
        "run.address",
        "run.torch_threads",
        "run.learner_device",
        "run.learner_gpus",
        "run.max_learner_restarts",
    }
)
_BOOKKEEPING_SUFFIXES = ("_cpus", "_memory_mb", "_resources")


@dataclass(frozen=True)
class Run:
    path: Path | str  # a folder, or a run's bucket URL
    algo: str
    env: str
    seed: int
    rows: list[dict[str, Any]]
    summary: dict[str, Any] | None
    protocol: dict[str, Any] | None  # the newest Atari no-op starts evaluation, if any
    config: dict[str, Any] = field(default_factory=dict)  # its config.yaml

    @property
    def group(self) -> tuple[str, str]:
        """The algorithm and env; `group_runs` also separates runs whose settings differ."""
        return self.algo, self.env

    @property
    def finished(self) -> bool:
        """Whether the run stopped and said so (summary.json); else it is still running, or
        was killed before it could write one."""
        return self.summary is not None

    def settings(self) -> dict[str, str]:
        """What the run learned with: its config, flattened (`agent.learning_rate`), less
        the seed and the bookkeeping (`_BOOKKEEPING`: where it logged, how often it saved)."""
        return {
            key: json.dumps(value) if not isinstance(value, str) else value
            for key, value in flatten_dict(self.config, ".")
            if key not in _BOOKKEEPING and not key.endswith(_BOOKKEEPING_SUFFIXES)
        }


def read_runs(paths: Sequence[str | Path]) -> list[Run]:
    """The runs at `paths`: run directories, or folders holding run directories (such as
    `runs/`), in the order given; a run named twice is read once."""
    if not paths:
        raise ConfigError("Name at least one run directory, e.g. runs/ppo-CartPole-v1-*.")
    found: dict[Path | str, None] = {}
    for path in paths:
        runs = _bucket_runs(str(path)) if storage.is_url(path) else _run_dirs(Path(path))
        found.update(dict.fromkeys(runs))
    return [_read_bucket_run(p) if isinstance(p, str) else _read_run(p) for p in found]


def _bucket_runs(url: str) -> list[str]:
    """The run at `url` or the runs in it, as `_run_dirs` finds them in a folder."""
    url = url.rstrip("/")
    files = storage.open_bucket(url, "The runs at").files()
    if CONFIG_FILE in files:
        return [url]
    inside = sorted(
        rel.split("/")[0]
        for rel in files
        if rel.count("/") == 1 and rel.endswith(f"/{CONFIG_FILE}")
    )
    if inside:
        return [f"{url}/{name}" for name in inside]
    raise ConfigError(
        f"{url} is not a run directory, nor a folder of them (no {CONFIG_FILE} in it or one "
        "level down). Pass run directories made by `shoal train --runs-dir URL`, or the URL "
        "that holds them."
    )


def _read_bucket_run(url: str) -> Run:
    """A run in a bucket: the files `_read_run` reads, copied to a staging folder."""
    readable = (CONFIG_FILE, METRICS_FILE, SUMMARY_FILE)
    store = storage.read_files(url, lambda rel: rel in readable or fnmatch(rel, PROTOCOL_RECORDS))
    try:
        return replace(_read_run(store.local), path=url)
    except ConfigError as err:
        raise ConfigError(store.say(str(err))) from None
    finally:
        store.close()


def _run_dirs(path: Path) -> list[Path]:
    if (path / CONFIG_FILE).is_file():
        return [path.resolve()]
    inside = sorted(p.resolve() for p in path.glob(f"*/{CONFIG_FILE}")) if path.is_dir() else []
    if inside:
        return [p.parent for p in inside]
    what = "does not exist" if not path.exists() else "is not a run directory"
    raise ConfigError(
        f"{path} {what} (a run directory holds {CONFIG_FILE} and {METRICS_FILE}, and a folder "
        "such as runs/ holds run directories). Pass run directories made by `shoal train`, "
        "e.g. runs/ppo-CartPole-v1-20260101-120000, or the folder that holds them."
    )


def _read_run(path: Path) -> Run:
    config = load_yaml(path / CONFIG_FILE)
    algo, env, seed = config.get("algo"), config.get("env"), config.get("seed", 0)
    if not isinstance(algo, str) or not isinstance(env, str) or not isinstance(seed, int):
        raise ConfigError(
            f"{path / CONFIG_FILE} does not name an algo, env and seed; it was not written by "
            "`shoal train`. Pass run directories made by `shoal train`."
        )
    records = sorted(path.glob(PROTOCOL_RECORDS))  # zero-padded steps: the newest is last
    return Run(
        path,
        algo,
        env,
        seed,
        read_metrics(path / METRICS_FILE),
        read_summary(path),
        _read_json(records[-1]) if records else None,
        config,
    )


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text()) if path.is_file() else None
    except (OSError, json.JSONDecodeError):
        return None  # a run killed while writing it: its other files still count
    return data if isinstance(data, dict) else None


def group_runs(runs: Iterable[Run]) -> dict[tuple[str, ...], list[Run]]:
    """Seeds of one experiment together: runs of one algorithm on one env with the same
    settings (`Run.settings`, all but the seed and bookkeeping). The key is `(algo, env)`,
    followed, where runs of that algorithm and env differ, by `"name=value"` for each setting
    that differs (`("ppo", "CartPole-v1", "agent.learning_rate=0.001")`). Groups come in the
    order their first run was given, seeds sorted."""
    by_env: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        by_env.setdefault(run.group, []).append(run)
    groups: dict[tuple[str, ...], list[Run]] = {}
    for key, members in by_env.items():
        settings = [run.settings() for run in members]
        names = sorted({name for s in settings for name in s})
        differ = [n for n in names if len({s.get(n, "(unset)") for s in settings}) > 1]
        for run, mine in zip(members, settings, strict=True):
            label = tuple(f"{n}={mine.get(n, '(unset)')}" for n in differ)
            groups.setdefault((*key, *label), []).append(run)
    return {key: sorted(members, key=lambda r: r.seed) for key, members in groups.items()}


def describe_group(key: tuple[str, ...]) -> str:
    """`ppo on CartPole-v1`, with the settings that set its group apart in brackets."""
    algo, env, *settings = key
    return f"{algo} on {env}" + (f" [{', '.join(settings)}]" if settings else "")


def same_seeds(groups: dict[tuple[str, ...], list[Run]]) -> list[str]:
    """Notes on groups that hold one seed more than once (runs whose only difference is a
    setting shoal counts as bookkeeping), which the statistics treat as separate seeds."""
    notes = []
    for key, members in groups.items():
        seeds = [run.seed for run in members]
        repeated = sorted({seed for seed in seeds if seeds.count(seed) > 1})
        if repeated:
            notes.append(
                f"{describe_group(key)}: seed {', '.join(map(str, repeated))} appears in more "
                "than one run with the same settings; each run counts as a seed."
            )
    return notes


def series(run: Run, x: str, metric: str) -> tuple[list[float], list[float]]:
    """(x, y) of every metrics row that has both keys with numbers, or a ConfigError naming
    the metrics the run has."""
    if not run.rows:
        raise ConfigError(
            f"{run.path} has no metrics rows (metrics.jsonl is missing or empty: the run stopped "
            "before its first --log-interval, or was trained without jsonl in --logger)."
        )
    known = {key for row in run.rows for key in row}
    for name in (metric, x):
        if name not in known:
            numeric = sorted(k for k in known if any(_is_number(r.get(k)) for r in run.rows))
            raise ConfigError(
                f"{run.path} has no {name!r} in metrics.jsonl.{did_you_mean(name, numeric)} "
                f"Metrics of this run: {', '.join(numeric)}."
            )
    points = [
        (float(row[x]), float(row[metric]))
        for row in run.rows
        if _is_number(row.get(x)) and _is_number(row.get(metric))
    ]
    return [p[0] for p in points], [p[1] for p in points]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_output(output: Path, formats: Sequence[str], what: str) -> None:
    """Refuse an output file that cannot be written before any work is done."""
    suffix = output.suffix[1:].lower()
    if suffix not in formats:
        raise ConfigError(
            f"-o {output}: cannot tell {what} format from the suffix {output.suffix or '(none)'}; "
            f"end the name with one of {', '.join('.' + f for f in formats)}."
        )
    if output.is_dir() or not output.parent.is_dir():
        raise ConfigError(
            f"-o {output}: {'is a folder' if output.is_dir() else 'its folder does not exist'}; "
            "pass a file name in an existing folder."
        )
