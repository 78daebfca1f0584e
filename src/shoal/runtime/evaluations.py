"""The driver's evaluations of the learner's weights: every `--eval-every` steps, and at the end.

They run in the driver's process on fresh envs, on every launcher (on Ray the weights come from
the learner's process), from the same seeds each time (`seed + 10000`, the first of
`shoal eval`'s), so successive evaluations of a run differ by the policy only. Each reaches
the callbacks and the metrics row of its step (`eval_*` keys; `eval_sampled_*` for sampling).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import torch

from shoal.envs.vector import VectorEnv, in_process_vector_env
from shoal.run.checkpoints import learner_network, policy_payload, save_policy
from shoal.runtime.callbacks import Evaluation
from shoal.runtime.evaluate import EvalResult, eval_width, evaluate_policy
from shoal.runtime.program import Program
from shoal.runtime.recording import EVAL_SEED_OFFSET, acting_for

__all__ = ["Evaluator", "evaluation_row"]


class Evaluator:
    """Evaluates learner states of one program. The network and the envs (by width) are made
    once and reused, so an evaluation's time goes to playing (Atari envs take a while to make,
    which a final evaluation bounded by --max-time cannot spare); `close` closes the envs."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.seed = program.seed + EVAL_SEED_OFFSET
        self._net: torch.nn.Module | None = None
        self._envs: dict[int, VectorEnv] = {}

    def prepare(self, episodes: int) -> None:
        """Make the envs an evaluation of `episodes` steps, ahead of it."""
        self._env(episodes)

    def _env(self, episodes: int) -> VectorEnv:
        width = eval_width(episodes)
        if width not in self._envs:
            program = self.program
            factories = [program.env_source.factory] * width
            self._envs[width] = in_process_vector_env(factories, program.spec, self.seed)
        return self._envs[width]

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()

    def evaluate(
        self,
        env_steps: int,
        learner_state: Mapping[str, Any],
        policy_state: Mapping[str, Any],
        *,
        mode: Literal["greedy", "sample"],
        episodes: int,
        final: bool,
        max_time: float | None = None,
        progress: bool = False,
    ) -> Evaluation:
        program = self.program
        if self._net is None:
            self._net = program.agent.make_networks(program.spec, program.agent_config)
        network = learner_network(learner_state)
        self._net.load_state_dict(network)
        acting = acting_for(
            program.agent, program.spec, program.agent_config, self._net, dict(policy_state), mode
        )
        with torch.no_grad():
            result = evaluate_policy(
                acting,
                program.env_source.factory,
                program.spec,
                episodes,
                self.seed,
                max_time,
                progress,
                self._env(episodes),
            )
        # The weights and policy state as they were evaluated, for a callback that keeps them.
        payload = policy_payload(
            algo=program.agent.name,
            env_id=program.env_id,
            seed=program.seed,
            env_steps=env_steps,
            agent_config=program.agent_config,
            env_config=program.env_config,
            spec=program.spec,
            network={k: v.detach().to("cpu", copy=True) for k, v in network.items()},
            policies=dict(policy_state),
        )
        return Evaluation(
            env_steps, mode, result, final, lambda path: save_policy(Path(path), payload)
        )


def evaluation_row(evaluation: Evaluation) -> dict[str, float]:
    """The metrics of an evaluation, for the row of the step it was made at:
    `eval_return_mean`, ... (greedy) or `eval_sampled_return_mean`, ... (sampling)."""
    prefix = "eval_" if evaluation.mode == "greedy" else "eval_sampled_"
    result: EvalResult = evaluation.result
    return {
        f"{prefix}return_mean": result.mean_return,
        f"{prefix}return_std": result.std_return,
        f"{prefix}return_min": result.min_return,
        f"{prefix}return_max": result.max_return,
        f"{prefix}length_mean": result.mean_length,
        f"{prefix}episodes": result.episodes,
    }
