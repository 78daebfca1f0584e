"""Agent57's losses over a batch of replayed sequences (Badia et al. 2020, "Agent57" and "Never
Give Up", appendices).

For sequences of `L` steps (`L + 1` entries, `shoal.replay.sequence`) with the stored LSTM
states of both Q-networks:

1. Burn-in: each online and target Q-network unrolls the first `burn_in` steps without
   gradients, only to warm its stored state (R2D2, section 3).
2. Every entry's mixture j (per step: a sequence may cross into an episode with another j)
   gives β_j and γ_j from the one `MixtureTable` the actors read too. The target policy is
   greedy on the combined online Q-values `h(h^{-1}(Q_e) + β_j h^{-1}(Q_i))` (section 4.1),
   and each head learns transformed Retrace(λ) targets towards it with its own reward, the
   extrinsic r_t or NGU's intrinsic r^i_t (`ops.transformed_greedy_retrace`), with γ_j.
3. The Q loss is the importance-weighted mean over sequences of the mean over trained steps
   of `(δ_e² + δ_i²) / 2`; priorities mix max and mean of `|δ_e| + |δ_i|` (R2D2's η rule).
4. NGU's novelty networks learn from the same steps: the embedding by inverse dynamics
   (cross-entropy of a_t given f(x_t), f(x_{t+1}) inside an episode), the RND predictor by
   its squared error on the fixed random target.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from shoal import ops
from shoal.agents.agent57.config import Agent57Config
from shoal.agents.agent57.mixtures import MixtureTable
from shoal.agents.agent57.networks import Agent57Net
from shoal.agents.common.masks import legal_actions
from shoal.agents.value.loss import sequence_priorities
from shoal.tree import map_tree

# Per-step fields the actors record (`data.py`), besides R2D2's.
STEP_KEYS = ("mixture", "intrinsic_reward", "prev_intrinsic", "episodic_reward", "multiplier")
STATE_KEYS = ("extrinsic_h", "extrinsic_c", "intrinsic_h", "intrinsic_c")
_TIME_MAJOR = ("obs", "first", "prev_action", "prev_reward", "action", "reward", "terminated")
_TIME_MAJOR += ("end", "acted", *STEP_KEYS)


class Losses(NamedTuple):
    q: torch.Tensor  # the Q-networks' loss
    embedding: torch.Tensor  # inverse dynamics cross-entropy
    rnd: torch.Tensor  # distillation error
    priorities: torch.Tensor  # [B] new sequence priorities
    metrics: dict[str, torch.Tensor]


def time_major(data: Mapping[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    """Replay's `[B, L(+1), ...]` fields as `[L(+1), B, ...]` tensors on `device`."""
    out = {}
    for key in (*_TIME_MAJOR, *STATE_KEYS):
        x = torch.from_numpy(np.asarray(data[key])).to(device, non_blocking=True)
        out[key] = x.transpose(0, 1) if key in _TIME_MAJOR else x
    return out


