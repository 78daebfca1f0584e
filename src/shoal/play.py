"""`shoal play RUN_DIR`: watch the newest checkpoint play, as an mp4 video.

What a person would see: Atari's full-colour screen (not the agent's 84 x 84 grey input), any
other env's `rgb_array` render, with the episode and its return so far in a strip beneath.
Frames are streamed to ffmpeg as they are played (`shoal.telemetry.video`), so any number of
episodes of any length takes the same memory. Episode k starts from seed `seed + k`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from shoal.api import load
from shoal.envs.screens import make_screen_env
from shoal.errors import ConfigError
from shoal.run.buckets import is_url
from shoal.run.layout import VIDEO_DIR
from shoal.runtime.recording import (
    ACTING_THREADS,
    EVAL_SEED_OFFSET,
    Episode,
    record_episodes,
)
from shoal.telemetry.video import VideoWriter, check_video_path, make_folder

__all__ = ["PlayResult", "play"]

DEFAULT_EPISODES = 3


@dataclass(frozen=True)
class PlayResult:
    video: Path
    episodes: list[Episode]
    frames: int
    size: tuple[int, int]  # (width, height) of the video's frames
    fps: float


def play(
    run_dir: str | os.PathLike[str],
    episodes: int = DEFAULT_EPISODES,
    video: str | os.PathLike[str] | None = None,
    deterministic: bool = True,
    seed: int | None = None,
    trust_run: bool = False,
    lossless: bool = False,
    on_episode: Callable[[Episode], None] | None = None,
) -> PlayResult:
    """Play `episodes` episodes with the newest checkpoint of `run_dir` into an mp4.

    `video` defaults to `RUN_DIR/videos/play-step-<checkpoint steps>.mp4`; `deterministic` takes
    the most likely action (the default, as `shoal eval`'s; False samples actions);
    `lossless` stores exact colours (large files). `trust_run` as for `shoal.load`."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes <= 0:
        raise ConfigError(f"--episodes must be a whole number > 0, got {episodes!r}.")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ConfigError(f"--seed must be an integer, got {seed!r}.")
    if video is None and is_url(run_dir):
        raise ConfigError(
            f"shoal play {run_dir} writes its video to a local file: pass --video out.mp4 "
            "(Python: video='out.mp4')."
        )
    policy = load(run_dir, deterministic, trust_run)
    if video is None:
        path = Path(run_dir) / VIDEO_DIR / f"play-step-{policy.env_steps:012d}.mp4"
        make_folder(path.parent)
    else:
        path = Path(video)
    check_video_path(path)
    screens = make_screen_env(policy.env_id, policy.env_config)
    torch.set_num_threads(ACTING_THREADS)
    torch.manual_seed(policy.seed)
    first = policy.seed + EVAL_SEED_OFFSET if seed is None else seed
    try:
        with VideoWriter(path, screens.fps, lossless) as writer, torch.no_grad():
            played = record_episodes(
                policy.acting,
                screens,
                policy.spec,
                writer,
                range(first, first + episodes),
                on_episode=on_episode,
            )
    finally:
        screens.close()
    assert writer.size is not None
    return PlayResult(path, played, writer.frames, writer.size, writer.fps)


def main(args: Any) -> None:
    """`shoal play RUN_DIR [--episodes N] [--video out.mp4] [--stochastic] [--seed N]`."""

    def said(episode: Episode) -> None:
        print(
            f"episode (seed {episode.seed}): return {episode.episode_return:g}, "
            f"{episode.length} steps",
            flush=True,
        )

    result = play(
        args.run_dir,
        DEFAULT_EPISODES if args.episodes is None else args.episodes,
        args.video,
        not args.stochastic,
        args.seed,
        trust_run=args.trust_run,
        on_episode=said,
    )
    returns = [e.episode_return for e in result.episodes]
    width, height = result.size
    print(
        f"video: {result.video} ({len(returns)} episodes, {result.frames} frames, "
        f"{width}x{height} at {result.fps:g} fps); mean return {sum(returns) / len(returns):g}"
    )
