"""Raw environment throughput per backend, and shoal's actor loop as a fraction of it.

For CartPole-v1, Atari Pong, MinAtar Breakout, ViZDoom basic, MiniGrid DoorKey-5x5 (a Dict
observation, its image one-hot) and dm_control cartpole-swingup (continuous actions): agent
steps/s (and frames/s where a step is several emulator frames) of one env; of E envs stepped
in-process, in worker processes (shared memory) and by envpool (one pool, and "x2": two pools of
E/2 that the actor loop double-buffers, its shares taken of the larger raw figure); then shoal's
actor loop (`UnrollCollector`, which assembles `[T, E]` unrolls) on the same vector env, with a
fixed policy, as a fraction of the raw figure.
Two fixed policies: "replay" returns pre-drawn random actions (the loop's own overhead), and
"mlp" is a small torch network on the observation (what acting really costs).

ViZDoom runs each game in a process of its own (the vizdoom engine), which the Python env
talks to; "subprocess" moves the Python side into shoal's workers too.

    python benchmarks/env_throughput.py [--envs 8] [--seconds 3] [--ids CartPole-v1,...]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

from shoal.agents.base import Policy, PolicyStep
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec, make_vector_env, resolve_env
from shoal.envs.spec import EnvSpec
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting

UNROLL = 32


def random_actions(spec: EnvSpec, count: int, num_envs: int) -> np.ndarray:
    """`[count, num_envs, ...]` uniform random actions: indices, or values in a Box's bounds."""
    rng = np.random.default_rng(0)
    if spec.discrete:
        return rng.integers(0, spec.num_actions, (count, num_envs))
    box = spec.action_space
    shape = (count, num_envs, *box.shape)
    return rng.uniform(box.low, box.high, shape).astype(box.dtype)


def flat_obs(obs) -> torch.Tensor:
    """`[n, features]` of a Box batch or of a Dict batch's entries side by side."""
    parts = [obs[k] for k in sorted(obs)] if isinstance(obs, dict) else [obs]
    return torch.cat([torch.from_numpy(p).float().flatten(1) for p in parts], 1)


class ReplayPolicy(Policy):
    """Returns pre-drawn random actions: measures the actor loop, not a network."""

    def __init__(self, spec: EnvSpec, num_envs: int) -> None:
        self.spec = spec
        self.actions = random_actions(spec, 1024, num_envs)
        self.t = 0

    def step(self, obs, state, inputs, mode):
        self.t = (self.t + 1) % len(self.actions)
        rows = len(next(iter(obs.values()))) if isinstance(obs, dict) else len(obs)
        return PolicyStep(self.actions[self.t][:rows])


class MLPPolicy(ReplayPolicy):
    """A small fixed torch network on the flattened observation: Linear(obs, 64) - tanh -
    Linear(64, actions), then argmax (Discrete) or tanh (Box, whose bounds are [-1, 1] here)."""

    def __init__(self, spec: EnvSpec, num_envs: int) -> None:
        super().__init__(spec, num_envs)
        boxes = spec.obs_boxes
        boxes = boxes.values() if isinstance(boxes, dict) else [boxes]
        inputs = sum(math.prod(box.shape) for box in boxes)
        outputs = spec.num_actions if spec.discrete else math.prod(spec.action_shape)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(inputs, 64), torch.nn.Tanh(), torch.nn.Linear(64, outputs)
        )

    @torch.inference_mode()
    def step(self, obs, state, inputs, mode):
        out = self.net(flat_obs(obs))
        if self.spec.discrete:
            return PolicyStep(out.argmax(-1).numpy())
        action = torch.tanh(out).reshape(-1, *self.spec.action_shape)
        return PolicyStep(action.numpy().astype(self.spec.action_dtype))


def _timed(step, seconds: float) -> float:
    """Calls per second of `step()` over about `seconds`, after a short warm-up."""
    for _ in range(3):
        step()
    calls, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        step()
        calls += 1
    return calls / (time.perf_counter() - started)


def raw_vector(vector, seconds: float) -> float:
    actions = random_actions(vector.spec, 1024, vector.num_envs)
    t = iter(range(1 << 62))
    vector.reset()
    return vector.num_envs * _timed(lambda: vector.step(actions[next(t) % 1024]), seconds)


def actor_loop(vector, policy, seconds: float) -> float:
    collector = UnrollCollector(vector, Acting(policy, policy.spec), UNROLL)
    return vector.num_envs * UNROLL * _timed(collector.collect, seconds)


def single_env(env_id: str, config: EnvConfig, seconds: float) -> float:
    env = resolve_env(env_id, config).factory()
    env.reset(seed=0)
    env.action_space.seed(0)

    def step():
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()

    rate = _timed(step, seconds)
    env.close()
    return rate


def backends(env_id: str, spec: EnvSpec) -> list[tuple[str, EnvConfig]]:
    found = [("in-process", EnvConfig(backend="gymnasium"))]
    if not spec.dict_obs:  # worker processes share Box observations only
        found.append(
            ("subprocess", EnvConfig(backend="gymnasium", vector="subprocess", num_workers=2))
        )
    if resolve_env(env_id).family == "atari" and resolve_env(env_id).backend == "envpool":
        found.append(("envpool", EnvConfig(backend="envpool", double_buffer=False)))
        # Two pools of E/2 stepping in turn; its shares are of the one-pool raw figure above.
        found.append(("envpool x2", EnvConfig(backend="envpool")))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument(
        "--ids",
        default="CartPole-v1,ALE/Pong-v5,minatar:breakout,vizdoom:basic,"
        "MiniGrid-DoorKey-5x5-v0,dm_control:cartpole-swingup",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        f"{args.envs} envs per vector, unrolls of {UNROLL}, {args.seconds:g} s per figure; "
        "steps are agent steps (Pong and ViZDoom: 4 frames each)"
    )
    print(
        f"{'env':<28}{'backend':<12}{'raw steps/s':>12}{'loop replay':>13}{'%':>6}"
        f"{'loop mlp':>11}{'%':>6}"
    )
    for env_id in args.ids.split(","):
        spec = env_spec(env_id, EnvConfig(backend="gymnasium"))
        frames = spec.frames_per_step
        one = single_env(env_id, EnvConfig(backend="gymnasium"), args.seconds)
        print(
            f"{env_id:<28}{'single env':<12}{one:>12,.0f}"
            + (f"   ({one * frames:,.0f} frames/s)" if frames > 1 else "")
        )
        one_pool_raw = 0.0
        for name, config in backends(env_id, spec):
            vector = make_vector_env(resolve_env(env_id, config), spec, config, args.envs, 0)
            try:
                raw = raw_vector(vector, args.seconds)
                if name == "envpool":
                    one_pool_raw = raw
                elif name == "envpool x2":
                    raw = max(raw, one_pool_raw)  # against the faster of the two raw figures
                replay = actor_loop(vector, ReplayPolicy(spec, args.envs), args.seconds)
                mlp = actor_loop(vector, MLPPolicy(spec, args.envs), args.seconds)
            finally:
                vector.close()
            print(
                f"{'':<28}{name:<12}{raw:>12,.0f}{replay:>13,.0f}{100 * replay / raw:>5.0f}%"
                f"{mlp:>11,.0f}{100 * mlp / raw:>5.0f}%"
                + (f"   (raw {raw * frames:,.0f} frames/s)" if frames > 1 else "")
            )


if __name__ == "__main__":
    main()
