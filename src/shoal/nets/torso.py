"""Choosing, building and checking the torso for an observation space, including user-made ones."""

from __future__ import annotations

import contextlib
import copy
import importlib
import itertools
import math
import numbers
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, get_args

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from shoal.envs.observations import network_space
from shoal.errors import ConfigError, did_you_mean
from shoal.nets.board import BoardCNN
from shoal.nets.cnn import MinAtarCNN, NatureCNN, observation_scale, to_float
from shoal.nets.mlp import MLP, Activation
from shoal.nets.resnet import ImpalaResNet

__all__ = [
    "DictTorso",
    "TorsoKind",
    "check_torso",
    "check_torso_setting",
    "make_torso",
    "torso_from_setting",
]

TorsoKind = Literal["auto", "mlp", "nature_cnn", "impala_resnet", "minatar_cnn", "board_cnn"]
_KINDS: tuple[str, ...] = get_args(TorsoKind)
_IMAGE_TORSOS: dict[str, type[nn.Module]] = {
    "nature_cnn": NatureCNN,
    "impala_resnet": ImpalaResNet,
    "minatar_cnn": MinAtarCNN,
    "board_cnn": BoardCNN,  # channels-last board planes (PettingZoo's classic games)
}
Observation = torch.Tensor | Mapping[str, Any]


class _FlatMLP(MLP):
    """`MLP` over the flattened raw observation, cast to float. `[B, *shape] -> [B, hidden[-1]]`.

    uint8 spaces are scaled by `1 / high.max()` like images (e.g. Atari RAM); others are not.
    """

    def __init__(
        self, space: gym.spaces.Box, hidden_sizes: Sequence[int], activation: Activation
    ) -> None:
        super().__init__(math.prod(space.shape), hidden_sizes, activation)
        self.scale = observation_scale(space)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        # reshape rather than nn.Flatten alone, so scalar observations `[B]` work too.
        return super().forward(to_float(obs.reshape(obs.shape[0], -1), self.scale, self))


class DictTorso(nn.Module):
    """One torso per key of a Dict observation, outputs concatenated in key order.

    `{key: [B, *shape_key]} -> [B, sum of out_features]`.
    """

    def __init__(self, torsos: Mapping[str, nn.Module]) -> None:
        super().__init__()
        if not torsos:
            raise ConfigError("A Dict observation space needs at least one key to build a torso.")
        # A list and not nn.ModuleDict, which rejects keys containing "." that gym allows.
        self.keys = list(torsos)
        self.torsos = nn.ModuleList(torsos.values())
        self.out_features = sum(int(t.out_features) for t in self.torsos)

    def forward(self, obs: Mapping[str, Any]) -> torch.Tensor:
        """`{key: [B, ...]}` -> `[B, out_features]`."""
        return torch.cat([t(obs[k]) for k, t in zip(self.keys, self.torsos, strict=True)], -1)


