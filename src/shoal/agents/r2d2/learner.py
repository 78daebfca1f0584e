"""R2D2's learner: DQN's replay-ratio learner with the sequence loss and a sequence replay.

Everything that is not the loss (a target network copied every `target_update_period`
gradient steps, Adam, samples-per-insert, the minimum replay size, priorities written back,
remote replay shards) is `DQNLearner`'s, counted in sequences instead of transitions.
"""

from __future__ import annotations

from typing import Any

from shoal.agents.dqn.learner import DQNLearner, stored_frame_stack
from shoal.agents.r2d2.config import R2D2Config
from shoal.agents.r2d2.loss import r2d2_loss
from shoal.agents.r2d2.networks import R2D2Net
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.replay import SequenceReplay, sequence_fields


def make_replay(spec: EnvSpec, config: R2D2Config, shards: int = 1) -> SequenceReplay:
    """One of `shards` replays for `spec`, holding `replay_capacity / shards` sequences of
    `sequence_length` steps (`shoal.replay.sequence` says what a sequence stores); stacked
    Atari frames are stored once each."""
    if spec.dict_obs:
        raise ConfigError(
            f"R2D2's replay stores Box observations; {spec.env_id} has Dict observations. "
            "Flatten the observation in your env factory, or use IMPALA with an LSTM."
        )
    fields = sequence_fields(
        spec.obs_shape, spec.obs_dtype, config.sequence_length, config.lstm_size
    )
    return SequenceReplay(
        max(1, -(-config.replay_capacity // shards)),
        fields,
        prioritized=config.prioritized,
        alpha=config.priority_alpha,
        eps=config.priority_eps,
        frame_stack=stored_frame_stack(spec),
    )


class R2D2Learner(DQNLearner):
    """`DQNLearner` on sequences: `update(transitions)` takes actors' `Transitions` of
    sequences; the replay ratio, sizes and batch count sequences."""

    def __init__(
        self, spec: EnvSpec, config: R2D2Config, net: R2D2Net, replay: Any | None = None
    ) -> None:
        super().__init__(
            spec,
            config,  # type: ignore[arg-type]
            net,  # type: ignore[arg-type]
            replay,
            loss=r2d2_loss,
            replay_factory=make_replay,
        )
