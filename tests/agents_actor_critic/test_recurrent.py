"""Recurrent PPO and A2C (`--agent.use-lstm true`): the actor-critic family's LSTM core.

The learner replays each env's whole sequence from the state the actor recorded at its first
step, resets the state where an episode starts inside it, and cuts PPO's minibatches between
sequences, never inside one. A recurrent agent learns a memory task a feed-forward one cannot;
its state is carried by evaluation, `predict`, central inference and a resumed run; and
checkpoints of the feed-forward agents written before the LSTM existed still load.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import shoal
from shoal.agents.actor_critic import sequence_inputs, sequence_minibatches
from shoal.agents.ppo import AGENT as PPO
from shoal.agents.ppo import PPOConfig
from shoal.agents.ppo.loss import Sequences
from shoal.envs import EnvSpec, InProcessVectorEnv
from shoal.envs.toy import Countdown, RepeatFirst
from shoal.errors import ConfigError
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting

MEMORY_TASK = "shoal.envs.toy:repeat_first"
# Settings under which LSTM PPO solves the memory task in 1,300 to 2,100 steps (seeds 0-6,
# measured beside a busy process); the tests give it ten times that.
MEMORY = {
    "lstm_size": 32,
    "hidden_sizes": (32,),
    "unroll_length": 12,
    "minibatch_size": None,
    "num_minibatches": 1,
    "learning_rate": 0.003,
    "num_epochs": 4,
}
OLD = Path(__file__).parent / "data" / "main-78af169"  # written by shoal at commit 78af169


def _collect(config: PPOConfig, envs: int = 3, length: int = 11, seed: int = 0):
    """An unroll of a recurrent PPO policy on episodes of 4 steps, so episodes start inside
    every sequence."""
    spec = EnvSpec.from_env("countdown", Countdown(length=4))
    torch.manual_seed(seed)
    net = PPO.make_networks(spec, config)
    vector = InProcessVectorEnv([lambda: Countdown(length=4)] * envs, spec, seed=seed)
    acting = Acting(PPO.make_policy(spec, config, net, seed), spec)
    collector = UnrollCollector(vector, acting, length)
    collector.collect()  # so the next unroll starts mid-episode from a non-zero state
    return spec, net, collector.collect()


def _replayed_log_probs(net, unroll, columns=None):
    """The learner's log π(a_t|·) of the unroll's steps, from the recorded sequence inputs."""
    first, state = sequence_inputs(unroll, net.initial_state(0).keys())
    obs = torch.from_numpy(unroll.obs[:-1])
    first_t = torch.from_numpy(first[:-1])
    state_t = {k: torch.from_numpy(v) for k, v in state.items()}
    actions = torch.from_numpy(unroll.actions)
    if columns is not None:
        obs, first_t, actions = obs[:, columns], first_t[:, columns], actions[:, columns]
        state_t = {k: v[columns] for k, v in state_t.items()}
    with torch.no_grad():
        logits = net.unroll(obs, first_t, state_t).params
    return torch.log_softmax(logits, -1).gather(-1, actions[..., None]).squeeze(-1)


def test_the_learner_replays_each_sequence_as_it_was_acted():
    config = PPOConfig(use_lstm=True, lstm_size=8, hidden_sizes=(8,), unroll_length=11)
    _, net, unroll = _collect(config)
    assert unroll.extras["first"][1:].any(), "episodes must start inside the sequences"
    assert np.abs(unroll.extras["core_h"][0]).min() > 0, "must start from a carried state"
    recorded = torch.from_numpy(unroll.extras["log_prob"])
    # The same weights, whole sequences from the recorded first state, resets where episodes
    # start: exactly the behaviour policy's log-probabilities.
    torch.testing.assert_close(_replayed_log_probs(net, unroll), recorded, atol=1e-5, rtol=0)
    # One column on its own (a minibatch of sequences) gives its own column's values.
    torch.testing.assert_close(
        _replayed_log_probs(net, unroll, [2]), recorded[:, [2]], atol=1e-5, rtol=0
    )
    # Without the recorded state, or without the resets, the replay is off.
    first, state = sequence_inputs(unroll, net.initial_state(0).keys())
    obs = torch.from_numpy(unroll.obs[:-1])
    with torch.no_grad():
        zero_state = net.unroll(obs, torch.from_numpy(first[:-1]), net.initial_state(3)).params
        no_resets = net.unroll(
            obs,
            torch.zeros_like(torch.from_numpy(first[:-1])),
            {k: torch.from_numpy(v) for k, v in state.items()},
        ).params
    actions = torch.from_numpy(unroll.actions)[..., None]
    for logits in (zero_state, no_resets):
        wrong = torch.log_softmax(logits, -1).gather(-1, actions).squeeze(-1)
        assert (wrong - recorded).abs().max() > 1e-4


def test_an_episode_start_inside_a_sequence_resets_the_state():
    config = PPOConfig(use_lstm=True, lstm_size=8, hidden_sizes=(8,))
    spec = EnvSpec.from_env("countdown", Countdown(length=4))
    torch.manual_seed(0)
    net = PPO.make_networks(spec, config)
    g = torch.Generator().manual_seed(1)
    obs = torch.rand(9, 2, 1, generator=g)
    first = torch.zeros(9, 2, dtype=torch.bool)
    first[5, 0] = True  # column 0 starts an episode at t = 5; column 1 never does
    state = {k: torch.randn(v.shape, generator=g) for k, v in net.initial_state(2).items()}
    changed_obs = obs.clone()
    changed_obs[:5] += 1.0
    changed_state = {k: v + 1.0 for k, v in state.items()}
    starts = first[5:].clone()
    starts[0] = True  # both columns start afresh at what was t = 5
    with torch.no_grad():
        whole = net.unroll(obs, first, state)
        fresh = net.unroll(obs[5:], starts, net.initial_state(2))
        changed = net.unroll(changed_obs, first, changed_state)
    # From t = 5 column 0 is its new episode alone, whatever came before.
    torch.testing.assert_close(whole.params[5:, 0], fresh.params[:, 0])
    torch.testing.assert_close(whole.values[5:, 0], fresh.values[:, 0])
    torch.testing.assert_close(changed.params[5:, 0], whole.params[5:, 0])
    # Column 1 carries its state and inputs through.
    assert not torch.allclose(whole.params[5:, 1], fresh.params[:, 1])
    assert not torch.allclose(changed.params[5:, 1], whole.params[5:, 1])


def test_sequence_minibatches_hold_whole_columns_in_order():
    length, width = 6, 8
    index = torch.arange(length * width).view(length, width)  # step t of env b is t * W + b
    first = torch.zeros(length, width, dtype=torch.bool)
    first[3, 5] = True
    state = {"core_h": torch.arange(width).float()[:, None].repeat(1, 4)}
    zeros = torch.zeros(length, width)
    data = Sequences(
        obs=index.float()[..., None],
        first=first,
        state=state,
        actions=index,
        old_log_prob=zeros,
        old_values=zeros,
        advantages=index.float(),
        returns=zeros,
        active=None,
    )
    torch.manual_seed(0)
    minibatches = sequence_minibatches(width, 3)
    assert [len(m) for m in minibatches] == [3, 3]  # 2 columns left for a later epoch
    assert len(torch.cat(minibatches).unique()) == 6
    for columns in minibatches:
        part = data.columns(columns)
        # Every column is one env's steps, in the order they were acted.
        assert torch.equal(part.actions, index[:, columns])
        assert torch.equal(part.obs[..., 0], index[:, columns].float())
        assert torch.equal(part.first, first[:, columns])
        assert torch.equal(part.state["core_h"][:, 0], columns.float())
        flat = part.flat()  # the loss's flat samples: step-major, so t * W + b in order
        assert torch.equal(flat.actions, index[:, columns].flatten())
    # Two epochs cut the envs differently.
    assert not all(
        torch.equal(a, b) for a, b in zip(minibatches, sequence_minibatches(width, 3), strict=True)
    )


def test_recurrent_ppo_update_moves_the_weights_and_keeps_its_first_kl_at_zero():
    config = PPOConfig(
        use_lstm=True,
        lstm_size=8,
        hidden_sizes=(8,),
        unroll_length=11,
        num_epochs=1,
        minibatch_size=22,
    )
    spec, net, unroll = _collect(config, envs=4)
    learner = PPO.make_learner(spec, config, net)
    before = {k: v.clone() for k, v in learner.weights().items()}
    metrics = learner.update(unroll, 0.0).metrics
    assert all(np.isfinite(v) for v in metrics.values())
    # Two minibatches of two sequences; the first sees the behaviour policy exactly, so the
    # mean approximate KL is half of the second's (and small).
    assert 0 <= metrics["approx_kl"] < 0.05
    after = learner.weights()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert {"policy_core.cell.weight_ih", "value_core.cell.weight_ih"} <= set(after)


@pytest.mark.parametrize(
    ("agent", "run", "words"),
    [
        ({"unroll_length": 32, "minibatch_size": 48}, {}, "minibatch-size 32"),
        ({"minibatch_size": None, "num_minibatches": 16}, {"num_envs": 8}, "num-minibatches"),
    ],
)
def test_recurrent_minibatch_settings_that_cut_sequences_are_refused(tmp_path, agent, run, words):
    with pytest.raises(ConfigError, match=words):
        shoal.train(
            "ppo",
            "CartPole-v1",
            agent={"use_lstm": True, **agent},
            run={"runs_dir": str(tmp_path), "progress": False, **run},
        )
    assert not any(tmp_path.iterdir())


@pytest.fixture(scope="module")
def memory_runs(tmp_path_factory):
    """LSTM PPO to a training mean of 0.9 on the memory task, and a feed-forward PPO with the
    same settings on a quarter of that budget (8 envs, inline)."""
    runs = tmp_path_factory.mktemp("runs")
    run = {"runs_dir": str(runs), "progress": False, "tensorboard": False, "num_envs": 8}
    lstm = shoal.train(
        "ppo",
        MEMORY_TASK,
        seed=0,
        agent={**MEMORY, "use_lstm": True},
        run={**run, "total_steps": 20_000, "stop_at_return": 0.9, "eval_episodes": 50},
    )
    # Without memory each answer is right half the time: an expected return of 0. The
    # feed-forward agent is judged on 200 greedy episodes, whose mean exceeds 0.5 with a
    # probability below 1e-12 for a memoryless policy.
    ff = shoal.train(
        "ppo",
        MEMORY_TASK,
        seed=0,
        agent=MEMORY,
        run={**run, "total_steps": 5_000, "eval_episodes": 200},
    )
    return lstm, ff


@pytest.mark.integration
def test_recurrent_ppo_learns_a_memory_task_that_feed_forward_ppo_cannot(memory_runs):
    lstm, ff = memory_runs
    assert lstm.stop_reason == "stop_at_return" and lstm.env_steps < 20_000
    assert lstm.evaluation.mean_return >= 0.9  # greedy, carrying the state through episodes
    assert ff.stop_reason == "total_steps" and ff.evaluation.mean_return < 0.5


def _play(env, seed, choose):
    obs, _ = env.reset(seed=seed)
    reward, first, actions, total = 0.0, True, [], 0.0
    while True:
        action = choose(obs, reward, first)
        actions.append(int(action))
        obs, reward, terminated, truncated, _ = env.step(action)
        total += reward
        first = False
        if terminated or truncated:
            return actions, total


def test_predict_carries_the_lstm_state_of_a_loaded_recurrent_ppo(memory_runs):
    policy = shoal.load(memory_runs[0].run_dir)
    assert policy.recurrent
    env = RepeatFirst()
    held = {}

    def by_predict(obs, reward, first):
        action, held["state"] = policy.predict(obs, None if first else held["state"])
        return action

    def forgetting(obs, reward, first):
        return policy.predict(obs)[0]  # a fresh state every step: no memory

    def by_act(obs, reward, first):
        if not first:
            policy.step_result(reward, False)
        return policy.act(obs)

    remembered = [_play(env, seed, by_predict) for seed in range(40)]
    assert np.mean([total for _, total in remembered]) >= 0.9
    assert np.mean([_play(env, seed, forgetting)[1] for seed in range(40)]) < 0.6
    for seed in range(5):
        assert _play(env, seed, by_act)[0] == remembered[seed][0]
        policy.step_result(0.0, True)


def test_a_recurrent_ppo_run_resumes_with_its_lstm(memory_runs, tmp_path):
    run_dir = tmp_path / "resumed"
    shutil.copytree(memory_runs[0].run_dir, run_dir)
    done = memory_runs[0].env_steps
    resumed = shoal.train(
        resume=run_dir,
        run={"total_steps": done + 960, "stop_at_return": None, "eval_episodes": 20},
    )
    assert resumed.env_steps >= done + 960
    assert resumed.evaluation.mean_return >= 0.9  # the LSTM's weights came back
    policy = shoal.load(run_dir)
    assert policy.config.use_lstm and policy.config.lstm_size == MEMORY["lstm_size"]


def test_recurrent_a2c_and_a3c_learn_the_memory_task_with_central_inference(tmp_path):
    run = {"runs_dir": str(tmp_path), "progress": False, "tensorboard": False, "num_envs": 8}
    agent = {"use_lstm": True, "lstm_size": 32, "hidden_sizes": (32,), "unroll_length": 12}
    agent |= {"learning_rate": 0.003}
    a2c = shoal.train(
        "a2c",
        MEMORY_TASK,
        seed=0,
        agent=agent,
        run={**run, "inference": "central", "actors": 2, "num_envs": 4, "total_steps": 30_000}
        | {"stop_at_return": 0.9, "eval_episodes": 20},
    )
    assert a2c.stop_reason == "stop_at_return" and a2c.evaluation.mean_return >= 0.9
    a3c = shoal.train("a3c", MEMORY_TASK, seed=0, agent=agent, run={**run, "total_steps": 1_000})
    assert shoal.load(a3c.run_dir).recurrent


@pytest.mark.parametrize("algo", ["ppo", "a2c"])
def test_checkpoints_of_the_feed_forward_agents_from_before_the_lstm_still_load(algo, tmp_path):
    expected = json.loads((OLD / "expected.json").read_text())
    obs = np.asarray(expected["obs"], np.float32)
    for path in (OLD / f"{algo}_policy.pt", OLD / f"{algo}-run"):
        policy = shoal.load(path)
        assert not policy.recurrent and not policy.config.use_lstm
        assert policy.act(obs).tolist() == expected["greedy_actions"][algo], path
    # The old run goes on training.
    run_dir = tmp_path / f"{algo}-run"
    shutil.copytree(OLD / f"{algo}-run", run_dir)
    resumed = shoal.train(resume=run_dir, run={"total_steps": 1024, "eval_episodes": 0})
    assert resumed.env_steps >= 1024


@pytest.mark.distributed
@pytest.mark.timeout(900)
def test_recurrent_ppo_runs_on_ray_with_two_actors(ray_cluster, quiet_run):
    # A smoke run: the recorded states travel from two actor processes to the learner's.
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 4, "eval_episodes": 20}
    agent = {**MEMORY, "use_lstm": True}
    result = shoal.train("ppo", MEMORY_TASK, seed=0, total_steps=4_800, agent=agent, run=run)
    assert result.summary["updates"] >= 40
    policy = shoal.load(result.run_dir)
    assert policy.recurrent and policy.config.use_lstm
    assert np.isfinite(result.evaluation.mean_return)
