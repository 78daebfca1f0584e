"""Tests for the torsos (shoal.nets cnn, resnet, torso): shapes, scaling, gradients, choice."""

from __future__ import annotations

import copy
import sys
import types
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from shoal.errors import ConfigError
from shoal.nets import (
    MLP,
    DictTorso,
    ImpalaResNet,
    MinAtarCNN,
    NatureCNN,
    check_torso,
    make_torso,
)

ATARI = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
MINATAR = gym.spaces.Box(0, 1, (4, 10, 10), np.uint8)
VECTOR = gym.spaces.Box(-np.inf, np.inf, (8,), np.float32)
IMAGE_AND_VECTOR = gym.spaces.Dict({"image": MINATAR, "vector": VECTOR})


def sample(space: gym.spaces.Space, n: int, seed: int = 0):
    """`n` seeded observations from `space`, stacked as the env would give them."""
    if isinstance(space, gym.spaces.Dict):
        return {k: sample(s, n, seed) for k, s in space.spaces.items()}
    space = copy.deepcopy(space)
    space.seed(seed)
    return torch.as_tensor(np.stack([space.sample() for _ in range(n)]))


def full(space: gym.spaces.Box, value: float, dtype: torch.dtype) -> torch.Tensor:
    return torch.full((2, *space.shape), value, dtype=dtype)


def like(space: gym.spaces.Box) -> gym.spaces.Box:
    """The same shape as a float32 space in [0, 1], so no scaling happens inside the torso."""
    return gym.spaces.Box(0.0, 1.0, space.shape, np.float32)


# name -> (torso factory, space it serves, out_features)
TORSOS: dict[str, tuple[Callable[[], nn.Module], gym.spaces.Space, int]] = {
    "nature_atari": (lambda: NatureCNN(ATARI), ATARI, 512),
    "impala_atari": (lambda: ImpalaResNet(ATARI), ATARI, 256),
    "minatar": (lambda: MinAtarCNN(MINATAR), MINATAR, 128),
    "mlp_vector": (lambda: make_torso(VECTOR), VECTOR, 64),
    "dict": (lambda: make_torso(IMAGE_AND_VECTOR), IMAGE_AND_VECTOR, 128 + 64),
}


@pytest.mark.parametrize("name", list(TORSOS))
def test_output_shape_and_out_features(name: str) -> None:
    factory, space, width = TORSOS[name]
    torch.manual_seed(0)
    torso = factory()
    out = torso(sample(space, 3))
    assert torso.out_features == width
    assert out.shape == (3, width)
    assert out.dtype == torch.float32
    assert check_torso(torso, space) == width


def test_impala_resnet_configurable_widths() -> None:
    torso = ImpalaResNet(ATARI, channels=(8, 16), features=32)
    assert torso.out_features == 32
    assert torso(sample(ATARI, 2)).shape == (2, 32)


def test_impala_resnet_blocks_are_residual() -> None:
    """With every residual branch zeroed, each stage is conv + max-pool (Espeholt et al. Fig. 3)."""
    torch.manual_seed(0)
    torso = ImpalaResNet(ATARI)
    with torch.no_grad():
        for name, module in torso.named_modules():
            if isinstance(module, nn.Conv2d) and ".res" in name:
                module.weight.zero_()
                module.bias.zero_()
        obs = sample(ATARI, 2)
        x = obs.float() / 255
        for stage in torso.stages:
            x = F.max_pool2d(stage.conv(x), 3, stride=2, padding=1)
        linear = torso.head[2]
        expected = torch.relu(linear(torch.relu(x).flatten(1)))
        torch.testing.assert_close(torso(obs), expected)
        assert expected.abs().sum() > 0


@pytest.mark.parametrize("name", list(TORSOS))
def test_gradients_reach_every_parameter(name: str) -> None:
    factory, space, _ = TORSOS[name]
    torch.manual_seed(0)
    torso = factory()
    torso(sample(space, 4)).sum().backward()
    for param_name, param in torso.named_parameters():
        assert param.grad is not None, param_name
        assert param.grad.abs().sum() > 0, param_name


@pytest.mark.parametrize("cls", [NatureCNN, ImpalaResNet])
def test_uint8_atari_frames_are_divided_by_255(cls: type[nn.Module]) -> None:
    torch.manual_seed(0)
    raw = cls(ATARI)
    unscaled = cls(like(ATARI))
    unscaled.load_state_dict(raw.state_dict())
    out = raw(full(ATARI, 255, torch.uint8))
    assert out.abs().sum() > 0
    torch.testing.assert_close(out, unscaled(full(ATARI, 1.0, torch.float32)))


