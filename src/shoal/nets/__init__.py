"""Network building blocks: torsos, heads, noisy layers, recurrent cores and input normalisation."""

from shoal.nets.cnn import MinAtarCNN, NatureCNN
from shoal.nets.heads import CategoricalHead, DuelingQHead, GaussianHead, ValueHead, q_linear
from shoal.nets.mlp import MLP, orthogonal_init
from shoal.nets.noisy import NoisyLinear, mean_weights, noisy_layers
from shoal.nets.normalize import RunningNorm
from shoal.nets.recurrent import LSTMCore, LSTMState
from shoal.nets.resnet import ImpalaResNet
from shoal.nets.torso import DictTorso, TorsoKind, check_torso, make_torso, module_device

__all__ = [
    "MLP",
    "CategoricalHead",
    "DictTorso",
    "DuelingQHead",
    "GaussianHead",
    "ImpalaResNet",
    "LSTMCore",
    "LSTMState",
    "MinAtarCNN",
    "NatureCNN",
    "NoisyLinear",
    "RunningNorm",
    "TorsoKind",
    "ValueHead",
    "check_torso",
    "make_torso",
    "mean_weights",
    "module_device",
    "noisy_layers",
    "orthogonal_init",
    "q_linear",
]
