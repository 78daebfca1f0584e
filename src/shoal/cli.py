"""The `shoal` command line: train, tune, launch, eval, play, record, plot, report, list, envs.

Run settings are flags (`--total-steps 50000`); agent settings are `--agent.FIELD VALUE`. A user
mistake prints one paragraph and exits with code 2, with no traceback and no run directory.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shoal import catalog
from shoal.commandline import build_parser, is_number, split_section_overrides
from shoal.config import PEER_NAMES, describe, old_names, suggestions
from shoal.errors import (
    ConfigError,
    RenamedSettingWarning,
    ShoalError,
    ShoalWarning,
    user_error,
)

# --max-time bounds the whole command. `shoal` and `python -m shoal` count from the process's
# start (`process_started`: Python's start and the imports included); a first command called
# from Python from this module's import; any later one (a test, a Python caller running
# several) from its own start, not from an import long before.
_IMPORTED = [time.time()]
# A process start further back than this before the import is not believed (a clock or /proc
# that does not agree): the import is counted from instead.
STARTUP_BOUND_S = 600.0
_command_started = 0.0  # when the current command started (set by `main`)
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
# 128 + SIGTERM: stopped by a scheduler's SIGTERM after writing a checkpoint, so a job script
# can tell it from a finished run (0) and requeue it.
EXIT_TERMINATED = 143


def _tune(args: argparse.Namespace, overrides: dict[str, dict[str, str]]) -> int:
    from shoal.tune import tune

    run = {
        k[len("run.") :]: v for k, v in vars(args).items() if k.startswith("run.") and v is not None
    }
    result = tune(
        args.algo,
        args.env,
        space=args.space,
        scheduler=args.scheduler,
        samples=args.samples,
        population=args.population,
        metric=args.metric,
        mode=args.mode,
        perturbation_interval=args.perturbation_interval,
        cpus_per_trial=args.cpus_per_trial,
        seed=args.seed,
        config=args.config,
        agent=overrides["agent"] or None,
        run=run,
        env_config=overrides["env"] or None,
        resume=args.resume,
        trust_run=args.trust_run,
    )
    print(f"experiment directory: {result.experiment_dir}")
    failed = [row for row in result.rows if row["status"] == "error"]
    return 1 if failed and len(failed) == len(result.rows) else 0


def _train(args: argparse.Namespace, overrides: dict[str, dict[str, str]]) -> int:
    from shoal import api  # torch is imported only when there is work to do

    run = {
        k[len("run.") :]: v for k, v in vars(args).items() if k.startswith("run.") and v is not None
    }
    if args.dataset is not None:
        _dataset_flag(args, overrides["agent"])
    if args.profile:
        from shoal.runtime.profile import load_profile, merge_profile

        run = merge_profile(run, load_profile(args.profile), args.profile)
    result = api.train(
        args.algo,
        args.env,
        seed=args.seed,
        config=args.config,
        agent=overrides["agent"] or None,
        env_config=overrides["env"] or None,
        run=run,
        resume=args.resume,
        trust_run=args.trust_run,
        started=_command_started,
    )
    mean = result.train_return_mean
    if result.already_complete:  # a requeued job whose run finished: nothing to do
        print(
            f"shoal: {result.run_dir} is already complete (stopped by {result.stop_reason} at "
            f"{result.env_steps} steps); nothing to do."
        )
        return 0
    stopped_by = "SIGTERM" if result.stop_reason == "terminated" else result.stop_reason
    print(f"run directory: {result.run_dir}")
    print(
        f"trained {result.env_steps} steps, {result.episodes} episodes, stopped by "
        f"{stopped_by}; mean return of the last episodes: "
        f"{'n/a' if mean is None else f'{mean:.2f}'}"
    )
    for evaluation, deterministic in (
        (result.evaluation, True),
        (result.sampled_evaluation, False),
    ):
        if evaluation is not None:
            print(evaluation.line(deterministic))
    if result.stop_reason == "terminated":
        again = (
            "the same command"
            if args.resume == "auto"
            else f"`shoal train --resume {result.run_dir}`"
        )
        print(
            f"shoal: stopped by SIGTERM after writing a checkpoint; {again} continues it",
            file=sys.stderr,
        )
        return EXIT_TERMINATED
    if result.stop_reason == "interrupted":
        print(
            f"shoal: interrupted; continue with `shoal train --resume {result.run_dir}`",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    cut = result.evaluation or result.sampled_evaluation
    if cut is not None and cut.stopped_by is not None:  # a signal during the final evaluation
        print(
            f"shoal: the run trained to its end; its final evaluation was stopped by "
            f"{'SIGTERM' if cut.stopped_by == 'terminated' else 'Ctrl-C'} (its figures are of "
            f"the episodes that ended before); `shoal eval {result.run_dir}` evaluates it again",
            file=sys.stderr,
        )
        return EXIT_TERMINATED if cut.stopped_by == "terminated" else EXIT_INTERRUPTED
    return 0


def _dataset_flag(args: argparse.Namespace, agent: dict[str, str]) -> None:
    """`--dataset X` is `--agent.dataset X` for agents that learn from one; a folder that
    exists is recorded by its absolute path, so `--resume` finds it from anywhere."""
    fields = _agent_fields(args.algo)
    if args.algo is not None and fields is not None and "dataset" not in fields:
        learners = [name for name in catalog.AGENTS if "dataset" in (_agent_fields(name) or ())]
        raise ConfigError(
            f"--dataset names demonstrations to learn from, and {args.algo} learns from its "
            f"own experience only. Agents that learn from a dataset: {', '.join(learners)}."
        )
    if "dataset" in agent and agent["dataset"] != args.dataset:
        raise ConfigError(
            f"--dataset {args.dataset} and --agent.dataset {agent['dataset']} disagree; "
            "pass one of them."
        )
    path = Path(args.dataset).expanduser()
    agent["dataset"] = str(path.absolute()) if path.is_dir() else args.dataset


def _record(args: argparse.Namespace) -> None:
    from shoal import record

    record.main(args)


def _eval(args: argparse.Namespace) -> None:
    if args.protocol == "atari":
        from shoal import evaluation_protocol

        evaluation_protocol.main(args)
        return
    from shoal import api

    episodes = 10 if args.episodes is None else args.episodes
    deterministic = not args.stochastic
    result = api.evaluate(
        args.run_dir, episodes, deterministic, args.seed, trust_run=args.trust_run
    )
    print(result.line(deterministic))


def _plot(args: argparse.Namespace) -> None:
    from shoal.plots import plot_runs

    plot = plot_runs(args.run_dirs, args.output, x=args.x, metric=args.metric)
    drawn = "; ".join(f"{c.label}, {c.seeds} seed(s)" for c in plot.curves)
    print(f"wrote {args.output}: {drawn}")
    for note in plot.notes:
        print(f"note: {note}")


def _report(args: argparse.Namespace) -> None:
    from shoal.report import build_report, check_report_output, write_report

    if args.output:
        check_report_output(args.output)
    report = build_report(args.run_dirs, reps=args.reps, seed=args.seed)
    print(report.markdown(), end="")
    if args.output:
        write_report(report, args.output)


def _play(args: argparse.Namespace) -> None:
    from shoal import play

    play.main(args)


def _list(args: argparse.Namespace) -> None:
    if args.algo:
        agent = catalog.get_agent(args.algo)
        print(
            f"{args.algo}: {catalog.AGENTS[args.algo][1]}\n\nagent settings (--agent.FIELD VALUE):"
        )
        for name, type_name, default, doc in describe(agent.config_cls):
            print(f"  {name:<24} {type_name:<16} {default!s:<10} {doc}")
        for env_id, preset in catalog.presets(args.algo).items():
            print(f"\npreset {env_id}: {preset}")
        return
    print("algorithms:")
    for name, (_, doc) in catalog.AGENTS.items():
        envs = ", ".join(catalog.presets(name)) or "none"
        print(f"  {name:<8} {doc}\n           presets: {envs}")
    print(
        "\nenvironments:\n  any Gymnasium id (e.g. CartPole-v1, Pendulum-v1)"
        "\n  a factory 'package.module:function' returning a gymnasium.Env"
    )
    print("\nmore: `shoal list ALGO` shows an algorithm's settings and presets.")


def _envs(args: argparse.Namespace, env_overrides: dict[str, str]) -> None:
    from shoal.config import build
    from shoal.envs.config import EnvConfig
    from shoal.envs.families import describe_env, describe_families

    env_config = build(EnvConfig, env_overrides, "env_config")
    print(describe_env(args.env_id, env_config) if args.env_id else describe_families())


def _unknown_arguments(
    parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]
) -> str:
    """One paragraph for what argparse did not recognise: for each unknown option, the shoal
    flag it may mean, matched on meaning first (`--lr` is `--agent.learning-rate`, not
    `--agent.anneal-lr`), then on spelling."""
    command = _subcommand(parser, args.command)
    options = {
        o[2:].replace("-", "_"): o
        for action in command._actions
        for o in action.option_strings
        if o.startswith("--")
    }
    agent_fields = _agent_fields(getattr(args, "algo", None))
    sentences = []
    items = list(unknown)
    while items:
        item = items.pop(0)
        if not item.startswith("-") or is_number(item):
            sentences.append(f"`shoal {args.command}` takes no argument {item!r}.")
            continue
        flag, has_value, value = item.partition("=")
        if not has_value and items and not items[0].startswith("-"):
            value = items.pop(0)
        example = f" {value}" if value else " VALUE"
        sentences.append(
            f"{flag} is not an option of `shoal {args.command}`"
            + _flag_hint(flag, options, agent_fields, example)
        )
    return " ".join(sentences) + f" See `shoal {args.command} --help`."


def _flag_hint(
    flag: str, options: dict[str, str], agent_fields: set[str] | None, example: str
) -> str:
    name = flag.lstrip("-").replace("-", "_").lower()
    meanings = [name, *PEER_NAMES.get(name, ())]
    for meaning in meanings:
        if meaning in options and options[meaning] != flag:
            return f": shoal calls it {options[meaning]}, e.g. {options[meaning]}{example}."
    if agent_fields is not None:
        for meaning in meanings:
            if meaning in agent_fields:
                agent_flag = "--agent." + meaning.replace("_", "-")
                return f"; it is an agent setting: {agent_flag}{example}."
    elif name in PEER_NAMES:  # no algorithm named here: the setting it usually means
        agent_flag = "--agent." + PEER_NAMES[name][0].replace("_", "-")
        return f"; agent settings are --agent.FIELD flags, e.g. {agent_flag}{example}."
    hits = suggestions(name, options)
    if hits:
        return "; did you mean " + " or ".join(options[h] for h in hits) + "?"
    return "."


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]  # type: ignore[no-any-return]
    return parser


def _agent_fields(algo: str | None) -> set[str] | None:
    """The agent setting names of `algo` (old names included); None for no or an unknown algo."""
    if algo not in catalog.AGENTS:
        return None
    cls = catalog.get_agent(algo).config_cls
    return {name for name, *_ in describe(cls)} | set(old_names(cls))


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["launch"]:  # its training command after `--` keeps its own --agent.*
            from shoal.launch.cli import main as launch

            return launch(argv[1:])
        rest, overrides = split_section_overrides(argv)
        parser = build_parser()
        args, unknown = parser.parse_known_args(rest)  # exits with code 2 on a malformed line
        if unknown:  # argparse's words and exit, with the flag it may mean
            hint = _unknown_arguments(parser, args, unknown)
            print(
                f"shoal: error: unrecognized arguments: {' '.join(unknown)}. {hint}",
                file=sys.stderr,
            )
            raise SystemExit(EXIT_USAGE)
        if args.command in ("train", "tune") and args.algo is not None:
            catalog.check_algorithm(args.algo)  # before `api` brings in torch
        if args.command == "train":
            return _train(args, overrides)
        if args.command == "tune":
            return _tune(args, overrides)
        elif args.command == "envs":
            _envs(args, overrides["env"])
        elif overrides["agent"] or overrides["env"]:
            raise ShoalError("--agent.FIELD and --env.FIELD settings belong to `shoal train`.")
        else:
            command = {
                "eval": _eval,
                "list": _list,
                "play": _play,
                "plot": _plot,
                "record": _record,
                "report": _report,
            }
            command[args.command](args)
    except ShoalError as err:
        print(f"shoal: error: {user_error(err)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("shoal: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def process_started() -> float | None:
    """When this process started, as a `time.time()` (Linux: its start time in /proc, in clock
    ticks since boot, against CLOCK_BOOTTIME); None where that cannot be read, or does not fit
    this module's import."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()  # the name may hold spaces, parentheses
        ticks = int(fields[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):  # no /proc, no CLOCK_BOOTTIME
        return None
    started = time.time() - age
    imported = _IMPORTED[0] if _IMPORTED else time.time()
    return started if -1.0 <= imported - started <= STARTUP_BOUND_S else None


def main(argv: Sequence[str] | None = None, started: float | None = None) -> int:
    """Run one command (`argv`: sys.argv's arguments by default); its exit code. `started`:
    when the command began, from which --max-time counts (default: this module's import for
    the first command in the process, the call for a later one)."""
    global _command_started
    imported = _IMPORTED.pop() if _IMPORTED else time.time()
    _command_started = imported if started is None else started
    with warnings.catch_warnings():  # restores the filters and showwarning on the way out
        warnings.simplefilter("default", ShoalWarning)  # shown once each, never raised
        warnings.simplefilter("default", RenamedSettingWarning)
        python_show = warnings.showwarning

        def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            if issubclass(category, ShoalWarning):  # shoal's own: one plain line
                print(f"shoal: warning: {message}", file=sys.stderr)
            elif issubclass(category, RenamedSettingWarning):
                print(f"shoal: note: {message}", file=sys.stderr)
            else:
                python_show(message, category, *args, **kwargs)

        warnings.showwarning = show
        return _main(argv)


def _entry() -> Any:
    """`shoal` and `python -m shoal`: one command, then the exit."""
    from shoal.run.buckets import lasting_only

    lasting_only()  # this process is the command: a memory:// run would vanish with it
    code = main(started=process_started())
    # Python's exit runs the garbage collector over every object torch, Ray and shoal made:
    # about 0.7 CPU-s, which a busy machine stretches to seconds, after --max-time's end or a
    # SIGTERM. Frozen, they are left to the process's end (atexit handlers, the threads'
    # joins and the streams' flush still run).
    gc.freeze()
    sys.exit(code)
