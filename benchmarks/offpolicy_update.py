"""One SAC or TD3 update on HalfCheetah-v5's shapes, shoal against Stable-Baselines3, against the
machine's measured matmul peak (the update's FLOP floor), in one run.

Prints, all at the same torch intra-op thread count (`--threads`, 1 by default: shoal's):

- the machine's fp32 matmul rate: a large square matmul (the peak) and one of the update's own
  shape (batch 256 through a 256x256 layer);
- the update's FLOPs, counted layer by layer: forward and backward passes of the actor, the twin
  critics and the target critics (and TD3's target actor) for a batch of 256, with a backward
  pass costing two forward ones where it needs the weights' and the input's gradients and one
  where it needs one of them;
- shoal's and SB3's time per update (median of `--repeats` blocks of `--updates` updates on a
  replay of random transitions, after a warm-up), and each as a multiple of the FLOP floor;
- the cost of one HalfCheetah env step and of one acting step of each side's policy.

    python benchmarks/offpolicy_update.py [--algo sac|td3] [--threads 1] [--profile]

`--profile` adds torch.profiler's table of shoal's update. SB3 runs from --sb3-python, else
peers/sb3/bin/python.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import time

import numpy as np
import torch
from cartpole_ppo import find_sb3

TASK = "HalfCheetah-v5"
BATCH = 256

SB3_SCRIPT = r"""
import json, sys, time
import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import SAC, TD3

algo, task, threads, updates, repeats = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
torch.set_num_threads(threads)
env = gym.make(task)
cls = SAC if algo == "sac" else TD3
model = cls("MlpPolicy", env, learning_starts=0, seed=0, device="cpu")
model._setup_learn(10_000)
rng = np.random.default_rng(0)
obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
for _ in range(10_000):
    model.replay_buffer.add(
        rng.normal(size=(1, obs_dim)), rng.normal(size=(1, obs_dim)),
        rng.uniform(-1, 1, (1, act_dim)), rng.normal(size=1), np.zeros(1), [{}],
    )
model.train(gradient_steps=20, batch_size=256)
blocks, cpu = [], []
for _ in range(repeats):
    started, cpu_started = time.perf_counter(), time.process_time()
    model.train(gradient_steps=updates, batch_size=256)
    blocks.append((time.perf_counter() - started) / updates)
    cpu.append((time.process_time() - cpu_started) / updates)
obs = env.reset(seed=0)[0]
acting = []
for _ in range(3):
    started = time.perf_counter()
    for _ in range(200):
        model.predict(obs, deterministic=False)
    acting.append((time.perf_counter() - started) / 200)
