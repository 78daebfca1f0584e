"""AlphaZero under central inference: the actors search, the server evaluates their leaves.

The search through the server (`ServedNetwork` -> `InferenceServer.forward`) must be the search
with the network in the actor's own process; the server batches the calls of several actors
into one forward pass; a short run inline and one on Ray learn from what such actors played."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
import torch

import shoal
from shoal.agents.alphazero import AGENT, AlphaZeroConfig
from shoal.agents.base import StepInputs
from shoal.envs.board_games import TicTacToe
from shoal.envs.registry import env_spec
from shoal.runtime.central import ServedNetwork
from shoal.runtime.inference import InferenceServer
from shoal.runtime.rows import Acting

CONFIG = AlphaZeroConfig(num_simulations=16, channels=8, blocks=1)
SMALL = {
    "num_simulations": 8,
    "channels": 8,
    "blocks": 1,
    "batch_size": 32,
    "learning_starts": 64,
    "samples_per_insert": 2.0,
}


def _positions(count: int, seed: int) -> dict[str, np.ndarray]:
    """Observations of `count` positions of random games still under way."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        game = TicTacToe()
        for _ in range(rng.integers(0, 6)):
            game = game.apply(int(rng.choice(np.flatnonzero(game.legal_actions()))))
            if game.terminal_value() is not None:
                break
        if game.terminal_value() is None:
            out.append(game.observation())
    return {key: np.stack([obs[key] for obs in out]) for key in out[0]}


def _server(net: torch.nn.Module, max_batch: int, timeout_s: float) -> InferenceServer:
    spec = env_spec("tictactoe")
    acting = Acting(AGENT.make_policy(spec, CONFIG, net, 0, None), spec)
    return InferenceServer(acting, max_batch, timeout_s)


def test_search_through_the_central_server_is_the_search_with_a_local_network():
    spec = env_spec("tictactoe")
    torch.manual_seed(0)
    net = AGENT.make_networks(spec, CONFIG)
    server = _server(net, max_batch=64, timeout_s=0.0)
    try:
        local = AGENT.make_policy(spec, CONFIG, net, 7, None)
        served_net = ServedNetwork(server.forward)
        served = AGENT.make_policy(spec, CONFIG, served_net, 7, None)
        obs = _positions(6, seed=1)
        inputs = StepInputs(
            *(np.zeros(6, t) for t in (bool, np.int64, np.float32, np.int64, np.int64))
        )
        for mode in ("train", "greedy"):  # train: root noise and sampled moves, same seed
            mine, theirs = local.step(obs, {}, inputs, mode), served.step(obs, {}, inputs, mode)
            np.testing.assert_array_equal(mine.action, theirs.action)
            for key in ("search_policy", "root_value"):
                np.testing.assert_array_equal(mine.extras[key], theirs.extras[key])
        # Every evaluation was a request: per step one of the roots and at most one per
        # simulation (none when every search's leaf is a finished game).
        assert 2 <= server.stats.calls <= 2 * (1 + CONFIG.num_simulations)
        assert served_net.version == -1 and served_net.take(-1) is None  # no weights published
    finally:
        server.stop()


def test_the_server_batches_several_actors_leaf_requests_into_one_forward_pass():
    spec = env_spec("tictactoe")
    torch.manual_seed(1)
    net = AGENT.make_networks(spec, CONFIG)
    a, b = _positions(5, seed=2), _positions(3, seed=3)
    # Served only once both requests (8 rows) wait: one batch of two calls.
    server = _server(net, max_batch=8, timeout_s=30.0)
    answers: dict[str, tuple] = {}
    try:
        threads = [
            threading.Thread(target=lambda k=k, x=x: answers.update({k: server.forward(x)}))
            for k, x in (("a", a["observation"]), ("b", b["observation"]))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        row = server.stats.report()
    finally:
        server.stop()
    assert row["inference_calls_per_batch"] == 2 and row["inference_batch_size"] == 8
    net.eval()
    with torch.inference_mode():
        for key, x in (("a", a), ("b", b)):
            logits, value = net(torch.from_numpy(x["observation"]))
            (got_logits, got_value), version = answers[key]
            assert version == -1  # no weights published: the server's own
            np.testing.assert_allclose(got_logits, logits.numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got_value, value.numpy(), rtol=1e-5, atol=1e-6)


def _last_row(result) -> dict:
    return json.loads((result.run_dir / "metrics.jsonl").read_text().splitlines()[-1])


def test_inline_central_inference_actors_search_and_the_learner_updates(tmp_path):
    result = shoal.train(
        "alphazero",
        "tictactoe",
        seed=0,
        total_steps=1024,
        agent=SMALL,
        run={
            "inference": "central",
            "actors": 2,
            "num_envs": 4,
            "runs_dir": str(tmp_path),
            "eval_episodes": 0,
            "log_interval": 256,
            "progress": False,
            "tensorboard": False,
        },
    )
    last = _last_row(result)
    assert result.summary["updates"] > 0 and last["replay_inserted"] > 0
    # Leaf requests, a search's batch each: at most the 4 games' movers of one actor per call.
    assert 0 < last["inference_batch_size"] <= 8 and last["inference_calls_per_batch"] >= 1


@pytest.mark.integration
@pytest.mark.distributed
@pytest.mark.timeout(600)
def test_alphazero_on_ray_with_two_actors_and_central_inference_learns(ray_cluster, quiet_run):
    result = shoal.train(
        "alphazero",
        "tictactoe",
        seed=0,
        total_steps=3000,
        agent=SMALL,
        run={
            **quiet_run,
            "runtime": "ray",
            "inference": "central",
            "actors": 2,
            "num_envs": 8,
            "inference_batch": 16,  # both actors' movers
            "inference_timeout_ms": 20.0,
            "eval_episodes": 0,
            "log_interval": 500,
        },
    )
    rows = [
        json.loads(line) for line in (result.run_dir / "metrics.jsonl").read_text().splitlines()
    ]
    losses = [row["loss"] for row in rows if "loss" in row]
    assert result.summary["updates"] > 0 and len(losses) >= 2
    assert all(np.isfinite(losses))
    last = rows[-1]
    assert last["actors_live"] == 2 and last["replay_inserted"] > 0
    assert 0 < last["inference_batch_fill"] <= 1 and last["inference_calls_per_batch"] >= 1
