"""The `shoal` command line: train, tune, launch, eval, play, plot, report, list, envs.

Run settings are flags (`--total-steps 50000`); agent settings are `--agent.FIELD VALUE`. A user
mistake prints one paragraph and exits with code 2, with no traceback and no run directory.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

from shoal import catalog
from shoal.config import describe
from shoal.errors import ShoalError, ShoalWarning, user_error
from shoal.runtime.config import RunConfig

# --max-time bounds the whole command. The first command in a process counts from this
# module's import (the imports included); any later one (a test, a Python caller running
# several) from its own start, not from an import long before.
_IMPORTED = [time.time()]
_command_started = 0.0  # when the current command started (set by `main`)
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
# 128 + SIGTERM: stopped by a scheduler's SIGTERM after writing a checkpoint, so a job script
# can tell it from a finished run (0) and requeue it.
EXIT_TERMINATED = 143

_TRUST_HELP = (
    "import the modules the run's config.yaml names (a module:function env or torso, "
    "--env.import-module): only for runs you made or trust, as importing runs their code"
)


# Names the issue tracker and the distributed-RL literature use for the same settings.
_ALIASES = {"num_envs": ("--envs-per-actor",)}


def _run_option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shoal", description="Distributed deep reinforcement learning in PyTorch."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    train = sub.add_parser(
        "train",
        help="train an agent",
        description="Train ALGO on --env, or continue a run with --resume RUN_DIR. With "
        "--resume auto and --run-name, the same command starts the run, continues it after a "
        "kill or preemption, or exits 0 if it already finished: what a requeued job runs. "
        "Agent settings: --agent.FIELD VALUE (list them with `shoal list ALGO`); environment "
        "settings: --env.FIELD VALUE (list them with `shoal envs`).",
    )
    train.add_argument("algo", nargs="?", help="algorithm, e.g. ppo (see `shoal list`)")
    train.add_argument("--env", help="environment id, e.g. CartPole-v1, or package.module:function")
    train.add_argument("--seed", help="random seed (default 0)")
    train.add_argument("--config", help="YAML file with algo/env/seed/run/agent keys")
    train.add_argument(
        "--resume",
        metavar="RUN_DIR|auto",
        help="continue a run from its last checkpoint; auto: the run named by --run-name if it "
        "exists (with the same settings), else start it",
    )
    train.add_argument("--trust-run", action="store_true", help=f"with --resume: {_TRUST_HELP}")
    train.add_argument(
        "--profile",
        metavar="FILE",
        help="ray: YAML of the resources of each role (learner, actors, replay, inference) in "
        "place of the --learner-*/--actor-*/--replay-*/--inference* flags, e.g. "
        "examples/profiles/cluster.yaml",
    )
    for name, type_name, default, doc in describe(RunConfig):
        train.add_argument(
            _run_option(name),
            *_ALIASES.get(name, ()),
            dest=f"run.{name}",
            metavar=type_name.upper(),
            help=f"{doc} (default {default})",
        )

    _tune_parser(sub)
    sub.add_parser(
        "launch",
        help="write (and --submit) a Slurm, Kubernetes, GCP, AWS or Vertex AI job for a "
        "`shoal train` command; `shoal launch --help` for its options",
        add_help=False,
    )

    evaluate = sub.add_parser("eval", help="evaluate a run's newest checkpoint")
    evaluate.add_argument("run_dir")
    evaluate.add_argument(
        "--episodes", type=int, default=None, help="default 10; 30 with --protocol atari"
    )
    evaluate.add_argument(
        "--protocol",
        choices=["atari"],
        help="atari: the no-op starts protocol (up to 30 no-ops, 108,000-frame cap, a seed per "
        "episode), with raw and human-normalised scores",
    )
    modes = evaluate.add_mutually_exclusive_group()
    modes.add_argument(
        "--deterministic",
        action="store_true",
        help="take the most likely action (the default, as shoal train's and shoal.evaluate's)",
    )
    modes.add_argument(
        "--stochastic", action="store_true", help="sample actions from the policy instead"
    )
    evaluate.add_argument("--seed", type=int, default=None)
    evaluate.add_argument("--trust-run", action="store_true", help=_TRUST_HELP)

    play = sub.add_parser(
        "play", help="play a run's newest checkpoint into an mp4 video (Atari: the colour screen)"
    )
    play.add_argument("run_dir")
    play.add_argument("--episodes", type=int, default=None, help="episodes to play (default 3)")
    play.add_argument(
        "--video", help="mp4 to write (default RUN_DIR/videos/play-step-<checkpoint steps>.mp4)"
    )
    play.add_argument(
        "--deterministic", action="store_true", help="take the most likely action (default: sample)"
    )
    play.add_argument("--seed", type=int, default=None, help="seed of the first episode")
    play.add_argument("--trust-run", action="store_true", help=_TRUST_HELP)

    plot = sub.add_parser(
        "plot",
        help="learning curves of runs, seeds grouped with a 95%% bootstrap band",
        description="Draw learning curves from each run's metrics.jsonl: runs of one algorithm "
        "on one env are seeds, drawn as their mean with a 95% bootstrap confidence band, over "
        "the range every seed covers; one panel per env.",
    )
    plot.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories or folders")
    plot.add_argument(
        "-o", "--output", default="curves.png", help="image file (default %(default)s)"
    )
    plot.add_argument(
        "--x",
        choices=("frames", "steps", "time"),
        default="frames",
        help="x axis: env frames, agent steps or wall time (default %(default)s)",
    )
    plot.add_argument(
        "--metric", default="return_mean", help="a metrics.jsonl column (default %(default)s)"
    )

    report = sub.add_parser(
        "report",
        help="final scores per env; Atari: median, IQM and mean human-normalised scores",
        description="Print each env's final scores (mean over seeds with a 95% bootstrap "
        "interval) and, across Atari games, the median, interquartile mean and mean of "
        "human-normalised scores with 95% stratified bootstrap intervals (Agarwal et al. 2021).",
    )
    report.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories or folders")
    report.add_argument("-o", "--output", help="also write the report to this markdown file")
    report.add_argument(
        "--reps", type=int, default=10_000, help="bootstrap resamples (default %(default)s)"
    )
    report.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")

    listing = sub.add_parser("list", help="algorithms, presets and their settings")
    listing.add_argument("algo", nargs="?", help="show every setting of this algorithm")

    envs = sub.add_parser("envs", help="environment families; with an id, its spaces and backend")
    envs.add_argument("env_id", nargs="?", help="e.g. ALE/Pong-v5, minatar:breakout, CartPole-v1")
    return parser


def _tune_parser(sub: Any) -> None:
    tune = sub.add_parser(
        "tune",
        help="hyperparameter search or population based training (PBT) on Ray Tune",
        description="Search the settings of --space for ALGO on --env with Ray Tune, each "
        "trial one inline shoal run (train's flags and --agent.FIELD apply to every trial), "
        "or train a population with --scheduler pbt, whose exploits copy a member's learner "
        "in place. Writes one experiment directory (each trial's run directory, a table of "
        "trials, best.yaml for `shoal train --config`); --resume DIR continues it.",
    )
    tune.add_argument("algo", nargs="?", help="algorithm, e.g. ppo (see `shoal list`)")
    tune.add_argument("--env", help="environment id, e.g. CartPole-v1")
    tune.add_argument("--seed", help="random seed of every trial (default 0)")
    tune.add_argument("--config", help="YAML file with algo/env/seed/run/agent keys")
    tune.add_argument(
        "--space",
        help="YAML of settings and distributions, e.g. examples/tune/ppo_cartpole_space.yaml",
    )
    tune.add_argument("--scheduler", default="fifo", help="fifo, asha or pbt (default fifo)")
    tune.add_argument("--samples", type=int, default=8, help="fifo/asha: trials (default 8)")
    tune.add_argument("--population", type=int, default=4, help="pbt: members (default 4)")
    tune.add_argument(
        "--metric",
        default="return_mean",
        help="metrics row column to optimise (default return_mean)",
    )
    tune.add_argument("--mode", default="max", help="max or min (default max)")
    tune.add_argument(
        "--perturbation-interval",
        type=int,
        default=None,
        help="pbt: env steps between exploits of a member (default total steps / 8)",
    )
    tune.add_argument(
        "--cpus-per-trial", type=float, default=1.0, help="CPUs Ray reserves per trial (default 1)"
    )
    tune.add_argument("--resume", metavar="EXPERIMENT_DIR", help="continue a killed experiment")
    for name, type_name, default, doc in describe(RunConfig):
        tune.add_argument(
            _run_option(name),
            *_ALIASES.get(name, ()),
            dest=f"run.{name}",
            metavar=type_name.upper(),
            help=f"{doc} (default {default})",
        )


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
    )
    print(f"experiment directory: {result.experiment_dir}")
    failed = [row for row in result.rows if row["status"] == "error"]
    return 1 if failed and len(failed) == len(result.rows) else 0


def _split_section_overrides(
    argv: Sequence[str],
) -> tuple[list[str], dict[str, dict[str, str]]]:
    """Take `--agent.FIELD VALUE` and `--env.FIELD VALUE` (or `=VALUE`) out of argv.

    Agent fields depend on the algorithm named on the same line, so argparse cannot declare
    them; they are checked against the config classes later, with the valid names listed on a
    mistake.
    """
    rest: list[str] = []
    overrides: dict[str, dict[str, str]] = {"agent": {}, "env": {}}
    items = list(argv)
    while items:
        item = items.pop(0)
        section = next((s for s in overrides if item.startswith(f"--{s}.")), None)
        if section is None:
            rest.append(item)
            continue
        key, has_value, value = item[len(section) + 3 :].partition("=")
        if not has_value:
            if not items or (items[0].startswith("--") and not _is_number(items[0])):
                raise ShoalError(f"{item} needs a value, e.g. {item} 0.001.")
            value = items.pop(0)
        overrides[section][key.replace("-", "_")] = value
    return rest, overrides


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _train(args: argparse.Namespace, overrides: dict[str, dict[str, str]]) -> int:
    from shoal import api  # torch is imported only when there is work to do

    run = {
        k[len("run.") :]: v for k, v in vars(args).items() if k.startswith("run.") and v is not None
    }
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
    from shoal.analysis.plots import plot_runs

    curves = plot_runs(args.run_dirs, args.output, x=args.x, metric=args.metric)
    drawn = "; ".join(f"{c.algo} on {c.env}, {c.seeds} seed(s)" for c in curves)
    print(f"wrote {args.output}: {drawn}")


def _report(args: argparse.Namespace) -> None:
    from shoal.analysis.report import build_report, check_report_output, write_report

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


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["launch"]:  # its training command after `--` keeps its own --agent.*
            from shoal.launch.cli import main as launch

            return launch(argv[1:])
        rest, overrides = _split_section_overrides(argv)
        args = _parser().parse_args(rest)  # exits with code 2 and usage on a malformed line
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


def main(argv: Sequence[str] | None = None) -> int:
    global _command_started
    _command_started = _IMPORTED.pop() if _IMPORTED else time.time()
    with warnings.catch_warnings():  # restores the filters and showwarning on the way out
        warnings.simplefilter("default", ShoalWarning)  # shown once each, never raised
        python_show = warnings.showwarning

        def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            if issubclass(category, ShoalWarning):  # shoal's own: one plain line
                print(f"shoal: warning: {message}", file=sys.stderr)
            else:
                python_show(message, category, *args, **kwargs)

        warnings.showwarning = show
        return _main(argv)


def _entry() -> Any:
    sys.exit(main())
