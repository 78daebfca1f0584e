"""A learner's state declared once: checkpoints and PBT's optimiser lookup follow from it.

A learner lists its modules, optimisers, tensors and counters under the keys its checkpoint
uses (`LearnerState`); `DeclaredState` gives it `state_dict`, `load_state_dict` and
`declared_optimizers` (what `shoal tune` reads learning rates from, see
`shoal.agents.base.learning_rates`). SB3 has each algorithm list what it saves
(`_get_torch_save_params`); Acme keeps a learner's whole training state in one value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

__all__ = ["DeclaredState", "LearnerState"]


@dataclass(frozen=True)
class LearnerState:
    """What a learner checkpoints, by checkpoint key.

    `modules`: networks (their `state_dict`). `optimizers`: an optimiser, `None` (absent, e.g.
    SAC's α optimiser when α is fixed) or a mapping of named optimisers saved as one dict.
    `tensors`: parameters saved as a copy and loaded in place (they live in an optimiser).
    `counters`: integer attributes of the learner saved under their own names.
    """

    modules: Mapping[str, nn.Module]
    optimizers: Mapping[str, Any] = field(default_factory=dict)
    tensors: Mapping[str, torch.Tensor] = field(default_factory=dict)
    counters: tuple[str, ...] = ("version",)


class DeclaredState:
    """`state_dict` and `load_state_dict` from `learner_state()`, which subclasses give."""

    def learner_state(self) -> LearnerState:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        declared = self.learner_state()
        state: dict[str, Any] = {key: m.state_dict() for key, m in declared.modules.items()}
        for key, tensor in declared.tensors.items():
            state[key] = tensor.detach().clone()
        for key, optimizer in declared.optimizers.items():
            if isinstance(optimizer, Mapping):
                state[key] = {name: opt.state_dict() for name, opt in optimizer.items()}
            elif optimizer is not None:
                state[key] = optimizer.state_dict()
        for name in declared.counters:
            state[name] = getattr(self, name)
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        declared = self.learner_state()
        for key, module in declared.modules.items():
            module.load_state_dict(state[key])
        with torch.no_grad():
            for key, tensor in declared.tensors.items():
                tensor.copy_(state[key])  # in place: the tensor lives in its optimiser
        for key, optimizer in declared.optimizers.items():
            if isinstance(optimizer, Mapping):
                for name, opt in optimizer.items():
                    opt.load_state_dict(state[key][name])
            elif optimizer is not None:
                optimizer.load_state_dict(state[key])
        for name in declared.counters:
            setattr(self, name, int(state[name]))

    def declared_optimizers(self) -> list[Any]:
        """Every optimiser the learner steps, by checkpoint key (named ones in their order)."""
        found: list[Any] = []
        for _, optimizer in sorted(self.learner_state().optimizers.items()):
            if isinstance(optimizer, Mapping):
                found.extend(optimizer.values())
            elif optimizer is not None:
                found.append(optimizer)
        return found
