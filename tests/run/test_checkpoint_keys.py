"""What a checkpoint and a saved policy hold (`shoal.run.checkpoints`): declared once, and
what a run writes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from shoal.errors import CheckpointError
from shoal.run.checkpoints import (
    CHECKPOINT_KEYS,
    CHECKPOINT_OPTIONAL_KEYS,
    FORMAT,
    LEARNER_NETWORK,
    POLICY_FORMAT,
    POLICY_KEYS,
    learner_network,
    list_checkpoints,
    load_checkpoint,
    missing_keys,
    read_any,
)
from shoal.run.layout import BEST_POLICY, checkpoint_dir


def test_a_run_checkpoint_holds_every_declared_key(trained):
    saved = load_checkpoint(list_checkpoints(checkpoint_dir(Path(trained.run_dir)))[-1], "ppo")
    assert saved["format"] == FORMAT
    assert missing_keys(saved) == []
    assert set(saved) <= set(CHECKPOINT_KEYS) | set(CHECKPOINT_OPTIONAL_KEYS)
    weights = learner_network(saved["learner"])
    assert weights and all(isinstance(v, torch.Tensor) for v in weights.values())


def test_a_saved_policy_holds_every_declared_key(trained):
    policy = read_any(Path(trained.run_dir) / BEST_POLICY)
    assert isinstance(policy, dict) and policy["format"] == POLICY_FORMAT
    assert set(policy) == set(POLICY_KEYS)
    assert policy[LEARNER_NETWORK]


def test_missing_keys_names_what_a_payload_lacks_in_declared_order():
    payload = {key: 0 for key in CHECKPOINT_KEYS if key not in ("episodes", "learner")}
    assert missing_keys(payload) == ["episodes", "learner"]
    # `format` is added by save_checkpoint, so a payload need not hold it.
    assert "format" not in missing_keys({})


def test_a_learner_state_without_network_weights_is_a_clear_error():
    with pytest.raises(CheckpointError) as error:
        learner_network({"optimizer": {}, "version": 3}, "step-000000000010.pt")
    message = str(error.value)
    assert message.startswith("step-000000000010.pt holds no network weights")
    assert f"{LEARNER_NETWORK!r}" in message and "optimizer, version" in message
