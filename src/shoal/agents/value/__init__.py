"""The value family: what DQN, Ape-X, Rainbow, R2D2 and Agent57 share.

- `learner`: `QLearner`, one gradient step per sampled batch on a loss given to it (`QLoss`,
  returning `LossResult`), with a periodic or Polyak target (Acme's `learning_lib`).
- `loss`: the transition losses (`dqn_loss`: double Q, Huber; `categorical_dqn_loss`: C51's
  projected distributional target, KL priorities; `quantile_dqn_loss`: QR-DQN's quantile Huber
  loss; `transition_loss` picks by the config) and
  sequence priorities.
- `exploration`: Ape-X's per-actor or per-env epsilons.
- `transitions` and `replay`: the n-step transition data path, and the rate-limited table that
  the sequence paths of R2D2 and Agent57 use too.
- `config`: the config sections every value agent's config inherits (`ReplayConfig`,
  `SequenceReplayConfig` for R2D2 and Agent57, `NStepTargetConfig` for DQN and R2D2), and the
  transition agents' (DQN's, Ape-X's, Rainbow's) `DQNConfig`.
- `networks`, `policy`: the transition agents' Q-network (optionally categorical and noisy) and
  epsilon-greedy policy; `recurrent`: the LSTM Q-network of R2D2, R2D3 and Agent57.
- R2D2's pieces, which R2D3 builds on: `recurrent_config` (`R2D2Config`), `recurrent_policy`
  (`R2D2Policy`), `sequence_loss` (`r2d2_loss`, initial priorities) and `sequences` (the
  sequence replay and data path).
"""

from shoal.agents.value.config import (
    MUTABLE_SETTINGS,
    DQNConfig,
    NStepTargetConfig,
    ReplayConfig,
    SequenceReplayConfig,
)
from shoal.agents.value.exploration import apex_epsilon, exploration_rates
from shoal.agents.value.learner import QLearner, QLearnerSettings, QLoss
from shoal.agents.value.loss import (
    LossResult,
    categorical_dqn_loss,
    dqn_loss,
    quantile_dqn_loss,
    sequence_priorities,
    td_errors,
    transition_loss,
)
from shoal.agents.value.networks import QNet
from shoal.agents.value.networks import make_networks as make_q_networks
from shoal.agents.value.policy import DQNPolicy
from shoal.agents.value.recurrent import R2D2Net, RecurrentQSettings
from shoal.agents.value.replay import ReplayTableSettings, replay_table, stored_frame_stack
from shoal.agents.value.transitions import make_data_path as make_transition_data_path

__all__ = [
    "MUTABLE_SETTINGS",
    "DQNConfig",
    "DQNPolicy",
    "LossResult",
    "NStepTargetConfig",
    "QLearner",
    "QLearnerSettings",
    "QLoss",
    "QNet",
    "R2D2Net",
    "RecurrentQSettings",
    "ReplayConfig",
    "ReplayTableSettings",
    "SequenceReplayConfig",
    "apex_epsilon",
    "categorical_dqn_loss",
    "dqn_loss",
    "exploration_rates",
    "make_q_networks",
    "make_transition_data_path",
    "quantile_dqn_loss",
    "replay_table",
    "sequence_priorities",
    "stored_frame_stack",
    "td_errors",
    "transition_loss",
]
