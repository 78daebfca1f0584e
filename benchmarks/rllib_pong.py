"""RLlib's APPO on Atari Pong (CPU), with the settings of ../shared/peers/README.md: run by
`pong_throughput.py` with the Python of RLlib's own virtual environment
(`bash ../shared/peers/setup_rllib.sh peers/rllib`), never imported by shoal.

Two env runners of 8 envs each (shoal's "ray, 2 actors" row: 2 actors of 8 envs), 32-step
fragments, the learner in the driver (`num_learners=0`, torch on one thread, as shoal's
learner), batches of 512 agent steps, the Nature CNN. Prints one JSON line per training
iteration: {"time": seconds since the first iteration began, "steps": agent steps sampled}.

    PEERS/rllib/bin/python benchmarks/rllib_pong.py --seconds 150
"""

from __future__ import annotations

import argparse
import json
import time


def make_pong(config: dict):
    # Env runners are processes of their own: the ALE envs are registered in each.
    import ale_py
    import gymnasium as gym
    from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

    gym.register_envs(ale_py)
    env = gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
    return wrap_atari_for_new_api_stack(env, dim=84, framestack=4)


def steps_sampled(result: dict) -> int:
    """Agent steps sampled so far, where RLlib 2.60's new API stack reports them."""
    for where in (result.get("env_runners", {}), result):
        if "num_env_steps_sampled_lifetime" in where:
            return int(where["num_env_steps_sampled_lifetime"])
    raise KeyError("num_env_steps_sampled_lifetime is not in RLlib's result")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=150)
    args = parser.parse_args()

    import ray
    import torch
    from ray import tune
    from ray._private import ray_constants
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    torch.set_num_threads(1)  # the driver's learner; RLlib's default takes every core
    # On the loopback interface, as shoal starts its local Ray (`ray_connect.start_local`).
    ray_constants.ENABLE_RAY_CLUSTER = False
    ray.init(
        address="local",
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        logging_level="ERROR",
        log_to_driver=False,
    )
    tune.register_env("pong", make_pong)
    config = (
        APPOConfig()
        .environment("pong")
        .env_runners(num_env_runners=2, num_envs_per_env_runner=8, rollout_fragment_length=32)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=512)
        .rl_module(
            model_config=DefaultModelConfig(
                conv_filters=[[32, 8, 4], [64, 4, 2], [64, 3, 1]],
                conv_activation="relu",
                head_fcnet_hiddens=[512],
            )
        )
    )
    algo = config.build_algo()
    started = time.time()
    while time.time() - started < args.seconds:
        steps = steps_sampled(algo.train())
        print(json.dumps({"time": time.time() - started, "steps": steps}), flush=True)
    algo.stop()
    ray.shutdown()


if __name__ == "__main__":
    main()
