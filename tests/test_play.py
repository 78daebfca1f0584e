"""Videos: `shoal play`, `--video-every`, and what the videos hold.

Videos are read back with imageio-ffmpeg and compared with the env's own renders, played again
with the same seeds and the same deterministic policy: exactly when written losslessly, within
a small tolerance for the default H.264.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import gymnasium as gym
import numpy as np
import psutil
import pytest

import shoal
from shoal.cli import main
from shoal.envs.screens import make_screen_env
from shoal.errors import EnvError, ShoalError, StorageError
from shoal.play import play
from shoal.runtime.recording import record_episodes
from shoal.telemetry.video import VideoWriter

imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
pytest.importorskip("pygame")  # CartPole's rgb_array renderer

CARTPOLE_SCREEN = (400, 600)  # height, width of CartPole's render


def read_video(path: Path) -> tuple[dict, list[np.ndarray]]:
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    width, height = meta["size"]
    return meta, [np.frombuffer(f, np.uint8).reshape(height, width, 3) for f in reader]


def cartpole_renders(run_dir: Path, seeds: list[int]) -> list[np.ndarray]:
    """Every screen of one episode per seed: the reset, then one per step, acted by the run's
    deterministic policy on a CartPole-v1 made here."""
    policy = shoal.load(run_dir, deterministic=True)
    env = gym.make("CartPole-v1", render_mode="rgb_array")
    frames = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        frames.append(env.render())
        ended = False
        while not ended:
            obs, _, terminated, truncated, _ = env.step(int(policy.act(obs)))
            frames.append(env.render())
            ended = terminated or truncated
    return frames


def test_a_trained_cartpole_run_plays_into_a_video_that_shows_its_renders(quiet_run, tmp_path):
    run = shoal.train(
        "ppo", "CartPole-v1", total_steps=6_000, run={**quiet_run, "eval_episodes": 0}
    )
    exact = tmp_path / "exact.mp4"
    result = play(run.run_dir, episodes=3, video=exact, deterministic=True, seed=7, lossless=True)

    renders = cartpole_renders(run.run_dir, [7, 8, 9])
    meta, frames = read_video(exact)
    lengths = [e.length for e in result.episodes]
    assert len(frames) == result.frames == sum(lengths) + 3 == len(renders)  # + each reset
    height, width = CARTPOLE_SCREEN
    assert meta["fps"] == 50  # CartPole's render_fps: the video plays at the game's speed
    assert meta["size"] == result.size and result.size[0] == width and result.size[1] > height
    for k, (frame, render) in enumerate(zip(frames, renders, strict=True)):
        assert np.array_equal(frame[:height, :width], render), f"frame {k}"
        assert frame[height:].max() > 0  # the caption strip has text in it

    # The command line writes the default H.264: the same frames within compression error.
    video = tmp_path / "cli.mp4"
    argv = ["play", str(run.run_dir), "--episodes", "3", "--video", str(video)]
    assert main([*argv, "--deterministic", "--seed", "7"]) == 0
    meta, frames = read_video(video)
    assert len(frames) == len(renders) and meta["codec"] == "h264"
    errors = [
        np.abs(f[:height, :width].astype(int) - r).mean()
        for f, r in zip(frames, renders, strict=True)
    ]
    assert max(errors) < 2.0  # mean absolute error per pixel and channel, of 255
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli.mp4", "exact.mp4", "runs"]


@pytest.fixture
def atari_run(quiet_run):
    pytest.importorskip("ale_py")
    # Episodes cut at 160 frames (40 agent steps) keep the video short.
    return shoal.train(
        "ppo",
        "ALE/Pong-v5",
        total_steps=128,
        run={**quiet_run, "num_envs": 2, "eval_episodes": 0},
        agent={"unroll_length": 64, "minibatch_size": 64},
        env_config={"max_frames": 160},
    ).run_dir


class EmulatorFrames(gym.Wrapper):
    """Every colour screen the emulator shows, read from the ALE after each emulator frame."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.frames: list[np.ndarray] = []

    def reset(self, **kwargs):
        out = self.env.reset(**kwargs)
        self.frames = [self.env.unwrapped.ale.getScreenRGB()]
        return out

    def step(self, action):
        out = self.env.step(action)
        self.frames.append(self.env.unwrapped.ale.getScreenRGB())
        return out


def atari_screens(run_dir: Path, seeds: list[int]) -> list[np.ndarray]:
    """What a person sees at each agent step: the pixel-wise max of the last two emulator
    frames (of the reset and its no-ops, then of each step's 4 frames)."""
    from shoal.envs.registry import make_env

    policy = shoal.load(run_dir, deterministic=True)
    env = make_env(policy.env_id, policy.env_config)  # the AtariWrapper
    tap = EmulatorFrames(env.env)
    env.env = tap
    screens = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        screens.append(np.maximum(*tap.frames[-2:]))
        ended = False
        while not ended:
            tap.frames = []
            obs, _, terminated, truncated, _ = env.step(int(policy.act(obs)))
            screens.append(np.maximum(*tap.frames[-2:]))
            ended = terminated or truncated
    return screens