def entry_inputs(batch: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The mixture index and previous intrinsic reward at all `L + 1` entries, `[L + 1, B]`.

    The actors record both at every step; an entry where no step was taken (a truncated
    episode's final observation, and entry L) continues the step before it: same mixture, and
    that step's intrinsic reward as its previous one (0 where the entry starts an episode).
    """
    acted = batch["acted"]
    pad = torch.zeros_like(acted[:1])
    acted_at = torch.cat([acted, pad])
    mixture = batch["mixture"].long()
    mixture_at = torch.where(
        acted_at, torch.cat([mixture, mixture[-1:]]), torch.cat([mixture[:1], mixture])
    )
    intrinsic, prev = batch["intrinsic_reward"], batch["prev_intrinsic"]
    zero = torch.zeros_like(intrinsic[:1])
    carried = torch.where(batch["first"], 0.0, torch.cat([zero, intrinsic]))
    prev_at = torch.where(acted_at, torch.cat([prev, zero]), carried)
    return mixture_at, prev_at


def agent57_losses(
    online: Agent57Net,
    target: Agent57Net,
    data: Mapping[str, np.ndarray],
    config: Agent57Config,
    table: MixtureTable,
) -> Losses:
    """All of Agent57's losses on a sampled batch of sequences (module docstring)."""
    device = next(online.parameters()).device
    batch = time_major(data, device)
    packing = getattr(online.extrinsic, "obs_packing", None)  # a Dict observation, packed
    if packing is not None:
        batch["obs"] = packing.unpack(batch["obs"])
    mixture, prev_intrinsic = entry_inputs(batch)
    beta, gamma = (x.to(device) for x in table.select(mixture))
    extra = online.extra_inputs(prev_intrinsic, mixture)
    inputs = (batch["obs"], batch["prev_action"], batch["prev_reward"], batch["first"])
    burn = config.burn_in

    def unroll(net: nn.Module, state: tuple, steps: slice, grad: bool) -> tuple:
        obs, prev_action, prev_reward, first = (map_tree(lambda x: x[steps], x) for x in inputs)
        with torch.set_grad_enabled(grad):
            return net.unroll(obs, prev_action, prev_reward, first, state, extra[steps])

    q_online, q_target = {}, {}
    for head in ("extrinsic", "intrinsic"):
        state = (batch[f"{head}_h"], batch[f"{head}_c"])
        nets = (getattr(online, head), getattr(target, head))
        states = [state, state]
        if burn:  # burn-in only warms the stored states
            states = [unroll(net, state, slice(0, burn), False)[1] for net in nets]
        q_online[head] = unroll(nets[0], states[0], slice(burn, None), True)[0]
        q_target[head] = unroll(nets[1], states[1], slice(burn, None), False)[0]

    trained = slice(burn, None)
    with torch.no_grad():
        combined = ops.combine_q_values(
            q_online["extrinsic"].detach(),
            q_online["intrinsic"].detach(),
            beta[trained],
            config.rescale_eps,
        )
        legal = legal_actions(batch["obs"])
        greedy = (  # [L + 1 - burn, B], among the legal actions where there is a mask
            combined.argmax(-1) if legal is None else ops.masked_argmax(combined, legal[trained])
        )
    action = batch["action"][trained].long()
    not_terminated = (~batch["terminated"][trained]).to(beta.dtype)
    discount = gamma[burn:-1] * not_terminated
    extrinsic = batch["reward"][trained]
    if config.reward_clip is not None:
        extrinsic = extrinsic.clamp(-config.reward_clip, config.reward_clip)
    rewards = {"extrinsic": extrinsic, "intrinsic": batch["intrinsic_reward"][trained]}
    mask = batch["acted"][trained].to(beta.dtype)
    steps = mask.sum(0).clamp(min=1.0)
    weights = torch.from_numpy(np.asarray(data["weights"], np.float32)).to(device)
    q_loss = torch.zeros((), device=device)
    td_abs = torch.zeros_like(mask)
    metrics: dict[str, torch.Tensor] = {}
    for head in ("extrinsic", "intrinsic"):
        targets = ops.transformed_greedy_retrace(
            q_target[head],
            action,
            greedy,
            rewards[head],
            discount,
            config.retrace_lambda,
            batch["end"][trained],
            config.rescale_eps,
        ).to(beta.dtype)
        q_taken = q_online[head][:-1].gather(-1, action.unsqueeze(-1)).squeeze(-1)
        delta = targets - q_taken
        per_sequence = (0.5 * delta.square() * mask).sum(0) / steps
        head_loss = (weights * per_sequence).mean()
        q_loss = q_loss + head_loss
        td_abs = td_abs + delta.detach().abs()
        metrics[f"{head}_loss"] = head_loss.detach()
        metrics[f"{head}_q_mean"] = (q_taken.detach() * mask).sum() / mask.sum().clamp(min=1)
    priorities = sequence_priorities(td_abs, mask, config.eta)

    embedding_loss, rnd_loss = novelty_losses(online, batch)
    acted = batch["acted"].to(beta.dtype)
    count = acted.sum().clamp(min=1.0)
    for key in ("intrinsic_reward", "episodic_reward", "multiplier"):
        metrics[f"{key}_mean"] = (batch[key] * acted).sum() / count
    metrics["td_abs_mean"] = (td_abs * mask).sum() / mask.sum().clamp(min=1)
    metrics["priority_mean"] = priorities.mean()
    return Losses(q_loss, embedding_loss, rnd_loss, priorities, metrics)


def novelty_losses(
    net: Agent57Net, batch: Mapping[str, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inverse-dynamics cross-entropy over the steps whose successor is in the same episode
    (`acted` and not `end`), and the RND predictor's error over the steps acted from."""
    obs = batch["obs"]
    length, width = batch["first"].shape  # L + 1 entries
    flat = map_tree(lambda x: x.flatten(0, 1), obs)
    features = net.embedding(flat).view(length, width, -1)
    pairs = batch["acted"] & ~batch["end"]
    logits = net.action_logits(features[:-1][pairs], features[1:][pairs])
    if logits.shape[0]:
        embedding_loss = nn.functional.cross_entropy(logits, batch["action"][pairs].long())
    else:
        embedding_loss = features.sum() * 0.0
    errors = net.rnd_error(flat).view(length, width)[:-1]
    acted = batch["acted"].to(errors.dtype)
    rnd_loss = (errors * acted).sum() / acted.sum().clamp(min=1.0)
    return embedding_loss, rnd_loss
