"""The runtime's side of the seam: per-row state (Acting), the weights board, the learner loop."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from shoal.agents.base import Policy, PolicyStep, Update
from shoal.data import Batch
from shoal.envs.spec import EnvSpec
from shoal.runtime.learning import LearnerLoop, WeightsBoard
from shoal.runtime.rows import Acting

SPEC = EnvSpec("test", gym.spaces.Box(-1.0, 1.0, (1,), np.float32), gym.spaces.Discrete(3))


class Counting(Policy):
    """State `count`: steps since the episode started, starting at 10 x the row's env slot.
    Records what it was given."""

    def __init__(self) -> None:
        self.seen: list = []

    def initial_state(self, slots):
        return {"count": torch.as_tensor(10.0 * slots, dtype=torch.float32)}

    def step(self, obs, state, inputs, mode):
        self.seen.append(inputs)
        actions = (inputs.slot + inputs.steps) % 3
        return PolicyStep(actions, {"obs": obs[:, 0]}, {"count": state["count"] + 1})


def test_rows_keep_state_inputs_and_step_counts_and_reset_alone():
    policy = Counting()
    acting = Acting(policy, SPEC, slot_offset=4)  # actor 2 of a run with 2 envs per actor
    obs = np.zeros((2, 1), np.float32)
    _, actions, record = acting.act(obs)
    assert record["count"].tolist() == [40.0, 50.0]  # the state the step started from
    assert record["first"].tolist() == [True, True] and policy.seen[0].slot.tolist() == [4, 5]
    acting.observe(np.array([0.5, -1.0]), np.array([False, True]))
    _, _, record = acting.act(obs)
    inputs = policy.seen[-1]
    # Row 0 goes on; row 1's episode ended: fresh state, no previous action or reward.
    assert record["count"].tolist() == [41.0, 50.0] and record["first"].tolist() == [False, True]
    assert inputs.prev_action.tolist() == [actions[0], 0]
    assert inputs.prev_reward.tolist() == [0.5, 0.0]
    assert inputs.steps.tolist() == [1, 1]  # steps go on across episodes
    # Rows can act alone, in any order; a new row starts its own episode.
    _, _, record = acting.act(np.zeros((2, 1), np.float32), np.array([2, 0]))
    assert record["count"].tolist() == [60.0, 42.0] and record["first"].tolist() == [True, False]
    acting.restart(np.array([0]))
    assert acting.act(obs[:1], np.array([0]))[2]["count"].tolist() == [40.0]


def test_a_policy_whose_state_does_not_keep_its_layout_is_refused():
    class Forgetful(Counting):
        def step(self, obs, state, inputs, mode):
            return PolicyStep(np.zeros(len(obs), np.int64))

    with pytest.raises(RuntimeError, match="initial_state"):
        Acting(Forgetful(), SPEC).act(np.zeros((1, 1), np.float32))


class FakeLearner:
    """Counts weight copies; its `update` records the progress it is given."""

    def __init__(self) -> None:
        self.version, self.copies, self.progress = 0, 0, []

    def update(self, batch, progress):
        self.version += 1
        self.progress.append(progress)
        return Update({"loss": float(batch)})

    def weights(self):
        self.copies += 1
        return {"w": torch.tensor([float(self.version)])}

    def state_dict(self):
        return {"version": self.version}


class ListTable:
    """Hands out the batches it was given."""

    def __init__(self, batches):
        self.batches, self.feedback = list(batches), []

    def sample(self, progress, timeout):
        return self.batches.pop(0) if self.batches else None

    def after_update(self, batch, priorities, version):
        self.feedback.append(version)

    def stats(self):
        return {"left": float(len(self.batches))}


def test_the_learner_copies_weights_only_when_an_actor_asked_and_before_releasing_it():
    learner, board = FakeLearner(), WeightsBoard()
    table = ListTable([Batch(1.0, 0, steps=100), Batch(2.0, 0, steps=300)])
    loop = LearnerLoop(learner, table, board, progress=lambda steps: steps / 1000)
    assert learner.copies == 1  # the weights actors start from
    assert loop.try_update() and learner.copies == 1  # nobody asked since
    assert board.take(-1)[0] == 0 and board.take(0) is None  # an actor asks for newer ones
    assert loop.try_update() and learner.copies == 2
    assert board.take(0)[0] == 2 and table.feedback == [1, 2]
    # Progress is the batch's own (env steps in the table), lag the batch's behaviour version.
    assert learner.progress == [0.1, 0.3] and loop.lag == 1.0
    assert not loop.try_update() and loop.metrics() == {"loss": 2.0, "left": 0.0}