def test_an_atari_video_shows_the_colour_screen_at_the_games_speed(atari_run, tmp_path):
    video = tmp_path / "pong.mp4"
    result = play(atari_run, episodes=2, video=video, deterministic=True, seed=3, lossless=True)
    meta, frames = read_video(video)
    assert meta["fps"] == 15  # 60 emulator frames per second, 4 per agent step
    width, height = meta["size"]
    assert (width, height) == result.size and width == 160 and height > 210  # not 84 x 84 grey
    assert [e.length for e in result.episodes] == [40, 40]  # the 160-frame cap
    expected = atari_screens(atari_run, [3, 4])
    assert len(frames) == result.frames == 82 == len(expected)
    for k, (frame, screen) in enumerate(zip(frames, expected, strict=True)):
        assert np.array_equal(frame[:210], screen), f"frame {k}"
    assert len({f[:210].tobytes() for f in frames}) > 40  # the game moves


def test_a_video_every_n_steps_goes_to_the_run_and_to_tensorboard(quiet_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = shoal.train(
        "ppo",
        "CartPole-v1",
        total_steps=2_048,
        run={**quiet_run, "tensorboard": True, "video_every": 1_000, "eval_episodes": 0},
        agent={"unroll_length": 32},
    )
    videos = sorted((run.run_dir / "videos").iterdir())
    # the driver records when a count of steps first passes 1000 and 2000
    assert [v.name for v in videos] == ["step-000000001024.mp4", "step-000000002048.mp4"]
    for video in videos:
        meta, frames = read_video(video)
        assert meta["fps"] == 50 and len(frames) >= 2
    events = EventAccumulator(str(run.run_dir / "tb"), size_guidance={"images": 0}).Reload()
    images = events.Images("video/evaluation")
    assert [i.step for i in images] == [1024, 2048]
    assert all(i.encoded_image_string[:3] == b"GIF" for i in images)


def test_recording_100_episodes_holds_no_frames(quiet_run, tmp_path):
    run = shoal.train("ppo", "CartPole-v1", total_steps=256, run={**quiet_run, "eval_episodes": 0})
    policy = shoal.load(run.run_dir, deterministic=True)
    screens = make_screen_env("CartPole-v1")
    process = psutil.Process()
    with VideoWriter(tmp_path / "warm.mp4", screens.fps) as video:  # pygame, fonts, ffmpeg
        record_episodes(policy.acting, screens, policy.spec, video, [0])
    rss_before = process.memory_info().rss
    tracemalloc.start()
    try:
        with VideoWriter(tmp_path / "hundred.mp4", screens.fps) as video:
            played = record_episodes(policy.acting, screens, policy.spec, video, range(100))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    grown = process.memory_info().rss - rss_before
    frames = sum(e.length + 1 for e in played)
    screen_bytes = CARTPOLE_SCREEN[0] * CARTPOLE_SCREEN[1] * 3
    assert frames * screen_bytes > 500 * 2**20  # holding the frames would take > 500 MB
    assert peak < 50 * 2**20, f"peak Python allocations {peak / 2**20:.1f} MB"
    assert grown < 50 * 2**20, f"resident memory grew {grown / 2**20:.1f} MB"
    assert video.frames == frames


def test_an_error_while_recording_leaves_no_file(tmp_path):
    path = tmp_path / "broken.mp4"
    with pytest.raises(RuntimeError), VideoWriter(path, 30) as video:
        video.add(np.zeros((20, 30, 3), np.uint8), "return 0")
        raise RuntimeError("the env failed")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ShoalError, match="changed size"), VideoWriter(path, 30) as video:
        video.add(np.zeros((20, 30, 3), np.uint8))
        video.add(np.zeros((22, 30, 3), np.uint8))
    assert list(tmp_path.iterdir()) == []


def test_ffmpeg_dying_mid_video_is_a_storage_error_and_leaves_no_file(tmp_path):
    path = tmp_path / "cut.mp4"
    screen = np.zeros((20, 30, 3), np.uint8)
    with (
        pytest.raises(StorageError, match="ffmpeg stopped") as info,
        VideoWriter(path, 30) as video,
    ):
        video.add(screen, "return 0")
        # This writer's ffmpeg: the test process may have others (a Ray cluster's, say).
        mine = [p for p in psutil.Process().children() if str(tmp_path) in " ".join(p.cmdline())]
        (ffmpeg,) = mine
        ffmpeg.kill()
        ffmpeg.wait()
        for _ in range(10_000):  # the pipe breaks on the next write; `add` says so soon after
            video.add(screen, "return 0")
    assert "Traceback" not in str(info.value) and str(path) in str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("env_id", "message"),
    [
        ("shoal.envs.maze:snake_maze", "render_mode=None"),
        ("shoal/DeepSea-v0", "offers the render modes []"),
    ],
)
def test_envs_without_colour_frames_cannot_be_recorded(env_id, message):
    import shoal.envs.deep_sea  # noqa: F401  (registers shoal/DeepSea-v0)

    with pytest.raises(EnvError, match="cannot be recorded") as info:
        make_screen_env(env_id)
    assert message in str(info.value) and "rgb_array" in str(info.value)


