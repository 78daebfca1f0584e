"""The driver's evaluations of the learner's weights: every `--eval-every` steps, and at the end.

They run in the driver's process on fresh envs, on every launcher (on Ray the weights come from
the learner's process), from the same seeds each time (`seed + 10000`, the first of
`shoal eval`'s), so successive evaluations of a run differ by the policy only. Each reaches
the callbacks and the metrics row of its step (`eval_*` keys; `eval_sampled_*` for sampling).

`Evaluations` is the driver's part that decides when: a greedy evaluation every `--eval-every`
steps, the final greedy and sampling ones within what `--max-time` leaves, and a video every
`--video-every` steps (`TrainingVideos`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import torch

from shoal.envs.vector import VectorEnv, in_process_vector_env
from shoal.run.checkpoints import learner_network, policy_payload, save_policy
from shoal.runtime.callbacks import Evaluation
from shoal.runtime.counter import Counter
from shoal.runtime.evaluate import EvalResult, eval_width, evaluate_policy
from shoal.runtime.metrics_rows import next_multiple
from shoal.runtime.program import Program
from shoal.runtime.recording import EVAL_SEED_OFFSET, TrainingVideos, acting_for

# Of --max-time, the final evaluations leave this much for what follows them (the summary, a
# local Ray's shutdown: about 1.3 s on a busy 2-core machine), and take at least MIN_EVAL_S.
EXIT_S = 1.5
MIN_EVAL_S = 1.0

__all__ = ["Evaluations", "Evaluator", "evaluation_row"]


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
        stopped: Callable[[], str | None] | None = None,
    ) -> Evaluation:
        """`stopped`: why to stop early (see `evaluate_policy`)."""
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
                stopped,
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


class Evaluations:
    """The evaluations and videos of `program`'s run as `counter` counts it, with the driver's
    `policy_state`. `say` prints a line; `told` is given each evaluation as it is made (the
    callbacks' `on_evaluation`)."""

    def __init__(
        self,
        program: Program,
        counter: Counter,
        policy_state: dict[str, Any],
        say: Callable[[str], None],
        told: Callable[[Evaluation], None],
    ) -> None:
        self.program, self.counter, self.policy_state = program, counter, policy_state
        self.say, self.told = say, told
        run, steps = program.run, counter.env_steps
        # --video-every: an env that cannot render stops the run here, before it trains.
        self.videos = TrainingVideos(program, say) if run.video_every else None
        self._next_video = next_multiple(steps, run.video_every or 1)
        self._next_eval = next_multiple(steps, run.eval_every or 1)
        self.evaluator = Evaluator(program)
        self.final: dict[str, Evaluation] = {}  # the final evaluations by mode

    def periodic_due(self) -> bool:
        return bool(self.program.run.eval_every) and self.counter.env_steps >= self._next_eval

    def periodic(self, learner_state: dict[str, Any]) -> Evaluation:
        """The greedy evaluation every --eval-every steps, said in one line."""
        run = self.program.run
        evaluation = self._evaluate(learner_state, "greedy", run.eval_every_episodes, final=False)
        self._next_eval = next_multiple(self.counter.env_steps, run.eval_every or 1)
        return evaluation

    def final_evaluations(
        self, learner_state: dict[str, Any], stopped: Callable[[], str | None] | None = None
    ) -> list[Evaluation]:
        """The final greedy and sampling evaluations (none with --eval-episodes 0), within
        what --max-time leaves (`RunConfig.final_eval_time`), the greedy one taking half.
        `stopped`: why to stop now (Ctrl-C or SIGTERM during them): the evaluation running is
        cut there, and the next is not made."""
        run, made = self.program.run, list[Evaluation]()
        if run.eval_episodes <= 0:
            return made
        bound = run.final_eval_time
        if bound is not None and run.max_time is not None:
            # What training left of --max-time, less the exit's share: more than the
            # evaluations' share if training stopped early, less if it overran (a busy
            # machine), but at least a moment for an episode or two.
            remaining = run.max_time - self.counter.elapsed - EXIT_S
            bound = max(remaining, min(bound, MIN_EVAL_S))
        deadline = None if bound is None else time.monotonic() + bound
        self.evaluator.prepare(run.eval_episodes)  # then the two share what is left
        modes: tuple[tuple[float, Literal["greedy", "sample"]], ...] = (
            (0.5, "greedy"),
            (1.0, "sample"),
        )
        for share, mode in modes:
            if made and stopped is not None and stopped() is not None:
                break
            left = None if deadline is None else share * (deadline - time.monotonic())
            evaluation = self._evaluate(
                learner_state, mode, run.eval_episodes, final=True, max_time=left, stopped=stopped
            )
            self.final[mode] = evaluation
            made.append(evaluation)
        return made

    def video_due(self) -> bool:
        return self.videos is not None and self.counter.env_steps >= self._next_video

    def video(self, learner_state: dict[str, Any]) -> None:
        """The video every --video-every steps."""
        assert self.videos is not None
        self.videos.record(self.counter.env_steps, learner_state, self.policy_state)
        self._next_video = next_multiple(self.counter.env_steps, self.program.run.video_every or 1)

    def close(self) -> None:
        self.evaluator.close()
        if self.videos is not None:
            self.videos.close()

    def _evaluate(
        self,
        learner_state: dict[str, Any],
        mode: Literal["greedy", "sample"],
        episodes: int,
        final: bool,
        max_time: float | None = None,
        stopped: Callable[[], str | None] | None = None,
    ) -> Evaluation:
        steps = self.counter.env_steps
        evaluation = self.evaluator.evaluate(
            steps,
            learner_state,
            self.policy_state,
            mode=mode,
            episodes=episodes,
            final=final,
            max_time=max_time,
            progress=final and self.program.run.progress,
            stopped=stopped,
        )
        if not final:
            self.say(
                f"evaluation at {steps} steps: mean return "
                f"{evaluation.mean_return:.2f} over {evaluation.result.episodes} episodes"
            )
        self.told(evaluation)
        return evaluation