def make_torso(
    observation_space: gym.spaces.Space,
    kind: TorsoKind = "auto",
    hidden_sizes: Sequence[int] = (64, 64),
    activation: Activation = "tanh",
    custom: str | None = None,
) -> nn.Module:
    """The torso for `observation_space`: `forward(obs [B, *shape]) -> [B, out_features]`.

    `kind="auto"`: a Box of rank 3 `(C, H, W)` gets `NatureCNN` when H, W >= 36 (the smallest
    size its convs accept) and `MinAtarCNN` otherwise; any other Box gets an MLP over the
    flattened input; a Dict gets a `DictTorso` with one torso per key by these same rules.
    An explicit kind forces that torso; for a Dict, an image kind applies to its image entries
    and "mlp" to all. `custom="package.module:function"` calls `function(observation_space)`.
    `hidden_sizes` and `activation` configure the MLPs only. Mistakes raise `ConfigError`.
    """
    if custom is not None:
        if kind != "auto":
            raise ConfigError(
                f"Both a custom torso ({custom!r}) and kind={kind!r} were given; set only one."
            )
        return _custom_torso(custom, observation_space)
    if kind not in _KINDS:
        raise ConfigError(
            f"Unknown torso kind {kind!r}; choose one of {', '.join(_KINDS)}."
            + did_you_mean(str(kind), _KINDS)
        )
    if activation not in get_args(Activation):
        raise ConfigError(
            f"Unknown activation {activation!r}; choose one of {', '.join(get_args(Activation))}."
        )
    if any(not isinstance(n, int) or n < 1 for n in hidden_sizes):
        raise ConfigError(f"hidden_sizes must be positive integers, got {tuple(hidden_sizes)}.")

    if isinstance(observation_space, gym.spaces.Dict):
        torsos = {}
        for key, space in observation_space.spaces.items():
            # An image kind passes over vector entries, which get their automatic torso.
            takes_kind = isinstance(space, gym.spaces.Dict) or len(space.shape or ()) == 3
            entry_kind = "auto" if kind in _IMAGE_TORSOS and not takes_kind else kind
            try:
                torsos[key] = make_torso(space, entry_kind, hidden_sizes, activation)
            except ConfigError as err:
                raise ConfigError(f"Observation key {key!r}: {err}") from err
        return DictTorso(torsos)
    if not isinstance(observation_space, gym.spaces.Box):
        raise ConfigError(
            f"shoal has no built-in torso for the observation space {observation_space}; built-in "
            "torsos take Box and Dict spaces. Wrap the env to give Box observations (e.g. one-hot "
            "a Discrete one), or pass custom='package.module:function' that builds a torso."
        )
    if kind == "auto":
        kind = _auto_kind(observation_space)
    if kind == "mlp":
        return _FlatMLP(observation_space, hidden_sizes, activation)
    return _IMAGE_TORSOS[kind](observation_space)


def check_torso_setting(setting: str) -> None:
    """Raise ValueError unless `setting` is a `TorsoKind` or a 'package.module:function' path."""
    if ":" not in setting and setting not in _KINDS:
        raise ValueError(
            f"torso={setting!r} is not one of {', '.join(_KINDS)} "
            "nor a 'package.module:function' path."
        )


def torso_from_setting(
    observation_space: gym.spaces.Space,
    setting: str,
    hidden_sizes: Sequence[int],
    activation: Activation,
) -> nn.Module:
    """`make_torso` for an agent config's `torso` string: a `TorsoKind` or a factory path.

    An action mask entry of a Dict space is left out (`shoal.envs.observations.network_space`):
    the torso does not take it as input, though the Dicts it is given still hold it."""
    observation_space = network_space(observation_space)
    if ":" in setting:
        return make_torso(observation_space, "auto", hidden_sizes, activation, custom=setting)
    return make_torso(observation_space, setting, hidden_sizes, activation)  # type: ignore[arg-type]


def check_torso(torso: nn.Module, observation_space: gym.spaces.Space) -> int:
    """Run 2 sampled observations through `torso`; return its `out_features`.

    Raises `ConfigError` unless the output is a finite float tensor `[2, out_features]`.
    Train/eval modes and the space's random state are left as they were.
    """
    return _check(torso, observation_space, f"The torso {type(torso).__name__}")


def _auto_kind(space: gym.spaces.Box) -> TorsoKind:
    if len(space.shape) != 3:
        return "mlp"
    return "nature_cnn" if min(space.shape[1:]) >= NatureCNN.MIN_SIZE else "minatar_cnn"