def test_minatar_frames_are_not_divided_by_255() -> None:
    torch.manual_seed(0)
    raw = MinAtarCNN(MINATAR)
    unscaled = MinAtarCNN(like(MINATAR))
    unscaled.load_state_dict(raw.state_dict())
    out = raw(full(MINATAR, 1, torch.uint8))
    torch.testing.assert_close(out, unscaled(full(MINATAR, 1.0, torch.float32)))
    assert not torch.allclose(out, unscaled(full(MINATAR, 1 / 255, torch.float32)))


def test_mlp_casts_raw_inputs_and_scales_only_uint8() -> None:
    torch.manual_seed(0)
    ram = gym.spaces.Box(0, 255, (16,), np.uint8)
    raw = make_torso(ram)
    unscaled = make_torso(like(ram))
    unscaled.load_state_dict(raw.state_dict())
    out = raw(full(ram, 255, torch.uint8))
    torch.testing.assert_close(out, unscaled(full(ram, 1.0, torch.float32)))
    doubles = gym.spaces.Box(-2.0, 2.0, (3,), np.float64)
    torso = make_torso(doubles)
    x = torch.tensor([[2.0, -1.0, 0.5], [0.0, 1.0, -2.0]], dtype=torch.float64)
    torch.testing.assert_close(torso(x), torso(x.float()))


@pytest.mark.parametrize(
    ("space", "cls"),
    [
        (ATARI, NatureCNN),
        (gym.spaces.Box(0, 255, (3, 64, 64), np.uint8), NatureCNN),
        (gym.spaces.Box(0, 255, (3, 36, 40), np.uint8), NatureCNN),
        # 35 pixels is too small for the Nature convs, so the small-frame torso is chosen.
        (gym.spaces.Box(0, 255, (3, 35, 64), np.uint8), MinAtarCNN),
        (MINATAR, MinAtarCNN),
        (VECTOR, MLP),
        (gym.spaces.Box(-1, 1, (2, 3), np.float32), MLP),
        (gym.spaces.Box(-1, 1, (2, 3, 4, 5), np.float32), MLP),
        (gym.spaces.Box(-1, 1, (), np.float32), MLP),
        (IMAGE_AND_VECTOR, DictTorso),
    ],
)
def test_auto_picks_the_torso_for_the_space(space: gym.spaces.Space, cls: type) -> None:
    torso = make_torso(space)
    assert isinstance(torso, cls)
    assert check_torso(torso, space) == torso.out_features


def test_dict_torso_builds_one_torso_per_key_and_concatenates() -> None:
    torch.manual_seed(0)
    torso = make_torso(IMAGE_AND_VECTOR, hidden_sizes=(32,))
    assert isinstance(torso.torsos[0], MinAtarCNN)
    assert isinstance(torso.torsos[1], MLP)
    obs = sample(IMAGE_AND_VECTOR, 2)
    out = torso(obs)
    assert out.shape == (2, 128 + 32)
    image_torso, vector_torso = torso.torsos
    torch.testing.assert_close(out[:, :128], image_torso(obs["image"]))
    torch.testing.assert_close(out[:, 128:], vector_torso(obs["vector"]))


def test_explicit_kinds() -> None:
    assert isinstance(make_torso(ATARI, "impala_resnet"), ImpalaResNet)
    assert isinstance(make_torso(ATARI, "minatar_cnn"), MinAtarCNN)
    mlp = make_torso(ATARI, "mlp", hidden_sizes=(32,), activation="relu")
    assert isinstance(mlp, MLP) and mlp.out_features == 32
    assert any(isinstance(m, nn.ReLU) for m in mlp.modules())
    # For a Dict, an image kind goes to the image entries and the vectors keep their MLP.
    torso = make_torso(IMAGE_AND_VECTOR, "impala_resnet")
    assert isinstance(torso.torsos[0], ImpalaResNet)
    assert isinstance(torso.torsos[1], MLP)
    assert isinstance(make_torso(gym.spaces.Dict({"v": VECTOR}), "nature_cnn").torsos[0], MLP)


@pytest.mark.parametrize(
    ("space", "kind", "words"),
    [
        (VECTOR, "nature_cnn", "NatureCNN needs an image"),
        (VECTOR, "impala_resnet", "ImpalaResNet needs an image"),
        (MINATAR, "nature_cnn", "at least 36x36"),
        (ATARI, "resnet", "impala_resnet"),
        (gym.spaces.Discrete(4), "auto", "Discrete"),
        (gym.spaces.Dict({"image": MINATAR}), "nature_cnn", "key 'image': NatureCNN needs"),
    ],
)
def test_kinds_that_cannot_take_the_space_raise(space, kind, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        make_torso(space, kind)


def test_bad_mlp_settings_raise() -> None:
    with pytest.raises(ConfigError, match="activation"):
        make_torso(VECTOR, activation="gelu")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="hidden_sizes"):
        make_torso(VECTOR, hidden_sizes=(64, 0))


# ---- custom torsos: factories live in a module registered in sys.modules by the fixture ----

