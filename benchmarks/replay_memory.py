"""Replay memory for Atari: bytes held by a TransitionReplay of 1M stacked-frame transitions.

Fills a prioritised `TransitionReplay` (frame_stack 4, 84x84 uint8) with `--transitions`
n-step transitions from episodes of `--episode-length` steps, then prints the bytes its arrays
hold, the process's resident memory growth, and the naive size (obs and next_obs stored
whole per transition) for comparison. Target (issue 6): under 8 GB for 1M transitions.

    python benchmarks/replay_memory.py [--transitions 1000000] [--episode-length 1000]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from shoal.replay import NStepAccumulator, TransitionReplay

GB = 1e9
STACK, SIZE = 4, 84


def resident_bytes() -> int:
    """Peak resident set size of this process (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def fill(replay: TransitionReplay, transitions: int, episode_length: int, envs: int) -> None:
    """Insert transitions from `envs` synthetic Atari streams, as actors would send them."""
    rng = np.random.default_rng(0)
    nstep = NStepAccumulator(envs, n=3, gamma=0.99)
    frames = rng.integers(0, 256, (envs, STACK, SIZE, SIZE), dtype=np.uint8)
    frames[:] = frames[:, -1:]  # a new episode's stack repeats its first frame
    step, added, started = 0, 0, time.time()
    while added < transitions:
        new = rng.integers(0, 256, (envs, 1, SIZE, SIZE), dtype=np.uint8)
        following = np.concatenate([frames[:, 1:], new], axis=1)
        ended = np.full(envs, (step + 1) % episode_length == 0)
        batch = nstep.step(
            frames,
            rng.integers(0, 6, envs),
            rng.random(envs).astype(np.float32),
            ended,
            np.zeros(envs, bool),
            following,
            following,
        )
        if len(batch["reward"]):
            replay.add(batch)
            added += len(batch["reward"])
        frames = np.where(ended[:, None, None, None], following[:, -1:], following)
        step += 1
        if step % 20_000 == 0:
            print(f"  {added:,} transitions added ({time.time() - started:.0f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transitions", type=int, default=1_000_000)
    parser.add_argument("--episode-length", type=int, default=1_000)
    parser.add_argument("--envs", type=int, default=8)
    args = parser.parse_args()
    before = resident_bytes()
    # One row per transition plus one per episode end.
    capacity = args.transitions + args.transitions // args.episode_length + args.envs
    replay = TransitionReplay(
        capacity, (STACK, SIZE, SIZE), np.uint8, frame_stack=STACK, prioritized=True
    )
    fill(replay, args.transitions, args.episode_length, args.envs)
    held = replay.memory_bytes()
    grown = resident_bytes() - before
    naive = args.transitions * 2 * STACK * SIZE * SIZE
    sample = replay.sample(32, 0.4, np.random.default_rng(0))
    print(f"transitions in replay: {len(replay):,} (capacity {capacity:,} rows)")
    print(f"replay arrays: {held / GB:.2f} GB ({held / len(replay):,.0f} bytes per transition)")
    print(f"process peak resident growth: {grown / GB:.2f} GB")
    print(f"naive storage (obs and next_obs per transition): {naive / GB:.2f} GB")
    print(f"sampled batch obs {sample['obs'].shape} {sample['obs'].dtype}")
    verdict = "meets" if max(held, grown) < 8 * GB else "misses"
    print(f"target: under 8 GB for 1M transitions -> {verdict}")


if __name__ == "__main__":
    main()
