"""The V-trace family's network (IMPALA, APPO): a shared torso, an optional LSTM core, policy-logit
and value heads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch
from torch import nn

from shoal import ops
from shoal.agents.common.masks import legal_actions
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.nets import CategoricalHead, LSTMCore, LSTMState, ValueHead
from shoal.nets.mlp import Activation
from shoal.nets.torso import torso_from_setting
from shoal.tree import leaves, map_tree


class NetworkSettings(Protocol):
    """The config fields the network reads (IMPALA's and APPO's configs have them)."""

    @property
    def torso(self) -> str: ...
    @property
    def hidden_sizes(self) -> tuple[int, ...]: ...
    @property
    def activation(self) -> Activation: ...
    @property
    def use_lstm(self) -> bool: ...
    @property
    def lstm_size(self) -> int: ...


class VTraceNet(nn.Module):
    """Torso -> (LSTM core) -> categorical logits and value, over time-major unrolls.

    `unroll(obs [T, B, ...], first [T, B] bool, state) -> (logits [T, B, A], values [T, B],
    new_state)`. `first[t, b]` is True when `obs[t, b]` is the first observation of an episode;
    the core's state for that entry is zeroed before step t. `state` is `(h, c)`, each `[B, H]`,
    for the LSTM variant (`initial_state(B)` gives zeros) and None for the feed-forward one,
    which ignores `first` and `state`, so actor and learner have one code path for both.

    The torso is picked from the observation space like PPO's (MLP for vectors, a CNN for
    images, one per key for Dict spaces) or named by `config.torso`; the paper's deep Atari
    network is `torso="impala_resnet"` with `use_lstm=True`. Unlike the paper's LSTM, the core
    does not see the previous action and reward. Where the observation carries an action mask,
    the logits of illegal actions are masked (`ops.masked_logits`).
    """

    def __init__(self, spec: EnvSpec, config: NetworkSettings) -> None:
        super().__init__()
        if not spec.discrete:
            raise ConfigError(
                f"IMPALA and APPO support discrete actions; {spec.env_id} has "
                f"{spec.action_space}. Use PPO (`shoal train ppo`) for continuous control."
            )
        self.torso = torso_from_setting(
            spec.observation_space, config.torso, config.hidden_sizes, config.activation
        )
        width = int(self.torso.out_features)
        self.core = LSTMCore(width, config.lstm_size) if config.use_lstm else None
        if self.core is not None:
            width = self.core.out_features
        self.num_actions = spec.num_actions
        self.policy_head = CategoricalHead(width, self.num_actions)
        self.value_head = ValueHead(width)

    @property
    def recurrent(self) -> bool:
        return self.core is not None

    def initial_state(self, batch_size: int) -> LSTMState | None:
        """Zero core state `(h, c)`, each `[batch_size, H]`, or None without a core."""
        return None if self.core is None else self.core.initial_state(batch_size)

    def forward(
        self, obs: Any, first: torch.Tensor, state: LSTMState | None
    ) -> tuple[torch.Tensor, torch.Tensor, LSTMState | None]:
        return self.unroll(obs, first, state)

    def unroll(
        self, obs: Any, first: torch.Tensor, state: LSTMState | None
    ) -> tuple[torch.Tensor, torch.Tensor, LSTMState | None]:
        """`obs [T, B, ...]` (or a dict of such), `first [T, B]` bool -> logits, values, state."""
        logits, values, state, _ = self.unroll_keeping_states(obs, first, state, ())
        return logits, values, state

    def unroll_keeping_states(
        self, obs: Any, first: torch.Tensor, state: LSTMState | None, keep: Sequence[int]
    ) -> tuple[torch.Tensor, torch.Tensor, LSTMState | None, dict[int, LSTMState]]:
        """`unroll`, plus the core state after each step `t` in `keep` (`{t: (h, c)}`).

        The learner needs those states to value the final observation of an episode truncated
        at step t. Without a core the dict is empty.
        """
        if first.dim() != 2 or first.dtype != torch.bool:
            raise ValueError(
                f"first must be a bool tensor [T, B], got {first.dtype} {list(first.shape)}"
            )
        length, width = first.shape
        for leaf in leaves(obs):
            if tuple(leaf.shape[:2]) != (length, width):
                raise ValueError(
                    f"obs must be time-major [T, B, ...] = [{length}, {width}, ...] like first, "
                    f"got {list(leaf.shape)}"
                )
        x = self.torso(map_tree(lambda o: o.flatten(0, 1), obs))
        kept: dict[int, LSTMState] = {}
        if self.core is not None:
            if state is None:
                raise ValueError("The LSTM network needs a state; use initial_state(B).")
            x = x.view(length, width, -1)
            outputs = []
            start = 0
            # The core runs in segments that end at the kept steps; the state flows across them.
            for t in sorted(set(keep)):
                if not 0 <= t < length:
                    raise ValueError(f"keep holds step {t}, outside the unroll of {length} steps")
                out, state = self.core(x[start : t + 1], state, first[start : t + 1])
                outputs.append(out)
                kept[t] = state
                start = t + 1
            if start < length:
                out, state = self.core(x[start:], state, first[start:])
                outputs.append(out)
            x = torch.cat(outputs).flatten(0, 1)
        logits = self.policy_head(x).view(length, width, self.num_actions)
        if (legal := legal_actions(obs)) is not None:  # the observation's action mask
            logits = ops.masked_logits(logits, legal.to(logits.device))
        values = self.value_head(x).view(length, width)
        return logits, values, state, kept


def make_networks(spec: EnvSpec, config: NetworkSettings) -> VTraceNet:
    net = VTraceNet(spec, config)
    check_fits(net, spec)
    return net


@torch.no_grad()
def check_fits(net: VTraceNet, spec: EnvSpec) -> None:
    """Reject, before training, a network whose outputs do not fit the action space."""
    batch = map_tree(lambda x: torch.as_tensor(x)[None], spec.sample_obs(2))
    first = torch.ones(1, 2, dtype=torch.bool)
    try:
        logits, values, _ = net.unroll(batch, first, net.initial_state(2))
    except (RuntimeError, ValueError) as err:
        raise ConfigError(
            f"The network does not fit {spec.env_id}: a batch of 2 observations failed with "
            f"{type(err).__name__}: {err}"
        ) from err
    expected = (1, 2, spec.num_actions)
    if tuple(logits.shape) != expected or tuple(values.shape) != (1, 2):
        raise ConfigError(
            f"The network's outputs do not fit {spec.env_id}: for an unroll [T, B] = [1, 2] the "
            f"policy gave {tuple(logits.shape)} (expected {expected} for {spec.action_space}) "
            f"and the value gave {tuple(values.shape)} (expected (1, 2))."
        )