def _custom_torso(path: str, space: gym.spaces.Space) -> nn.Module:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ConfigError(
            f"The custom torso {path!r} is not an import path; write it as "
            "'package.module:function', where function(observation_space) returns an nn.Module."
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as err:
        raise ConfigError(
            f"The custom torso {path!r} cannot be used: importing {module_name!r} failed with "
            f"{type(err).__name__}: {err}. Check the spelling, and that the package is installed "
            "or its folder is on PYTHONPATH."
        ) from err
    factory: Any = module
    for part in attr.split("."):
        if not hasattr(factory, part):
            raise ConfigError(
                f"The custom torso {path!r} cannot be used: {module_name!r} has no attribute "
                f"{attr!r}." + did_you_mean(part, [n for n in dir(factory) if n[:1] != "_"])
            )
        factory = getattr(factory, part)
    if not callable(factory):
        raise ConfigError(
            f"The custom torso {path!r} names a {type(factory).__name__}, not a function; it must "
            "be callable as function(observation_space) and return an nn.Module."
        )
    try:
        torso = factory(space)
    except Exception as err:
        raise ConfigError(
            f"The custom torso factory {path!r} raised {type(err).__name__}: {err} when called "
            f"with the observation space {space}."
        ) from err
    if not isinstance(torso, nn.Module):
        raise ConfigError(
            f"The custom torso factory {path!r} returned a {type(torso).__name__}, not a "
            "torch.nn.Module; it must return a module whose forward maps observations "
            "[B, *shape] to features [B, F]."
        )
    what = f"The custom torso {path!r}"
    if not hasattr(torso, "out_features"):
        torso.out_features = _infer_out_features(torso, space, what)
    _check(torso, space, what)
    return torso


def _infer_out_features(torso: nn.Module, space: gym.spaces.Space, what: str) -> int:
    """F from one forward pass of a zero batch of 2 observations, which must give `[2, F]`."""
    out = _forward(torso, _batch(space, 2, module_device(torso), None), what)
    is_batch = isinstance(out, torch.Tensor) and out.dim() == 2 and out.shape[0] == 2
    if not is_batch or not out.is_floating_point():
        raise ConfigError(
            f"{what} has no out_features attribute, so shoal ran it on a zero batch of 2 "
            f"observations to infer it; it returned {_describe(out)}, but a torso must return "
            "a float tensor [2, F] (batch, features). Flatten the features in forward, or set "
            "the out_features attribute."
        )
    return int(out.shape[1])


def _check(torso: nn.Module, space: gym.spaces.Space, what: str) -> int:
    width = getattr(torso, "out_features", None)
    if not isinstance(width, numbers.Integral) or isinstance(width, bool) or width < 1:
        raise ConfigError(
            f"{what} has out_features={width!r}; it must be a positive integer, the width F "
            "of the [B, F] features that forward returns."
        )
    out = _forward(torso, _batch(space, 2, module_device(torso), 0), what)
    width = int(width)
    if (
        not isinstance(out, torch.Tensor)
        or not out.is_floating_point()
        or tuple(out.shape) != (2, width)
    ):
        raise ConfigError(
            f"{what} returned {_describe(out)} for a batch of 2 observations, but a torso with "
            f"out_features={width} must return a float tensor of shape [2, {width}]."
        )
    if not torch.isfinite(out).all():
        raise ConfigError(
            f"{what} returned NaN or infinite features for 2 observations sampled from {space}."
        )
    return width


def _forward(torso: nn.Module, obs: Observation, what: str) -> Any:
    try:
        with _probing(torso):
            return torso(obs)
    except Exception as err:
        raise ConfigError(
            f"{what} failed on a batch of 2 observations with {type(err).__name__}: {err}. "
            "Its forward must accept a batch [B, *shape] in the space's dtype (a dict of such "
            "tensors for a Dict space)."
        ) from err


@contextlib.contextmanager
def _probing(torso: nn.Module) -> Iterator[None]:
    """Eval mode and no autograd, so a probe does not move BatchNorm statistics; modes restored."""
    modes = [(m, m.training) for m in torso.modules()]
    torso.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        for m, training in modes:
            m.training = training


def _batch(space: gym.spaces.Space, n: int, device: torch.device, seed: int | None) -> Observation:
    """`n` observations stacked `[n, *shape]`: zeros if `seed` is None, else seeded samples."""
    if isinstance(space, gym.spaces.Dict):
        return {k: _batch(s, n, device, seed) for k, s in space.spaces.items()}
    if space.shape is None or space.dtype is None:
        raise ConfigError(f"Cannot build observations for the space {space} to check a torso.")
    if seed is None:
        array = np.zeros((n, *space.shape), dtype=space.dtype)
    else:
        # A seeded copy, so checks are reproducible and the caller's space RNG is not advanced.
        probe = copy.deepcopy(space)
        probe.seed(seed)
        array = np.stack([np.asarray(probe.sample(), dtype=space.dtype) for _ in range(n)])
    return torch.as_tensor(array, device=device)


def module_device(module: nn.Module) -> torch.device:
    """Where `module`'s parameters (or buffers) live; CPU for a module without any."""
    tensor = next(itertools.chain(module.parameters(), module.buffers()), None)
    return tensor.device if tensor is not None else torch.device("cpu")


def _describe(out: object) -> str:
    if isinstance(out, torch.Tensor):
        return f"a {out.dtype} tensor of shape {list(out.shape)}"
    return f"a {type(out).__name__}"