def test_video_every_on_an_env_that_cannot_render_stops_before_training(capsys, tmp_path):
    runs = tmp_path / "runs"
    env_id = "shoal.envs.maze:snake_maze"  # a factory env made without render_mode
    argv = ["train", "ppo", "--env", env_id, "--video-every", "1000"]
    assert main([*argv, "--runs-dir", str(runs), "--progress", "false"]) == 2
    err = capsys.readouterr().err
    assert f"{env_id} cannot be recorded" in err and "Traceback" not in err
    assert not runs.exists() or not any(runs.iterdir())


def minatar_renders(run_dir: Path, seed: int) -> list[np.ndarray]:
    """Every render of one episode from `seed`, acted by the run's deterministic policy on a
    MinAtar env made here."""
    from shoal.envs.minatar import make_minatar

    policy = shoal.load(run_dir, deterministic=True)
    env = make_minatar("breakout")
    obs, _ = env.reset(seed=seed)
    frames, ended = [env.render()], False
    while not ended:
        obs, _, terminated, truncated, _ = env.step(int(policy.act(obs)))
        frames.append(env.render())
        ended = terminated or truncated
    return frames


def test_a_minatar_run_plays_into_a_video_of_its_coloured_grid(quiet_run, tmp_path):
    pytest.importorskip("minatar")
    run = shoal.train(
        "ppo", "minatar:breakout", total_steps=256, run={**quiet_run, "eval_episodes": 0}
    )
    video = tmp_path / "breakout.mp4"
    result = play(run.run_dir, episodes=1, video=video, deterministic=True, seed=5, lossless=True)
    meta, frames = read_video(video)
    renders = minatar_renders(run.run_dir, 5)
    assert meta["fps"] == 15 and meta["size"] == result.size
    assert result.size[0] == 320 and result.size[1] > 320  # 10 cells of 32 px, and the caption
    assert len(frames) == result.frames == result.episodes[0].length + 1 == len(renders)
    for k, (frame, render) in enumerate(zip(frames, renders, strict=True)):
        assert np.array_equal(frame[:320], render), f"frame {k}"
    assert len({f[:320].tobytes() for f in frames}) > 2  # the ball moves


@pytest.mark.parametrize(
    ("video", "message"),
    [
        ("out.avi", "videos are written as mp4"),
        ("missing/out.mp4", "does not exist"),
        (".", "is a folder"),
    ],
)
def test_play_refuses_a_bad_video_path(capsys, tmp_path, quiet_run, video, message):
    run = shoal.train("ppo", "CartPole-v1", total_steps=64, run={**quiet_run, "eval_episodes": 0})
    before = sorted(tmp_path.rglob("*"))
    target = str(tmp_path / video) if video != "." else str(tmp_path)
    assert main(["play", str(run.run_dir), "--video", target]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert sorted(tmp_path.rglob("*")) == before


def test_play_and_video_every_refuse_bad_counts(capsys, tmp_path, quiet_run):
    run = shoal.train("ppo", "CartPole-v1", total_steps=64, run={**quiet_run, "eval_episodes": 0})
    assert main(["play", str(run.run_dir), "--episodes", "0"]) == 2
    assert "--episodes must be a whole number > 0" in capsys.readouterr().err
    runs = tmp_path / "other"
    argv = ["train", "ppo", "--env", "CartPole-v1", "--video-every", "0", "--runs-dir", str(runs)]
    assert main(argv) == 2
    assert "video_every must be > 0" in capsys.readouterr().err
    assert not runs.exists()
    assert not (run.run_dir / "videos").exists()


def test_play_is_greedy_by_default_as_eval_is(monkeypatch, tmp_path, capsys):
    # Issue 35, item 17: `shoal play` sampled by default while `shoal eval` is greedy.
    modes = []

    def loading(run_dir, deterministic, trust_run):
        modes.append(deterministic)
        raise ShoalError("stop here: only the mode is checked")

    monkeypatch.setattr("shoal.play.load", loading)
    video = str(tmp_path / "v.mp4")
    for argv in ([], ["--deterministic"], ["--stochastic"]):
        assert main(["play", str(tmp_path), "--video", video, *argv]) == 2
    with pytest.raises(ShoalError):
        play(tmp_path, video=video)
    assert modes == [True, True, False, True]
    with pytest.raises(SystemExit):  # one or the other
        main(["play", str(tmp_path), "--deterministic", "--stochastic"])
