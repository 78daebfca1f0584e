"""The value family's recurrent Q-network (R2D2's, which Agent57 doubles): torso, an LSTM core
that also sees the previous action and reward, and a dueling Q head (Kapturowski et al. 2019,
section 2.3)."""

from __future__ import annotations

from typing import Any, Protocol

import torch
from torch import nn

from shoal.agents.common.masks import ObsPacking
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.nets import DuelingQHead, LSTMCore, LSTMState
from shoal.nets.torso import torso_from_setting
from shoal.tree import leaves, map_tree

__all__ = ["R2D2Net", "RecurrentQSettings", "check_fits"]


class RecurrentQSettings(Protocol):
    """The config fields the network reads (R2D2's, Agent57's)."""

    @property
    def torso(self) -> str: ...
    @property
    def hidden_sizes(self) -> tuple[int, ...]: ...
    @property
    def activation(self) -> Any: ...
    @property
    def lstm_size(self) -> int: ...
    @property
    def dueling_hidden(self) -> int: ...


class R2D2Net(nn.Module):
    """Torso -> LSTM over [features, one-hot a_{t-1}, tanh(r_{t-1})] -> dueling Q-values.

    `unroll(obs [T, B, ...], prev_action [T, B], prev_reward [T, B], first [T, B] bool, state)
    -> (q [T, B, A], new_state)`, time-major. Where `first[t, b]` is set, the core's state is
    zeroed before step t and the previous action and reward are ignored (an episode has none
    before its first step). `state` is `(h, c)`, each `[B, H]`; `initial_state(B)` is zeros.

    The paper feeds the raw previous reward; here it is squashed with tanh, so one large reward
    cannot saturate the LSTM's gates (the Q-values are rescaled, the inputs would not be). The
    torso is picked like DQN's and IMPALA's (MLP for vectors, a CNN for images).

    `extra_inputs` > 0 widens the core's input by that many features, given to `unroll` as
    `extra [T, B, X]` (Agent57: the previous intrinsic reward and the one-hot mixture index);
    unlike the previous action and reward they are not zeroed at `first` steps.
    """

    def __init__(self, spec: EnvSpec, config: RecurrentQSettings, extra_inputs: int = 0) -> None:
        super().__init__()
        if not spec.discrete:
            raise ConfigError(
                f"R2D2 needs discrete actions; {spec.env_id} has {spec.action_space}. Use PPO "
                "(`shoal train ppo`) for continuous control."
            )
        self.torso = torso_from_setting(
            spec.observation_space, config.torso, config.hidden_sizes, config.activation
        )
        self.num_actions = spec.num_actions
        # How replay stores a Dict observation (its action mask too): one packed vector.
        self.obs_packing = ObsPacking(spec.observation_space) if spec.dict_obs else None
        self.extra_inputs = int(extra_inputs)
        width = int(self.torso.out_features) + self.num_actions + 1 + self.extra_inputs
        self.core = LSTMCore(width, config.lstm_size)
        self.head = DuelingQHead(config.lstm_size, self.num_actions, config.dueling_hidden)

    def initial_state(self, batch_size: int) -> LSTMState:
        """Zero core state `(h, c)`, each `[batch_size, H]`."""
        return self.core.initial_state(batch_size)

    def forward(
        self,
        obs: Any,
        prev_action: torch.Tensor,
        prev_reward: torch.Tensor,
        first: torch.Tensor,
        state: LSTMState,
        extra: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, LSTMState]:
        return self.unroll(obs, prev_action, prev_reward, first, state, extra)

    def unroll(
        self,
        obs: Any,
        prev_action: torch.Tensor,
        prev_reward: torch.Tensor,
        first: torch.Tensor,
        state: LSTMState,
        extra: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, LSTMState]:
        """Q-values `[T, B, A]` (in the rescaled space h(Q)) and the state after step T - 1."""
        if first.dim() != 2 or first.dtype != torch.bool:
            raise ValueError(
                f"first must be a bool tensor [T, B], got {first.dtype} {list(first.shape)}"
            )
        length, width = first.shape
        for name, x in [("prev_action", prev_action), ("prev_reward", prev_reward)]:
            if tuple(x.shape) != (length, width):
                raise ValueError(
                    f"{name} must be [T, B] = [{length}, {width}], got {list(x.shape)}"
                )
        for leaf in leaves(obs):
            if tuple(leaf.shape[:2]) != (length, width):
                raise ValueError(
                    f"obs must be time-major [T, B, ...] = [{length}, {width}, ...] like first, "
                    f"got {list(leaf.shape)}"
                )
        features = self.torso(map_tree(lambda o: o.flatten(0, 1), obs)).view(length, width, -1)
        keep = (~first).unsqueeze(-1).to(features.dtype)
        action = nn.functional.one_hot(prev_action.long(), self.num_actions).to(features.dtype)
        reward = torch.tanh(prev_reward.to(features.dtype)).unsqueeze(-1)
        parts = [features, action * keep, reward * keep]
        if self.extra_inputs:
            if extra is None or tuple(extra.shape) != (length, width, self.extra_inputs):
                got = None if extra is None else list(extra.shape)
                raise ValueError(f"extra must be [T, B, {self.extra_inputs}], got {got}")
            parts.append(extra.to(features.dtype))
        x = torch.cat(parts, dim=-1)
        out, state = self.core(x, state, first)
        q = self.head(out.flatten(0, 1)).view(length, width, self.num_actions)
        return q, state


@torch.no_grad()
def check_fits(net: R2D2Net, spec: EnvSpec) -> None:
    """Reject, before training, a network whose outputs do not fit the action space."""
    obs = map_tree(lambda x: torch.as_tensor(x)[None], spec.sample_obs(2))
    zeros = torch.zeros(1, 2)
    extra = torch.zeros(1, 2, net.extra_inputs) if net.extra_inputs else None
    try:
        q, _ = net.unroll(
            obs,
            zeros.long(),
            zeros,
            torch.ones(1, 2, dtype=torch.bool),
            net.initial_state(2),
            extra,
        )
    except (RuntimeError, ValueError) as err:
        raise ConfigError(
            f"The network does not fit {spec.env_id}: a batch of 2 observations failed with "
            f"{type(err).__name__}: {err}"
        ) from err
    if tuple(q.shape) != (1, 2, spec.num_actions):
        raise ConfigError(
            f"The network's Q-values do not fit {spec.env_id}: an unroll [T, B] = [1, 2] gave "
            f"{tuple(q.shape)}, expected (1, 2, {spec.num_actions}) for {spec.action_space}."
        )