mid = len(blocks) // 2
row = {"update": sorted(blocks)[mid], "update_cpu": sorted(cpu)[mid], "act": min(acting)}
print(json.dumps(row))
"""


def matmul_rate(n: int, k: int, m: int, seconds: float = 1.0) -> float:
    """FLOP/s of `[n, k] @ [k, m]` in fp32, best of repeated blocks timed in the process's CPU
    time (what a busy machine's other work does not inflate, on one thread)."""
    a, b = torch.randn(n, k), torch.randn(k, m)
    reps = max(1, int(2e8 / (2 * n * k * m)))
    best = float("inf")
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        started = time.process_time()
        for _ in range(reps):
            torch.mm(a, b)
        best = min(best, (time.process_time() - started) / reps)
    return 2 * n * k * m / best


def linear_macs(sizes: list[int]) -> int:
    """Multiply-adds of one sample's forward pass through an MLP of these widths."""
    return sum(a * b for a, b in itertools.pairwise(sizes))


def update_flops(algo: str, obs: int, act: int, hidden: list[int]) -> dict[str, float]:
    """FLOPs of one update for a batch of `BATCH`, part by part.

    A backward pass through a layer costs one forward for the input's gradient and one for the
    weights'; the first layer needs no input gradient, and where only the input's gradient is
    needed (the critics in the actor's loss) a backward costs one forward.
    """
    out = 2 * act if algo == "sac" else act
    actor = linear_macs([obs, *hidden, out])
    actor_first = obs * hidden[0]
    critic = linear_macs([obs + act, *hidden, 1])
    critic_first = (obs + act) * hidden[0]
    parts: dict[str, float] = {}
    if algo == "sac":
        parts["actor forward (s and s')"] = 2 * actor
        parts["target critics forward"] = 2 * critic
        parts["critics forward + backward"] = 2 * (3 * critic - critic_first)
        parts["actor loss: critics forward + input backward"] = 2 * 2 * critic
        parts["actor backward"] = 2 * actor - actor_first
    else:  # TD3: per critic step; the actor's parts every second step (policy_delay 2)
        parts["target actor forward"] = actor
        parts["target critics forward"] = 2 * critic
        parts["critics forward + backward"] = 2 * (3 * critic - critic_first)
        parts["actor forward + backward, critic 1 (every 2nd)"] = 0.5 * (
            3 * actor - actor_first + 2 * critic
        )
    return {name: 2.0 * BATCH * macs for name, macs in parts.items()}


def shoal_update(algo: str, threads: int, updates: int, repeats: int, profile: bool) -> dict:
    import gymnasium as gym

    from shoal.catalog import get_agent
    from shoal.envs.spec import EnvSpec

    torch.set_num_threads(threads)
    env = gym.make(TASK)
    spec = EnvSpec(TASK, env.observation_space, env.action_space)
    agent = get_agent(algo)
    config = agent.config_cls()
    net = agent.make_networks(spec, config)
    learner = agent.make_learner(spec, config, net)
    rng = np.random.default_rng(0)
    obs_dim, act_dim = spec.obs_shape[0], spec.action_shape[0]

    def batch() -> dict[str, np.ndarray]:
        return {
            "obs": rng.normal(size=(BATCH, obs_dim)).astype(np.float32),
            "next_obs": rng.normal(size=(BATCH, obs_dim)).astype(np.float32),
            "action": rng.uniform(-1, 1, (BATCH, act_dim)).astype(np.float32),
            "reward": rng.normal(size=BATCH).astype(np.float32),
            "discount": np.full(BATCH, 0.99, np.float32),
        }

    batches = [batch() for _ in range(16)]
    for i in range(20):
        learner.update(batches[i % 16], 0.0)
    blocks, cpu = [], []
    for _ in range(repeats):
        started, cpu_started = time.perf_counter(), time.process_time()
        for i in range(updates):
            learner.update(batches[i % 16], 0.0)
        blocks.append((time.perf_counter() - started) / updates)
        cpu.append((time.process_time() - cpu_started) / updates)
    if profile:
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as torch_profile

        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            for i in range(50):
                learner.update(batches[i % 16], 0.0)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
    policy = agent.make_policy(spec, config, net, 0)
    obs = env.reset(seed=0)[0][None].astype(np.float32)
    from shoal.agents.base import StepInputs

    inputs = StepInputs(
        np.zeros(1, bool),
        np.zeros((1, act_dim), np.float32),
        np.zeros(1, np.float32),
        np.arange(1),
        np.full(1, 10**9, np.int64),
    )
    state = policy.initial_state(np.arange(1))
    acting = []
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(200):
            policy.step(obs, state, inputs, "train")
        acting.append((time.perf_counter() - started) / 200)
    env_steps = []
    for _ in range(3):
        env.reset(seed=0)
        started = time.perf_counter()
        for _ in range(200):
            env.step(env.action_space.sample())
        env_steps.append((time.perf_counter() - started) / 200)
    return {
        "update": statistics.median(blocks),
        "update_cpu": statistics.median(cpu),
        "act": min(acting),
        "env": min(env_steps),
        "hidden": list(config.hidden_sizes),
        "obs": obs_dim,
        "act_dim": act_dim,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algo", choices=("sac", "td3"), default="sac")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--updates", type=int, default=100, help="updates per timed block")
    parser.add_argument("--repeats", type=int, default=5, help="timed blocks (median)")
    parser.add_argument("--profile", action="store_true", help="torch.profiler table of shoal's")
    parser.add_argument("--sb3-python", help="a Python with stable-baselines3 and MuJoCo")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(
        f"{args.algo.upper()} on {TASK}'s shapes, batch {BATCH}, torch {torch.__version__}, "
        f"{args.threads} intra-op thread(s) on both sides, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f}",
        flush=True,
    )
    rates = {n: matmul_rate(n, n, n) for n in (256, 512, 1024, 2048)}
    peak = max(rates.values())
    small = rates[256]
    print(
        "fp32 square matmul GFLOP/s: "
        + ", ".join(f"{n}^3 {rate / 1e9:.0f}" for n, rate in rates.items())
        + f"; the peak (best) {peak / 1e9:.0f}; the update's layer shape ([256, 256] @ "
        f"[256, 256]) {small / 1e9:.0f}",
        flush=True,
    )
    ours = shoal_update(args.algo, args.threads, args.updates, args.repeats, args.profile)
    flops = update_flops(args.algo, ours["obs"], ours["act_dim"], ours["hidden"])
    total = sum(flops.values())
    floor = total / peak
    print(f"update FLOPs (hidden {ours['hidden']}): {total / 1e6:.0f} M")
    for name, value in flops.items():
        print(f"  {name}: {value / 1e6:.0f} M")
    print(
        f"floor at the peak: {floor * 1e3:.2f} ms; at the layer-shape rate "
        f"{total / small * 1e3:.2f} ms"
    )
    rows = [("shoal", ours["update"], ours["update_cpu"], ours["act"])]
    sb3 = find_sb3(args.sb3_python)
    if sb3 is not None:
        command = [sb3, "-c", SB3_SCRIPT, args.algo, TASK, str(args.threads)]
        command += [str(args.updates), str(args.repeats)]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        theirs = json.loads(out.strip().splitlines()[-1])
        rows.append(("SB3", theirs["update"], theirs["update_cpu"], theirs["act"]))
    else:
        print("Stable-Baselines3 not found: SB3's row is left out")
    print("\n| side | update ms (wall) | update ms (CPU) | CPU x floor | GFLOP/s (CPU) | act ms |")
    print("|---|---|---|---|---|---|")
    for side, update, update_cpu, act in rows:
        print(
            f"| {side} | {update * 1e3:.2f} | {update_cpu * 1e3:.2f} | {update_cpu / floor:.1f}x "
            f"| {total / update_cpu / 1e9:.0f} | {act * 1e3:.3f} |"
        )
    print(
        f"\nHalfCheetah env step: {ours['env'] * 1e3:.3f} ms; load average {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
