"""Network building blocks: torsos, heads, recurrent cores and input normalisation."""

from shoal.nets.cnn import MinAtarCNN, NatureCNN
from shoal.nets.heads import CategoricalHead, DuelingQHead, GaussianHead, ValueHead
from shoal.nets.mlp import MLP, orthogonal_init
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
    "RunningNorm",
    "TorsoKind",
    "ValueHead",
    "check_torso",
    "make_torso",
    "module_device",
    "orthogonal_init",
]
