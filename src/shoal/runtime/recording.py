"""Videos of a policy playing: whole episodes on one env, each frame streamed to an mp4.

`record_episodes` is the loop `shoal play` and `--video-every` share. `TrainingVideos` is the
driver's side of `--video-every N`: each time the run passes a multiple of N steps, one greedy
episode with the learner's current weights, played in the driver's process, into
`RUN_DIR/videos/step-<steps>.mp4` and, as an animated GIF, into TensorBoard.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from shoal.agents.base import ActMode, Agent
from shoal.data import Layout
from shoal.envs.screens import ScreenEnv, make_screen_env
from shoal.envs.spec import EnvSpec
from shoal.envs.vector import check_finite, checked_obs, env_failure
from shoal.errors import ShoalError
from shoal.run.checkpoints import learner_network
from shoal.run.layout import TENSORBOARD_DIR, VIDEO_DIR
from shoal.runtime.program import Program
from shoal.runtime.rows import Acting
from shoal.telemetry.video import VideoWriter, make_folder, mp4_to_gif
from shoal.tree import map_tree

__all__ = ["Episode", "TrainingVideos", "acting_for", "record_episodes"]

TENSORBOARD_SECONDS = 60  # of each video shown in TensorBoard, which holds GIFs in memory
EVAL_SEED_OFFSET = 10_000  # evaluation seeds differ from training seeds (as `shoal eval`)
# Acting on one observation (or a few) is fastest on one torch thread; two collapse on a busy
# machine (a Nature CNN step: 2.4 ms on one thread, 25 ms on two, measured at load 7 on 2 cores).
ACTING_THREADS = 1


@dataclass(frozen=True)
class Episode:
    seed: int
    episode_return: float
    length: int


def acting_for(
    agent: Agent,
    spec: EnvSpec,
    config: Any,
    net: torch.nn.Module,
    policy_state: dict[str, Any],
    mode: ActMode,
) -> Acting:
    """The agent's policy on `net` (its weights loaded) acting in `mode`, with the acting
    policies' merged `policy_state` (Agent57's bandits): what `shoal.load` and the videos of
    a run act with."""
    net.eval()
    policy = agent.make_policy(spec, config, net, 0, Layout())
    policy.load_state_dict(policy_state)
    return Acting(policy, spec, mode)


def record_episodes(
    acting: Acting,
    screens: ScreenEnv,
    spec: EnvSpec,
    video: VideoWriter,
    seeds: Sequence[int],
    title: str = "",
    on_episode: Callable[[Episode], None] | None = None,
) -> list[Episode]:
    """Play one episode per seed (reset with it) in turn, writing every screen to `video` with
    the episode and its return so far; the last frame of each episode is its final state."""
    episodes = []
    for k, seed in enumerate(seeds):
        label = f"{title}episode {k + 1}/{len(seeds)}  return "
        episode = _play_one(acting, screens, spec, video, seed, label)
        episodes.append(episode)
        if on_episode is not None:
            on_episode(episode)
    return episodes


def _play_one(
    acting: Acting, screens: ScreenEnv, spec: EnvSpec, video: VideoWriter, seed: int, label: str
) -> Episode:
    env = screens.env
    obs = _call(spec, "reset", 0, lambda: env.reset(seed=seed)[0])
    video.add(screens.screen(), label + "0")
    total, length, ended = 0.0, 0, False
    while not ended:
        batch = map_tree(lambda x: x[None], checked_obs(spec, obs, 0, length))
        check_finite(spec, batch, None, length)
        action = acting.act(batch)[0][0]
        env_action = int(action) if spec.discrete else action
        obs, reward, terminated, truncated, _ = _call(
            spec, "step", length, functools.partial(env.step, env_action)
        )
        rewards = np.array([reward], np.float32)
        check_finite(spec, batch, rewards, length)
        total += float(reward)
        length += 1
        ended = bool(terminated or truncated)
        acting.observe(rewards, np.array([ended]))
        video.add(screens.screen(), label + _number(total))
    return Episode(seed, total, length)


def _call(spec: EnvSpec, name: str, step: int, call: Callable[[], Any]) -> Any:
    """An env's reset or step, with its failure named as the vector envs name it."""
    try:
        return call()
    except ShoalError:
        raise
    except Exception as err:
        raise env_failure(spec, 0, step, name, err) from err


def _number(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"


class TrainingVideos:
    """`--video-every`: record one greedy evaluation episode when the driver asks.

    Each recording plays from the same seed (`seed + 10000`, the first `shoal eval` episode), so
    the videos of a run show the same start at successive points of training."""

    def __init__(self, program: Program, say: Callable[[str], None]) -> None:
        self.program = program
        self.say = say
        self.folder = program.run_dir / VIDEO_DIR
        self.seed = program.seed + EVAL_SEED_OFFSET
        self._events: Any = None  # TensorBoard's writer, made at the first recording
        self._net: torch.nn.Module | None = None
        self._tensorboard_failed = False
        # An env that cannot render fails here, before any training.
        make_screen_env(program.env_id, program.env_config).close()

    def record(
        self, env_steps: int, learner_state: dict[str, Any], policy_state: dict[str, Any]
    ) -> Path:
        """One episode with the learner's weights in `learner_state`, into
        `videos/step-<env_steps>.mp4`; returns its path."""
        program = self.program
        if self._net is None:
            self._net = program.agent.make_networks(program.spec, program.agent_config)
        self._net.load_state_dict(learner_network(learner_state))
        acting = acting_for(
            program.agent, program.spec, program.agent_config, self._net, policy_state, "greedy"
        )
        path = self.folder / f"step-{env_steps:012d}.mp4"
        make_folder(self.folder)
        screens = make_screen_env(program.env_id, program.env_config)
        try:
            with VideoWriter(path, screens.fps) as video, torch.no_grad():
                (episode,) = record_episodes(
                    acting, screens, program.spec, video, [self.seed], f"step {env_steps}  "
                )
        finally:
            screens.close()
        self.say(
            f"video at {env_steps} steps: {path} (return {_number(episode.episode_return)}, "
            f"{episode.length} steps)"
        )
        if "tensorboard" in program.run.loggers:
            self._to_tensorboard(path, env_steps)
        return path

    def _to_tensorboard(self, path: Path, env_steps: int) -> None:
        """The video's first minute as a GIF in TensorBoard's images (what `add_video` writes,
        without moviepy and without holding the frames)."""
        if self._tensorboard_failed:
            return
        gif = path.with_suffix(".gif")
        try:
            mp4_to_gif(path, gif, TENSORBOARD_SECONDS)
            data = gif.read_bytes()
        except (ShoalError, OSError) as err:
            self._tensorboard_failed = True
            self.say(f"videos go to {self.folder} only: TensorBoard's GIF failed ({err})")
            return
        finally:
            gif.unlink(missing_ok=True)
        from tensorboard.compat.proto.summary_pb2 import Summary
        from torch.utils.tensorboard.writer import FileWriter

        if self._events is None:  # beside the metrics' events: the same run in TensorBoard
            self._events = FileWriter(
                str(self.program.run_dir / TENSORBOARD_DIR), filename_suffix=".video"
            )
        width, height = _gif_size(data)
        image = Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=data)
        summary = Summary(value=[Summary.Value(tag="video/evaluation", image=image)])
        self._events.add_summary(summary, env_steps)
        self._events.flush()

    def close(self) -> None:
        if self._events is not None:
            self._events.close()


def _gif_size(data: bytes) -> tuple[int, int]:
    """Width and height from a GIF's logical screen descriptor (bytes 6-9, little-endian)."""
    return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
