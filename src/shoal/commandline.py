"""The parser of the `shoal` command line, shared by `shoal.cli` and `shoal launch`.

`shoal launch TARGET -- shoal train ...` checks the training command with the same parser as
`shoal train`, so a typo fails before a job is written. Both import it from here: nothing in the
package imports `shoal.cli`, the console entry.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from shoal.config import describe
from shoal.errors import ShoalError
from shoal.runtime.config import RunConfig

TRUST_HELP = (
    "import the modules the run's config.yaml names (a module:function env or torso, "
    "--env.import-module): only for runs you made or trust, as importing runs their code"
)


# Names the issue tracker and the distributed-RL literature use for the same settings.
ALIASES = {"num_envs": ("--envs-per-actor",)}


def run_option(name: str) -> str:
    return "--" + name.replace("_", "-")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every `shoal` command; `shoal launch`'s own options are its module's."""
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
    train.add_argument("--trust-run", action="store_true", help=f"with --resume: {TRUST_HELP}")
    train.add_argument(
        "--profile",
        metavar="FILE",
        help="ray: YAML of the resources of each role (learner, actors, replay, inference) in "
        "place of the --learner-*/--actor-*/--replay-*/--inference* flags, e.g. "
        "examples/profiles/cluster.yaml",
    )
    train.add_argument(
        "--dataset",
        metavar="ID_OR_FOLDER",
        help="agents that learn from demonstrations (bc): the Minari dataset to learn from, "
        "its id (in $MINARI_DATASETS_PATH or ~/.minari/datasets) or its folder, e.g. one "
        "written by `shoal record`; the same as --agent.dataset",
    )
    for name, type_name, default, doc in describe(RunConfig):
        train.add_argument(
            run_option(name),
            *ALIASES.get(name, ()),
            dest=f"run.{name}",
            metavar=type_name.upper(),
            help=f"{doc} (default {default})",
        )

    tune_parser(sub)
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
    evaluate.add_argument("--trust-run", action="store_true", help=TRUST_HELP)

    play = sub.add_parser(
        "play", help="play a run's newest checkpoint into an mp4 video (Atari: the colour screen)"
    )
    play.add_argument("run_dir")
    play.add_argument("--episodes", type=int, default=None, help="episodes to play (default 3)")
    play.add_argument(
        "--video", help="mp4 to write (default RUN_DIR/videos/play-step-<checkpoint steps>.mp4)"
    )
    play_modes = play.add_mutually_exclusive_group()
    play_modes.add_argument(
        "--deterministic",
        action="store_true",
        help="take the most likely action (the default, as shoal eval's)",
    )
    play_modes.add_argument(
        "--stochastic", action="store_true", help="sample actions from the policy instead"
    )
    play.add_argument("--seed", type=int, default=None, help="seed of the first episode")
    play.add_argument("--trust-run", action="store_true", help=TRUST_HELP)

    recording = sub.add_parser(
        "record",
        help="record a run's policy playing, as a Minari dataset (for bc and offline tools)",
        description="Play --episodes whole episodes with the newest checkpoint of RUN_DIR (or "
        "a checkpoint file, or a saved policy) and write them as the Minari dataset --out: "
        "observations, the actions the env got, rewards, terminations, truncations and infos, "
        "as played. Minari's minari.load_dataset(ID) reads it; `shoal train bc --dataset` "
        "learns from it. Episode k is reset with seed --seed + k (default the run's seed + "
        "10000, as shoal eval's).",
    )
    recording.add_argument("run_dir")
    recording.add_argument("--episodes", type=int, required=True, help="episodes to play and write")
    recording.add_argument(
        "--out",
        required=True,
        metavar="ID",
        help="the dataset's Minari id, (namespace/)name-vN, e.g. cartpole/ppo-v0; never "
        "overwritten",
    )
    recording.add_argument(
        "--datasets-dir",
        metavar="DIR",
        help="folder to write the dataset in (default Minari's: $MINARI_DATASETS_PATH, else "
        "~/.minari/datasets)",
    )
    record_modes = recording.add_mutually_exclusive_group()
    record_modes.add_argument(
        "--deterministic",
        action="store_true",
        help="take the most likely action (the default, as shoal eval's)",
    )
    record_modes.add_argument(
        "--stochastic", action="store_true", help="sample actions from the policy instead"
    )
    recording.add_argument("--seed", type=int, default=None, help="seed of the first episode")
    recording.add_argument("--trust-run", action="store_true", help=TRUST_HELP)

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


def tune_parser(sub: Any) -> None:
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
    tune.add_argument(
        "--trust-run",
        action="store_true",
        help="with --resume: the experiment's Ray Tune state is unpickled and the modules its "
        "config names are imported, which runs code: only for experiments you made or trust",
    )
    for name, type_name, default, doc in describe(RunConfig):
        tune.add_argument(
            run_option(name),
            *ALIASES.get(name, ()),
            dest=f"run.{name}",
            metavar=type_name.upper(),
            help=f"{doc} (default {default})",
        )


def split_section_overrides(
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
            if not items or (items[0].startswith("--") and not is_number(items[0])):
                raise ShoalError(f"{item} needs a value, e.g. {item} 0.001.")
            value = items.pop(0)
        overrides[section][key.replace("-", "_")] = value
    return rest, overrides


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
