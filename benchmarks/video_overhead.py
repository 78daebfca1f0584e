"""How much recording a video slows evaluation, with the Atari screen.

Plays the same greedy episodes of ALE/Pong-v5 (PPO's Nature CNN policy with fixed random
weights, one env, the loop of `shoal play` and `--video-every`) in four ways per round:

- `without`: no screen taken, nothing encoded (plain evaluation through the same loop);
- `screens`: the full-colour screen taken every agent step (two ALE RGB reads and a max), not
  encoded: the agent's own share of the work;
- `recording`: the screen taken and handed to `VideoWriter`, which writes it down a 1 MB pipe
  to ffmpeg, which encodes H.264 in its own process (the agent waits only if ffmpeg falls a full
  pipe behind);
- `neighbour`: as `without`, beside a busy numpy process: what any second busy process costs the
  agent on this machine, for comparison with what ffmpeg's process costs it.

The order of the ways turns every round, so that a change in the machine's load hits all alike.
Figures are medians over rounds of the slowdown of agent steps per second against `without`,
in wall time and in the agent process's CPU time. Target:
recording slows evaluation < 10%. The machine's load average is printed at the start and the
end: on a shared machine other work moves every figure.

On this 2-core VM the speed of the same code drifts by up to 40% within seconds (a round's
`without` took 2.3 to 4.5 ms per step), more than the effect measured. `--blocks N` therefore
also plays the first three ways side by side in one process, on three envs, in turns of
`--block-steps` agent steps (about a tenth of a second), N turns each: a drift then hits all
three alike. After a recording turn the benchmark waits, untimed, for ffmpeg to catch up, so
its encoding is charged to the recording turn and not to the next.

    python benchmarks/video_overhead.py [--env ALE/Pong-v5] [--episodes 2] [--rounds 4]
        [--max-frames N] [--blocks 300] [--block-steps 32]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil
import torch

from shoal import catalog
from shoal.data import Layout
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec, make_env
from shoal.envs.screens import ScreenEnv, make_screen_env
from shoal.runtime.recording import ACTING_THREADS, record_episodes
from shoal.runtime.rows import Acting
from shoal.telemetry.video import VideoWriter

WAYS = ("without", "screens", "recording", "neighbour")
BUSY = "import numpy as np\na = np.zeros((2000, 2000))\nwhile True:\n    a += 1\n"


class NoVideo:
    """Takes frames and does nothing: evaluation without a video, through the same loop."""

    frames = 0

    def add(self, screen: object, caption: str = "") -> None:
        pass


@dataclass
class Timing:
    wall: float  # seconds per agent step (closing the video included)
    cpu: float  # CPU seconds of this process per agent step
    steps: int
    ffmpeg_cpu: float = 0.0  # CPU seconds of the ffmpeg process per frame


def greedy_acting(env_id: str, config: EnvConfig) -> Acting:
    """PPO's policy (a Nature CNN for Atari) with fixed random weights, acting greedily."""
    torch.manual_seed(0)  # the same weights, so the same episodes, every time
    agent = catalog.get_agent("ppo")
    spec = env_spec(env_id, config)
    config = agent.config_cls()
    net = agent.make_networks(spec, config)
    return Acting(agent.make_policy(spec, config, net, 0, Layout()), spec, "greedy")


def evaluate(
    env_id: str, config: EnvConfig, seeds: list[int], way: str, video_path: Path
) -> Timing:
    """Play one greedy episode per seed in `way`."""
    acting = greedy_acting(env_id, config)
    spec = env_spec(env_id, config)
    video: NoVideo | VideoWriter = NoVideo()
    if way in ("screens", "recording"):
        screens = make_screen_env(env_id, config)
    else:
        screens = ScreenEnv(make_env(env_id, config), lambda: None, 15.0)
    if way == "recording":
        video = VideoWriter(video_path, screens.fps)
    busy = subprocess.Popen([sys.executable, "-c", BUSY]) if way == "neighbour" else None
    if busy is not None:
        time.sleep(0.5)  # numpy imported, the loop running
    children_before = _children_cpu()
    try:
        with torch.no_grad():
            start, cpu_start = time.perf_counter(), time.process_time()
            episodes = record_episodes(acting, screens, spec, video, seeds)  # type: ignore[arg-type]
            if isinstance(video, VideoWriter):
                video.close()  # waits for ffmpeg to finish the file: part of the cost
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
        screens.close()
    steps = sum(e.length for e in episodes)
    ffmpeg = (_children_cpu() - children_before) / steps if way == "recording" else 0.0
    return Timing(elapsed / steps, cpu / steps, steps, ffmpeg)


class Player:
    """One env played greedily for a few steps at a time, episode after episode, its screens
    taken and recorded as its way says."""

    def __init__(self, env_id: str, config: EnvConfig, way: str, video_path: Path) -> None:
        self.acting = greedy_acting(env_id, config)
        self.spec = env_spec(env_id, config)
        self.way = way
        if way == "without":
            self.screens = ScreenEnv(make_env(env_id, config), lambda: None, 15.0)
        else:
            self.screens = make_screen_env(env_id, config)
        self.video: NoVideo | VideoWriter = (
            VideoWriter(video_path, self.screens.fps) if way == "recording" else NoVideo()
        )
        self.seed, self.total = 0, 0.0
        self.obs = self._reset()

    def _reset(self) -> object:
        obs = self.screens.env.reset(seed=self.seed)[0]
        self.seed, self.total = self.seed + 1, 0.0
        self.video.add(self.screens.screen(), "return 0")
        return obs

    def play(self, steps: int) -> None:
        env, acting = self.screens.env, self.acting
        for _ in range(steps):
            action = acting.act(self.obs[None])[0][0]
            self.obs, reward, terminated, truncated, _ = env.step(int(action))
            self.total += float(reward)
            ended = bool(terminated or truncated)
            acting.observe(np.array([reward], np.float32), np.array([ended]))
            self.video.add(self.screens.screen(), f"return {self.total:g}")
            if ended:
                self.obs = self._reset()

    def close(self) -> None:
        if isinstance(self.video, VideoWriter):
            self.video.close()
        self.screens.close()


