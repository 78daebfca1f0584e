"""agents/common: target updates, schedules, and the learner state declared once."""

import torch
from torch import nn

from shoal.agents.base import learning_rates
from shoal.agents.common import (
    DeclaredState,
    HardUpdate,
    LearnerState,
    LearningRateSchedule,
    SoftUpdate,
    TargetUpdate,
)
from shoal.optim import Adam


def _pair() -> tuple[nn.Linear, nn.Linear]:
    torch.manual_seed(0)
    online, target = nn.Linear(3, 2), nn.Linear(3, 2)
    return online, target


def test_soft_update_moves_the_target_by_tau_every_period() -> None:
    online, target = _pair()
    before = target.weight.detach().clone()
    update = SoftUpdate(target, online, tau=0.25, period=2)
    update(1)
    assert torch.equal(target.weight, before)
    update(2)
    expected = before + 0.25 * (online.weight.detach() - before)
    assert torch.allclose(target.weight, expected)


def test_hard_update_copies_only_at_multiples_of_the_period() -> None:
    online, target = _pair()
    update = HardUpdate(target, online, period=3)
    update(2)
    assert not torch.equal(target.weight, online.weight)
    update(3)
    assert torch.equal(target.weight, online.weight)


def test_target_update_averages_below_one_and_copies_at_one() -> None:
    online, target = _pair()
    update = TargetUpdate(target, online)
    update(1, 1.0, 2)
    assert not torch.equal(target.weight, online.weight)
    update(1, 0.5, 2)
    assert not torch.equal(target.weight, online.weight)
    update(2, 1.0, 2)
    assert torch.equal(target.weight, online.weight)


def test_learning_rate_schedule_decays_to_zero_only_when_annealed() -> None:
    annealed = LearningRateSchedule(base=3e-4, anneal=True)
    assert annealed.value(0.0) == 3e-4
    assert annealed.value(0.25) == 3e-4 * 0.75
    assert annealed.value(1.5) == 0.0
    assert LearningRateSchedule(base=3e-4, anneal=False).value(0.9) == 3e-4


class _Learner(DeclaredState):
    def __init__(self, with_alpha: bool) -> None:
        self.net, self.target = _pair()
        self.log_alpha = nn.Parameter(torch.zeros(()))
        self.b_optimizer = Adam(self.net.parameters(), lr=1e-3)
        self.a_optimizer = Adam([self.log_alpha], lr=2e-3) if with_alpha else None
        self.version, self.steps = 0, 0

    def learner_state(self) -> LearnerState:
        return LearnerState(
            modules={"network": self.net, "target": self.target},
            tensors={"log_alpha": self.log_alpha},
            optimizers={"b_optimizer": self.b_optimizer, "a_optimizer": self.a_optimizer},
            counters=("version", "steps"),
        )


def test_declared_state_round_trips_and_names_the_optimisers() -> None:
    source = _Learner(with_alpha=True)
    with torch.no_grad():
        source.log_alpha.fill_(0.5)
    source.version, source.steps = 7, 3
    state = source.state_dict()
    assert set(state) == {
        "network",
        "target",
        "log_alpha",
        "b_optimizer",
        "a_optimizer",
        "version",
        "steps",
    }
    copy = _Learner(with_alpha=True)
    copy.load_state_dict(state)
    assert torch.equal(copy.net.weight, source.net.weight)
    assert float(copy.log_alpha.detach()) == 0.5
    assert (copy.version, copy.steps) == (7, 3)
    assert learning_rates(copy) == [2e-3, 1e-3]  # by checkpoint key, as the old scan sorted
    assert "a_optimizer" not in _Learner(with_alpha=False).state_dict()
