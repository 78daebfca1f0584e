"""The actor-critic family's network (PPO's, A2C's, A3C's): a torso chosen from the observation
space, an optional LSTM core, policy and value heads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from shoal import ops
from shoal.agents.common.masks import legal_actions
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.nets import CategoricalHead, GaussianHead, LSTMCore, LSTMState, RunningNorm, ValueHead
from shoal.nets.torso import torso_from_setting
from shoal.tree import leaves, map_tree

__all__ = [
    "ActorCritic",
    "CoreState",
    "NetworkSettings",
    "Unrolled",
    "check_fits",
    "make_networks",
]

CoreState = dict[str, torch.Tensor]
"""The LSTM cores' state for B rows, `{name: [B, H]}`: `core_h`, `core_c` (the policy's core,
or the one core policy and value share) and, when the value has a torso of its own,
`value_core_h`, `value_core_c`. Empty for a feed-forward network."""


class NetworkSettings(Protocol):
    """The config fields the network reads (PPO's, A2C's, A3C's)."""

    @property
    def torso(self) -> str: ...
    @property
    def hidden_sizes(self) -> tuple[int, ...]: ...
    @property
    def activation(self) -> Any: ...
    @property
    def shared_torso(self) -> bool | None: ...
    @property
    def normalize_obs(self) -> bool: ...
    @property
    def normalize_reward(self) -> bool: ...
    @property
    def init_log_std(self) -> float: ...

    # Optional: `use_lstm` and `lstm_size`; a config without them (pg's) is feed-forward.


def _torso(spec: EnvSpec, config: NetworkSettings) -> nn.Module:
    return torso_from_setting(
        spec.observation_space, config.torso, config.hidden_sizes, config.activation
    )


class Unrolled(NamedTuple):
    """What `ActorCritic.unroll` gives for `[T, B]` observations."""

    params: torch.Tensor  # [T, B, A] logits or [T, B, D] Gaussian means
    values: torch.Tensor  # [T, B]
    state: CoreState  # after the last step (empty without a core)
    kept: dict[int, CoreState]  # the state after each kept step t (empty without a core)


class ActorCritic(nn.Module):
    """`policy(obs)` gives logits `[B, A]` or a mean `[B, D]`; `value(obs)` gives `[B]`.

    With `config.use_lstm` an LSTM core (`shoal.nets.LSTMCore`) sits between each torso and its
    head, as in sb3-contrib's RecurrentPPO (one core for the policy and one for the value, or
    one shared core where the torso is shared), and the network is run over time-major
    sequences with `unroll(obs, first, state)`; `initial_state(B)` is the state of rows starting
    an episode, and each core's state is zeroed where `first` says an episode starts.
    `unroll` works for the feed-forward network too (it ignores `first` and `state`).

    Where the observation carries an action mask (`shoal.envs.observations`), the logits of
    illegal actions are masked (`ops.masked_logits`), so sampled and greedy actions are legal
    and the learner's log-probs, entropies and KLs are those of the masked policy (Huang &
    Ontañón 2022); the torso does not take the mask as input.

    The torso is picked from the observation space (MLP for vectors, a CNN for images, one per
    key for Dict spaces) or named by `config.torso`, which may be a user's
    `package.module:function(observation_space) -> nn.Module`. Policy and value share it when
    `config.shared_torso` says so; by default images and Dict observations share one torso
    (as in the Atari PPO of Schulman et al. 2017), vectors get two.
    """

    def __init__(self, spec: EnvSpec, config: NetworkSettings) -> None:
        super().__init__()
        self.discrete = spec.discrete
        # What the torso takes: an action mask beside one vector leaves a vector (two torsos).
        space = spec.network_space
        if isinstance(space, gym.spaces.Dict) and len(space.spaces) == 1:
            space = next(iter(space.spaces.values()))
        image_or_dict = isinstance(space, gym.spaces.Dict) or len(space.shape or ()) == 3
        shared = config.shared_torso if config.shared_torso is not None else image_or_dict
        if config.normalize_obs and (spec.dict_obs or spec.obs_dtype == np.uint8):
            raise ConfigError(
                "normalize_obs works on float Box observations; this environment gives "
                f"{spec.observation_space}. Images are already scaled to [0, 1] by the torso. "
                "Set --agent.normalize-obs false."
            )
        self.obs_norm = RunningNorm(spec.obs_shape) if config.normalize_obs else None
        self.reward_norm = RunningNorm(()) if config.normalize_reward else None
        self.policy_torso = _torso(spec, config)
        self.value_torso = self.policy_torso if shared else _torso(spec, config)
        width = self.policy_torso.out_features
        value_width = self.value_torso.out_features
        # Registered only with an LSTM, so a feed-forward network's state dict (and so its old
        # checkpoints) stays as it was.
        self.policy_core: LSTMCore | None = None
        self.value_core: LSTMCore | None = None
        if getattr(config, "use_lstm", False):
            lstm_size = int(getattr(config, "lstm_size"))  # noqa: B009 (not on the protocol)
            self.policy_core = LSTMCore(width, lstm_size)
            width = value_width = lstm_size
            if not shared:
                self.value_core = LSTMCore(self.value_torso.out_features, lstm_size)
        self.policy_head: nn.Module = (
            CategoricalHead(width, spec.num_actions)
            if spec.discrete
            else GaussianHead(width, int(np.prod(spec.action_shape)), config.init_log_std)
        )
        self.value_head = ValueHead(value_width)

    @property
    def log_std(self) -> torch.Tensor | None:
        """State-independent log standard deviation `[D]` of Gaussian actions."""
        return None if self.discrete else self.policy_head.log_std

    @property
    def recurrent(self) -> bool:
        return self.policy_core is not None

    def initial_state(self, batch_size: int) -> CoreState:
        """Zero core state for `batch_size` rows (`CoreState`); empty without a core."""
        state: CoreState = {}
        for prefix, core in (("core", self.policy_core), ("value_core", self.value_core)):
            if core is not None:
                state[f"{prefix}_h"], state[f"{prefix}_c"] = core.initial_state(batch_size)
        return state

    def _inputs(self, obs):
        return self.obs_norm(obs.float()) if self.obs_norm is not None else obs

    def _feed_forward(self, what: str) -> None:
        if self.recurrent:
            raise RuntimeError(
                f"ActorCritic.{what} takes single observations; this network has an LSTM core "
                "and runs over sequences: use unroll(obs, first, state)."
            )

    def _masked(self, params: torch.Tensor, obs: Any) -> torch.Tensor:
        """Logits with illegal actions masked where `obs` carries an action mask."""
        legal = legal_actions(obs)
        if legal is None or not self.discrete:
            return params
        return ops.masked_logits(params, legal.to(params.device).view(params.shape))

    def policy(self, obs) -> torch.Tensor:
        self._feed_forward("policy")
        return self._masked(self.policy_head(self.policy_torso(self._inputs(obs))), obs)

    def value(self, obs) -> torch.Tensor:
        self._feed_forward("value")
        return self.value_head(self.value_torso(self._inputs(obs)))

    def forward(self, obs) -> tuple[torch.Tensor, torch.Tensor]:
        self._feed_forward("forward")
        x = self._inputs(obs)
        h_policy = self.policy_torso(x)
        h_value = h_policy if self.value_torso is self.policy_torso else self.value_torso(x)
        return self._masked(self.policy_head(h_policy), obs), self.value_head(h_value)

    def unroll(
        self, obs: Any, first: torch.Tensor, state: CoreState, keep: Sequence[int] = ()
    ) -> Unrolled:
        """`obs [T, B, ...]` (or a dict of such), `first [T, B]` bool (obs[t] starts an episode:
        the cores' state is zeroed before step t), `state` the cores' state before obs[0]
        (`initial_state(B)` or one recorded while acting) -> `Unrolled`, with the state after
        each step `t` in `keep` (the learner values a truncated episode's final observation
        from the state after its last step)."""
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
        x = self._inputs(map_tree(lambda o: o.flatten(0, 1), obs))
        h_policy = self.policy_torso(x)
        h_value = h_policy if self.value_torso is self.policy_torso else self.value_torso(x)
        new_state: CoreState = {}
        kept: dict[int, CoreState] = {t: {} for t in keep}
        if self.policy_core is not None:
            if set(state) != set(self.initial_state(0)):
                raise ValueError(
                    f"The LSTM network needs its state {sorted(self.initial_state(0))}, got "
                    f"{sorted(state)}; use initial_state(B)."
                )
            h_policy = _run_core(
                self.policy_core, h_policy, first, state, "core", keep, new_state, kept
            )
            if self.value_core is None:
                h_value = h_policy
            else:
                h_value = _run_core(
                    self.value_core, h_value, first, state, "value_core", keep, new_state, kept
                )
        params = self.policy_head(h_policy)
        values = self.value_head(h_value)
        return Unrolled(
            self._masked(params.view(length, width, *params.shape[1:]), obs),
            values.view(length, width),
            new_state,
            kept if self.recurrent else {},
        )

    def final_values(
        self, final_obs: Any, final_index: torch.Tensor, kept: dict[int, CoreState]
    ) -> torch.Tensor:
        """`V(final_obs[k])` `[K]` for the episodes truncated at `final_index[k] = (t, b)`.

        The final observation continues the episode: a recurrent network steps its cores once
        more on it from the state after step t (`kept[t]`, from `unroll(..., keep=...)`), as
        the actor would have, had the episode gone on."""
        if not self.recurrent:
            return self.value(final_obs)
        t_trunc, b_trunc = final_index.unbind(1)
        pairs = list(zip(t_trunc.tolist(), b_trunc.tolist(), strict=True))
        state = {key: torch.stack([kept[t][key][b] for t, b in pairs]) for key in kept[pairs[0][0]]}
        first = torch.zeros(1, len(pairs), dtype=torch.bool, device=final_index.device)
        return self.unroll(map_tree(lambda x: x[None], final_obs), first, state).values[0]


def _run_core(
    core: LSTMCore,
    x: torch.Tensor,
    first: torch.Tensor,
    state: CoreState,
    prefix: str,
    keep: Sequence[int],
    new_state: CoreState,
    kept: dict[int, CoreState],
) -> torch.Tensor:
    """`core` over `x [T B, F]` from `state[prefix_h, prefix_c]` in segments that end at the
    kept steps (the state flows across them); its outputs `[T B, H]`. Writes the last state
    into `new_state` and the kept ones into `kept`."""
    length, width = first.shape
    x = x.view(length, width, -1)
    hc: LSTMState = (state[f"{prefix}_h"], state[f"{prefix}_c"])
    outputs = []
    start = 0
    for t in sorted(set(keep)):
        if not 0 <= t < length:
            raise ValueError(f"keep holds step {t}, outside the unroll of {length} steps")
        out, hc = core(x[start : t + 1], hc, first[start : t + 1])
        outputs.append(out)
        kept[t][f"{prefix}_h"], kept[t][f"{prefix}_c"] = hc
        start = t + 1
    if start < length:
        out, hc = core(x[start:], hc, first[start:])
        outputs.append(out)
    new_state[f"{prefix}_h"], new_state[f"{prefix}_c"] = hc
    return torch.cat(outputs).flatten(0, 1)


def make_networks(spec: EnvSpec, config: NetworkSettings) -> ActorCritic:
    net = ActorCritic(spec, config)
    check_fits(net, spec)
    return net


@torch.no_grad()
def check_fits(net: ActorCritic, spec: EnvSpec) -> None:
    """Reject, before training, a network whose outputs do not fit the action space."""
    obs = map_tree(lambda x: torch.as_tensor(x)[None], spec.sample_obs(2))
    try:
        unrolled = net.unroll(obs, torch.ones(1, 2, dtype=torch.bool), net.initial_state(2))
    except (RuntimeError, ValueError) as err:
        raise ConfigError(
            f"The network does not fit {spec.env_id}: a batch of 2 observations failed with "
            f"{type(err).__name__}: {err}"
        ) from err
    params, values = unrolled.params[0], unrolled.values[0]
    expected = (2, spec.num_actions) if spec.discrete else (2, *spec.action_shape)
    if tuple(params.shape) != expected or tuple(values.shape) != (2,):
        raise ConfigError(
            f"The network's outputs do not fit {spec.env_id}: for a batch of 2 observations the "
            f"policy gave {tuple(params.shape)} (expected {expected} for {spec.action_space}) and "
            f"the value gave {tuple(values.shape)} (expected (2,))."
        )
