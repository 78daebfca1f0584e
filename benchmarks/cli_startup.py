"""How fast the command line answers (issue 36): `shoal --help`, `shoal list` and a mistyped
algorithm name, each the median wall time of N fresh processes, and whether the command
imported torch or Ray (`python -X importtime`). Sample Factory's `--help` is timed the same
way beside it when its virtual environment is given.

    python benchmarks/cli_startup.py [--repeats 7] [--sf-python peers/sf/bin/python]

Print the load average with the figures: on a busy machine every start is slower.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {
    "shoal --help": ["--help"],
    "shoal list": ["list"],
    "shoal train pppo (mistyped)": ["train", "pppo", "--env", "CartPole-v1"],
}
TARGET_S = 0.3


def _time(command: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _heavy_imports(argv: list[str]) -> list[str]:
    """The heavy top-level packages `shoal ARGV` imported, from `-X importtime`'s log."""
    code = "import sys; from shoal.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *argv], capture_output=True, text=True
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    return sorted(imported & {"torch", "ray", "gymnasium", "numpy"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--sf-python", type=Path, default=None)
    args = parser.parse_args()
    shoal = [sys.executable, "-m", "shoal"]
    print(f"load average at start: {os.getloadavg()}")
    print(f"| command | median of {args.repeats} (s) | under {TARGET_S} s | heavy imports |")
    print("| --- | --- | --- | --- |")
    for name, argv in COMMANDS.items():
        seconds = _time(shoal + argv, args.repeats)
        heavy = ", ".join(_heavy_imports(argv)) or "none"
        print(f"| {name} | {seconds:.3f} | {'yes' if seconds < TARGET_S else 'NO'} | {heavy} |")
    if args.sf_python:
        peer = [str(args.sf_python), "-m", "sf_examples.atari.train_atari", "--help"]
        print(f"| Sample Factory --help (peer) | {_time(peer, args.repeats):.3f} | | |")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
