"""What the SAC and TD3 tests share: a small Box spec, fake replay batches and step inputs,
parameter snapshots and a run's last metrics row."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import torch

from shoal.agents.base import StepInputs
from shoal.envs.spec import EnvSpec

# Two action entries with asymmetric bounds, to see the rescaling from [-1, 1].
BOX = EnvSpec(
    "box",
    gym.spaces.Box(-1.0, 1.0, (4,), np.float64),
    gym.spaces.Box(np.array([0.0, -3.0], np.float32), np.array([1.0, 5.0], np.float32)),
)


def fake_batch(spec, size=16, seed=0):
    """A replay sample of random transitions for `spec`."""
    rng = np.random.default_rng(seed)
    d, obs_dim = spec.action_shape[0], spec.obs_shape[0]
    return {
        "obs": rng.normal(size=(size, obs_dim)).astype(np.float32),
        "next_obs": rng.normal(size=(size, obs_dim)).astype(np.float32),
        "action": rng.uniform(-1, 1, (size, d)).astype(np.float32),
        "reward": rng.normal(size=size).astype(np.float32),
        "discount": np.where(rng.random(size) < 0.2, 0.0, 0.99).astype(np.float32),
        "weights": np.ones(size, np.float32),
        "indices": np.arange(size),
    }


def step_inputs(steps):
    """Inputs of rows 0..n-1 that took `steps` actions so far, mid-episode."""
    steps = np.asarray(steps, np.int64)
    n = len(steps)
    return StepInputs(
        np.zeros(n, bool),
        np.zeros((n, 2), np.float32),
        np.zeros(n, np.float32),
        np.arange(n),
        steps,
    )


def params(module):
    return [p.detach().clone() for p in module.parameters()]


def unchanged(before, module):
    """Per parameter tensor of `module`: equal to its copy in `before`."""
    return [torch.equal(a, b) for a, b in zip(before, module.parameters(), strict=True)]


def last_row(run_dir):
    return json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