FACTORIES = "shoal_test_torso_factories"


class Flat(nn.Module):
    def __init__(self, width: int, declared: int | None = None, nan: bool = False) -> None:
        super().__init__()
        self.linear = nn.Linear(8, width)
        self.norm = nn.BatchNorm1d(width)
        self.nan = nan
        if declared is not None:
            self.out_features = declared

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        out = self.norm(self.linear(obs))
        return out * float("nan") if self.nan else out


@pytest.fixture
def factories(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType(FACTORIES)
    module.calls = []  # type: ignore[attr-defined]

    def declared(space):
        module.calls.append(space)  # type: ignore[attr-defined]
        return Flat(5, declared=5)

    module.declared = declared  # type: ignore[attr-defined]
    module.undeclared = lambda space: Flat(7)  # type: ignore[attr-defined]
    module.wrong_width = lambda space: Flat(7, declared=6)  # type: ignore[attr-defined]
    module.nan = lambda space: Flat(3, nan=True)  # type: ignore[attr-defined]
    module.not_a_module = lambda space: "a string"  # type: ignore[attr-defined]
    module.vector_output = lambda space: nn.Flatten(0)  # type: ignore[attr-defined]
    module.raises = lambda space: 1 / 0  # type: ignore[attr-defined]
    module.constant = 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, FACTORIES, module)
    return module


def test_custom_factory_is_called_with_the_space(factories: types.ModuleType) -> None:
    torso = make_torso(VECTOR, custom=f"{FACTORIES}:declared")
    assert isinstance(torso, Flat) and torso.out_features == 5
    assert factories.calls == [VECTOR]


def test_custom_out_features_is_inferred_without_side_effects(factories: types.ModuleType) -> None:
    torso = make_torso(VECTOR, custom=f"{FACTORIES}:undeclared")
    assert torso.out_features == 7
    # The probes ran in eval mode: training is restored and BatchNorm statistics did not move.
    assert torso.training and torso.norm.training
    assert torch.equal(torso.norm.running_mean, torch.zeros(7))
    assert int(torso.norm.num_batches_tracked) == 0


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("shoal_no_such_module_xyz:make", "importing 'shoal_no_such_module_xyz' failed"),
        (f"{FACTORIES}:missing", "has no attribute 'missing'"),
        (f"{FACTORIES}:constant", "not a function"),
        (f"{FACTORIES}:not_a_module", "returned a str, not a torch.nn.Module"),
        (f"{FACTORIES}:vector_output", r"shape \[16\]"),
        (f"{FACTORIES}:wrong_width", r"shape \[2, 6\]"),
        (f"{FACTORIES}:nan", "NaN"),
        (f"{FACTORIES}:raises", "ZeroDivisionError"),
        (f"{FACTORIES}.declared", "not an import path"),
    ],
)
def test_bad_custom_torsos_raise_naming_the_path(factories, path: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as info:
        make_torso(VECTOR, custom=path)
    assert repr(path) in str(info.value)


def test_custom_and_kind_together_raise(factories: types.ModuleType) -> None:
    with pytest.raises(ConfigError, match="set only one"):
        make_torso(VECTOR, "mlp", custom=f"{FACTORIES}:declared")


def test_check_torso_rejects_bad_torsos_and_keeps_the_space_rng() -> None:
    assert check_torso(Flat(4, declared=4), VECTOR) == 4
    with pytest.raises(ConfigError, match=r"shape \[2, 4\]"):
        check_torso(Flat(4, declared=3), VECTOR)
    with pytest.raises(ConfigError, match="NaN"):
        check_torso(Flat(4, declared=4, nan=True), VECTOR)
    with pytest.raises(ConfigError, match="out_features=None"):
        check_torso(Flat(4), VECTOR)
    space = copy.deepcopy(VECTOR)
    space.seed(1)
    first = space.sample()
    space.seed(1)
    check_torso(make_torso(space), space)
    np.testing.assert_array_equal(space.sample(), first)


def test_nature_cnn_runs_channels_last_with_the_same_outputs_and_gradients() -> None:
    # forward() hands oneDNN a channels-last copy of the input (faster on CPUs); the result
    # must be the network of the standard layout, to rounding, and so must the gradients.
    space = gym.spaces.Box(0, 255, (3, 72, 128), np.uint8)
    net = NatureCNN(space)
    obs = torch.randint(0, 256, (6, 3, 72, 128), dtype=torch.uint8)
    out = net(obs)
    (grad,) = torch.autograd.grad(out.square().sum(), net.layers[0].weight)
    plain = net.layers(obs.float() / 255.0)
    (plain_grad,) = torch.autograd.grad(plain.square().sum(), net.layers[0].weight)
    torch.testing.assert_close(out, plain, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(grad, plain_grad, rtol=1e-3, atol=1e-4)
