"""Writes `data/main-<commit>/`: an IMPALA and an APPO run (checkpoint at 512 steps) and what the
code of that commit computed from them, for `test_family.py` to check later code against
with the same helpers (`policy_logits`, `learner_update`):

    PYTHONPATH=src python -m tests.agents_vtrace_ac.fixtures main-1733e9e

Each run keeps `config.yaml`, `summary.json` and its checkpoint. `expected.json` holds the
greedy actions and logits of the loaded policies on fixed observations, and the metrics and
weight sums of one learner update, from the checkpoint, on the unrolls of `fixed_unrolls`."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

import shoal
from shoal.data import Unroll
from shoal.envs import InProcessVectorEnv
from shoal.envs.registry import make_env_factory
from shoal.run.checkpoints import load_latest
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting

DATA = Path(__file__).parent / "data"
TINY = {"hidden_sizes": [16], "unroll_length": 8}
# APPO with every piece of learner state: the target network and the adapted KL weight.
AGENTS = {
    "impala": {**TINY, "normalize_advantages": True},
    "appo": {
        **TINY,
        "use_target_network": True,
        "use_kl_loss": True,
        "target_update_period": 2,
        "num_epochs": 2,
    },
}
RUN = {"num_envs": 4, "eval_episodes": 0, "checkpoint_interval": 512, "progress": False}


def fixed_unrolls(policy: shoal.LoadedPolicy) -> list[Unroll]:
    """Two unrolls of 4 CartPole envs (seed 0) acted by the loaded network's behaviour policy
    (seed 0): one learner batch, which the learner stacks along B. The recorded behaviour
    logits are sharpened x50, so the batch is off-policy: V-trace and the ratio clip bite."""
    agent, spec, config = policy.agent, policy.spec, policy.config
    factories = [make_env_factory("CartPole-v1")] * 4
    acting = Acting(agent.make_policy(spec, config, policy.net, 0, None), spec)
    collector = UnrollCollector(InProcessVectorEnv(factories, spec, seed=0), acting, 8)
    unrolls = [collector.collect(), collector.collect()]
    for unroll in unrolls:
        unroll.extras["logits"] = unroll.extras["logits"] * 50.0
    return unrolls


def policy_logits(policy: shoal.LoadedPolicy, obs: np.ndarray) -> torch.Tensor:
    """The loaded network's logits `[N, A]` on `obs` `[N, ...]`, each a first step."""
    with torch.no_grad():
        first = torch.ones(1, len(obs), dtype=torch.bool)
        return policy.net.unroll(torch.from_numpy(obs)[None], first, None)[0][0]


def learner_update(run_dir: Path) -> dict[str, Any]:
    """The learner restored from the run's checkpoint, then one update on `fixed_unroll`."""
    policy = shoal.load(run_dir)
    agent, spec, config = policy.agent, policy.spec, policy.config
    torch.manual_seed(0)
    learner = agent.make_learner(spec, config, agent.make_networks(spec, config))
    learner.load_state_dict(load_latest(run_dir / "checkpoints")["learner"])
    metrics = learner.update(fixed_unrolls(policy), 0.5).metrics
    sums = {key: float(value.double().sum()) for key, value in learner.weights().items()}
    return {"metrics": metrics, "weight_sums": sums, "state_keys": sorted(learner.state_dict())}


def main(name: str) -> None:
    out = DATA / name
    out.mkdir()
    obs = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    expected: dict[str, Any] = {"obs": obs.tolist(), "greedy_actions": {}, "logits": {}}
    expected["update"] = {}
    with tempfile.TemporaryDirectory() as runs:
        for algo, agent in AGENTS.items():
            result = shoal.train(
                algo,
                "CartPole-v1",
                seed=0,
                total_steps=512,
                agent=agent,
                run={**RUN, "runs_dir": runs, "tensorboard": False},
            )
            run_dir = out / f"{algo}-run"
            (run_dir / "checkpoints").mkdir(parents=True)
            for file in ("config.yaml", "summary.json"):
                shutil.copy(result.run_dir / file, run_dir / file)
            (checkpoint,) = (result.run_dir / "checkpoints").glob("step-*.pt")
            shutil.copy(checkpoint, run_dir / "checkpoints" / checkpoint.name)
            policy = shoal.load(run_dir)
            expected["greedy_actions"][algo] = policy.act(obs).tolist()
            expected["logits"][algo] = policy_logits(policy, obs).tolist()
            expected["update"][algo] = learner_update(run_dir)
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
