"""TRPO's learner: GAE targets for a rollout, one natural-gradient step of the policy inside the
KL trust region, then epochs of Adam minibatch steps of the value function (as sb3-contrib's
TRPO: the value function has its own optimiser and never moves the policy)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from shoal import ops
from shoal.agents.actor_critic import ActorCritic
from shoal.agents.base import Unroll, Update, Weights, set_learning_rate
from shoal.agents.common import DeclaredState, LearnerState, LearningRateSchedule, optimizer_step
from shoal.agents.trpo.config import TRPOConfig
from shoal.agents.trpo.loss import Batch, natural_policy_step, rollout_targets, value_loss
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.optim import Adam
from shoal.tree import map_tree


class TRPOLearner(DeclaredState):
    def __init__(self, spec: EnvSpec, config: TRPOConfig, net: ActorCritic) -> None:
        self.config, self.net = config, net
        policy = [*net.policy_torso.parameters(), *net.policy_head.parameters()]
        self.policy_params: list[nn.Parameter] = list(dict.fromkeys(policy))
        chosen = {id(p) for p in self.policy_params}
        # A torso shared with the policy stays out: its steps are the trust region's alone.
        value = [*net.value_torso.parameters(), *net.value_head.parameters()]
        value = [p for p in dict.fromkeys(value) if id(p) not in chosen]
        self.value_optimizer = Adam(value, lr=config.learning_rate)
        self.version = 0

    def update(self, batch: Unroll, progress: float) -> Update:
        config, net = self.config, self.net
        schedule = LearningRateSchedule(base=config.learning_rate, anneal=config.anneal_lr)
        self.value_optimizer.lr = schedule.value(progress)
        data = self._batch(batch)
        if data.actions.shape[0] == 0:  # no row held an agent
            self.version += 1
            return Update({})
        step = natural_policy_step(net, self.policy_params, data, config)
        losses = self._fit_value(data)
        if net.obs_norm is not None:
            # After the update, so that both steps saw the normalisation the actors acted with.
            net.obs_norm.update(data.obs)
        self.version += 1
        search = step.search
        metrics = {
            "surrogate_before": step.surrogate_before,
            "surrogate": search.surrogate,
            "kl": search.kl,
            "line_search_accepted": float(search.accepted),
            "line_search_backtracks": float(search.backtracks),
            "step_fraction": search.step_fraction,
            "cg_iterations": float(step.cg.iterations),
            "cg_residual": step.cg.residual_norm,
            "value_loss": float(np.mean(losses)),
            "learning_rate": self.value_optimizer.lr,
        }
        with torch.no_grad():
            y, v = data.returns, data.values
            metrics["explained_variance"] = float(1 - (y - v).var() / y.var().clamp_min(1e-8))
            if net.log_std is not None:
                metrics["std"] = float(net.log_std.exp().mean())
        return Update(metrics)

    def _batch(self, batch: Unroll) -> Batch:
        config, net = self.config, self.net
        length, width = batch.length, batch.batch_size
        device = module_device(net)

        def tensor(x: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.asarray(x)).to(device, non_blocking=True)

        obs = map_tree(tensor, batch.obs)
        with torch.no_grad():
            values = net.value(map_tree(lambda x: x.flatten(0, 1), obs)).view(length + 1, width)
            v_t = values[1:].clone()
            if len(batch.final_index):
                t, b = tensor(batch.final_index).unbind(1)
                v_t[t, b] = net.value(map_tree(tensor, batch.final_obs))
        advantages, returns = rollout_targets(
            config,
            tensor(batch.rewards).float(),
            tensor(batch.terminated),
            tensor(batch.truncated),
            values[:-1],
            v_t,
        )
        rows = Batch(
            obs=map_tree(lambda x: x[:-1].flatten(0, 1), obs),
            actions=tensor(batch.extras.get("action", batch.actions)).flatten(0, 1),
            behaviour_log_prob=tensor(batch.extras["log_prob"]).flatten(),
            advantages=advantages.flatten(),
            returns=returns.flatten(),
            values=values[:-1].flatten(),
        )
        if "active" in batch.extras:  # rows without an agent (multi-agent envs) teach nothing
            keep = tensor(batch.extras["active"]).flatten().nonzero().squeeze(1)
            rows = Batch(*(map_tree(lambda x, keep=keep: x[keep], field) for field in rows))
        if config.normalize_advantages and rows.advantages.numel() > 1:
            rows = rows._replace(advantages=ops.normalize_advantages(rows.advantages))
        return rows

    def _fit_value(self, data: Batch) -> list[float]:
        """`value_epochs` passes of shuffled minibatches (the last one may be smaller)."""
        size = data.actions.shape[0]
        mb = min(self.config.minibatch_size, size)
        losses = []
        for _ in range(self.config.value_epochs):
            order = torch.randperm(size, device=data.actions.device)
            for start in range(0, size, mb):
                index = order[start : start + mb]
                obs = map_tree(lambda x, index=index: x[index], data.obs)
                loss = value_loss(self.net, obs, data.returns[index])
                optimizer_step(self.value_optimizer, loss)
                losses.append(float(loss.detach()))
        return losses

    def weights(self) -> Weights:
        # CPU copies: actors act on CPU whatever device the learner is on.
        return {k: v.detach().to("cpu", copy=True) for k, v in self.net.state_dict().items()}

    def learner_state(self) -> LearnerState:
        return LearnerState(
            modules={"network": self.net},
            optimizers={"value_optimizer": self.value_optimizer},
            counters=("version",),
        )

    def apply_settings(self, config: Any) -> None:
        """Learn with `config` from the next update on (PBT's exploits)."""
        self.config = config
        set_learning_rate(self.value_optimizer, config.learning_rate)