def side_by_side(
    env_id: str, config: EnvConfig, blocks: int, block_steps: int, video_path: Path
) -> dict[str, list[float]]:
    """Wall seconds of each turn of `block_steps` agent steps, per way, the ways in turn."""
    ways = WAYS[:3]
    players = {way: Player(env_id, config, way, video_path) for way in ways}
    turns: dict[str, list[float]] = {way: [] for way in ways}
    try:
        with torch.no_grad():
            for block in range(blocks):
                for way in ways[block % 3 :] + ways[: block % 3]:
                    start = time.perf_counter()
                    players[way].play(block_steps)
                    turns[way].append(time.perf_counter() - start)
                    if way == "recording":
                        time.sleep(0.02)  # ffmpeg finishes its frames (about 1 ms each)
    finally:
        for player in players.values():
            player.close()
    return turns


def report_side_by_side(turns: dict[str, list[float]], block_steps: int) -> None:
    base = turns["without"]
    print(
        f"\nSide by side: {len(base)} turns of {block_steps} agent steps per way; without "
        f"video {1000 * statistics.median(base) / block_steps:.2f} ms per step (median turn)."
    )
    for way, label in (("screens", "taking the screen"), ("recording", "recording")):
        ratios = sorted(t / b - 1 for t, b in zip(turns[way], base, strict=True))
        total = sum(turns[way]) / sum(base) - 1
        quartiles = statistics.quantiles(ratios, n=4)
        print(
            f"  {label + ':':<19} {100 * total:.1f}% slower over all turns; per turn median "
            f"{100 * quartiles[1]:.1f}% (quartiles {100 * quartiles[0]:.1f}% to "
            f"{100 * quartiles[2]:.1f}%)"
        )


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (ffmpeg, once a video is closed)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="ALE/Pong-v5")
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--max-frames", type=int, default=None, help="cut episodes (emulator frames)"
    )
    parser.add_argument(
        "--blocks", type=int, default=0, help="turns per way of the side-by-side design"
    )
    parser.add_argument("--block-steps", type=int, default=32)
    args = parser.parse_args()
    config = EnvConfig() if args.max_frames is None else EnvConfig(max_frames=args.max_frames)
    torch.set_num_threads(ACTING_THREADS)
    load_before = psutil.getloadavg()[0]
    print(f"load average at the start: {load_before:.1f} ({psutil.cpu_count()} CPUs)", flush=True)
    if args.blocks:
        with tempfile.TemporaryDirectory() as folder:
            turns = side_by_side(
                args.env, config, args.blocks, args.block_steps, Path(folder) / "video.mp4"
            )
        report_side_by_side(turns, args.block_steps)
        if args.rounds == 0:
            return
    seeds = list(range(args.episodes))
    runs: dict[str, list[Timing]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "video.mp4"
        for round_ in range(args.rounds):
            order = WAYS[round_ % len(WAYS) :] + WAYS[: round_ % len(WAYS)]
            for way in order:
                runs[way].append(evaluate(args.env, config, seeds, way, path))
            assert len({runs[way][-1].steps for way in WAYS}) == 1  # the same episodes
            print(
                f"round {round_ + 1} ({runs['without'][-1].steps} agent steps), ms per step "
                "wall/CPU: "
                + ", ".join(
                    f"{way} {1000 * runs[way][-1].wall:.2f}/{1000 * runs[way][-1].cpu:.2f}"
                    for way in WAYS
                )
                + f"; ffmpeg {1000 * runs['recording'][-1].ffmpeg_cpu:.2f} ms CPU per frame, "
                f"{path.stat().st_size / 1e3:.0f} kB; load average {psutil.getloadavg()[0]:.1f}",
                flush=True,
            )

    def slower(way: str, field: str) -> str:
        ratios = [
            1 - getattr(base, field) / getattr(t, field)
            for base, t in zip(runs["without"], runs[way], strict=True)
        ]
        return f"{100 * statistics.median(ratios):.1f}%"

    without = runs["without"]
    print(
        f"\n{args.env}, {args.episodes} greedy episode(s) x {args.rounds} rounds, one video frame "
        f"per agent step (4 emulator frames); {psutil.cpu_count()} CPUs, load average "
        f"{load_before:.1f} at the start, {psutil.getloadavg()[0]:.1f} at the end. Without video: "
        f"{statistics.median(1000 * t.wall for t in without):.2f} ms per step, recording: "
        f"{statistics.median(1000 * t.wall for t in runs['recording']):.2f} ms per step.\n"
        "Slowdown of evaluation (median over rounds), wall time / CPU time of the agent's "
        "process:\n"
        f"  taking the screen, not encoding:  {slower('screens', 'wall')} / "
        f"{slower('screens', 'cpu')}\n"
        f"  recording (target < 10%):         {slower('recording', 'wall')} / "
        f"{slower('recording', 'cpu')}, with ffmpeg's "
        f"{statistics.median(1000 * t.ffmpeg_cpu for t in runs['recording']):.2f} ms CPU per "
        "frame in its own process\n"
        f"  a busy numpy process beside it:   {slower('neighbour', 'wall')} / "
        f"{slower('neighbour', 'cpu')} (no video)"
    )


if __name__ == "__main__":
    main()
