"""Train PPO on CartPole-v1 until it is solved, then load the policy and play one episode.

python examples/quickstart.py [RUNS_DIR]
"""

from __future__ import annotations

import sys

import gymnasium as gym

import shoal


def main(runs_dir: str = "runs") -> float:
    result = shoal.train(
        "ppo",
        "CartPole-v1",
        seed=0,
        run={"runs_dir": runs_dir, "stop_at_return": 475, "eval_episodes": 5},
    )
    print(f"run directory: {result.run_dir}")
    print(result.evaluation.line(deterministic=True))

    policy = shoal.load(result.run_dir)
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=123)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(int(policy.act(obs)))
        total += float(reward)
        done = terminated or truncated
    print(f"one episode with the loaded policy: return {total:.0f}")
    return total


if __name__ == "__main__":
    main(*sys.argv[1:])
