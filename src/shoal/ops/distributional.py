"""Categorical (C51) distributional value learning: the projection of the n-step distributional
target onto a fixed support, and the double-Q cross-entropy loss of Rainbow.

Bellemare et al. 2017, "A Distributional Perspective on Reinforcement Learning" (C51,
arXiv:1707.06887), Algorithm 1: the return distribution of `(s, a)` is a categorical over the
evenly spaced atoms `z_i = V_min + i Δz`, `Δz = (V_max - V_min) / (N - 1)`. Its target
`r + γ z_j` (probabilities `p_j(s', a*)`) lies off the support; each `T̂z_j`, clipped to
`[V_min, V_max]`, gives its mass to the two neighbouring atoms in proportion to closeness:

    b_j = (T̂z_j - V_min) / Δz,  l = ⌊b_j⌋,  u = ⌈b_j⌉,
    m_l += p_j (u - b_j),       m_u += p_j (b_j - l).

Written as it stands, Algorithm 1 loses the mass of a `T̂z_j` that lands exactly on an atom
(`b_j` integer, `l = u`: both shares are 0). Here the projection is the equivalent triangular
kernel `m_i = Σ_j p_j clip(1 - |T̂z_j - z_i| / Δz, 0, 1)` (rlax's `categorical_l2_project`),
which gives such a `T̂z_j` all of `p_j` and splits every other one as Algorithm 1 does.

Hessel et al. 2018, "Rainbow: Combining Improvements in Deep Reinforcement Learning"
(arXiv:1710.02298), section 3: the n-step target `R^{(n)} + γ^n z` at the action the online
network prefers at `s_{t+n}` (double Q), evaluated by the target network; the loss is the
cross-entropy `-Σ_i m_i log p_i(s_t, a_t)`, and prioritised replay draws transitions by the KL
divergence `D_KL(m ‖ p(s_t, a_t))` (the cross-entropy less the target's entropy).

A transition's `discount_t` is `γ^m` for an m-step transition and 0 where the episode
terminated (a truncated one still bootstraps). Shapes: a batch `[B]` of transitions, `N` atoms,
`A` actions.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from shoal.ops._checks import check_distribution_step, check_floating, check_transitions
from shoal.ops.masking import masked_argmax

__all__ = ["CategoricalLoss", "categorical_double_q_learning", "categorical_projection"]


def _check_atoms(atoms: Tensor) -> None:
    check_floating("atoms", atoms)
    if atoms.ndim != 1 or atoms.shape[0] < 2:
        raise ValueError(
            f"atoms must be a 1-D support of at least 2 atoms, got {list(atoms.shape)}"
        )
    gaps = atoms[1:] - atoms[:-1]
    if not bool((gaps > 0).all()) or not torch.allclose(gaps, gaps[:1].expand_as(gaps), rtol=1e-3):
        raise ValueError(
            "atoms must be evenly spaced and increasing (V_min + i Δz, e.g. torch.linspace("
            f"v_min, v_max, num_atoms)); got gaps from {float(gaps.min())} to {float(gaps.max())}"
        )


def _check_batch(atoms: Tensor, r_t: Tensor, discount_t: Tensor) -> None:
    _check_atoms(atoms)
    check_transitions(r_t, discount_t)


def categorical_projection(atoms: Tensor, r_t: Tensor, discount_t: Tensor, p_t: Tensor) -> Tensor:
    """Project the distribution `r + discount · z` (probabilities `p_t`) onto the atoms `z`.

    Bellemare et al. 2017 (C51), Algorithm 1, with mass landing exactly on an atom kept there
    (see the module docstring); targets outside `[V_min, V_max]` are clipped to its ends.

    Args:
        atoms: the support `z`, `[N]`, evenly spaced and increasing.
        r_t: (n-step) rewards `[B]`.
        discount_t: `γ^m`, 0 where the episode terminated, `[B]`.
        p_t: probabilities of the bootstrap distribution over `z`, `[B, N]`.

    Returns:
        the projected probabilities `m`, `[B, N]`, each row summing to that of `p_t`.
    """
    _check_batch(atoms, r_t, discount_t)
    check_floating("p_t", p_t)
    if tuple(p_t.shape) != (r_t.shape[0], atoms.shape[0]):
        raise ValueError(
            f"p_t must be [B, N] = [{r_t.shape[0]}, {atoms.shape[0]}], got {list(p_t.shape)}"
        )
    v_min, v_max = atoms[0], atoms[-1]
    delta = (v_max - v_min) / (atoms.shape[0] - 1)
    target_z = r_t[:, None] + discount_t[:, None] * atoms[None, :]  # [B, N_j]
    target_z = torch.minimum(torch.maximum(target_z, v_min), v_max)
    # closeness[b, i, j] = clip(1 - |T̂z_j - z_i| / Δz, 0, 1): the share of p_j atom i gets.
    distance = (target_z[:, None, :] - atoms[None, :, None]).abs()
    closeness = (1.0 - distance / delta).clamp(0.0, 1.0)
    return (closeness * p_t[:, None, :]).sum(-1)


def action_rows(dist: Tensor, actions: Tensor) -> Tensor:
    """`dist[b, actions[b]]` for each b: `[B, A, N]` -> `[B, N]`."""
    index = actions.long()[:, None, None].expand(dist.shape[0], 1, dist.shape[2])
    return dist.gather(1, index).squeeze(1)


class CategoricalLoss(NamedTuple):
    cross_entropy: Tensor  # [B], -Σ_i m_i log p_i(s_t, a_t): the loss, differentiable
    kl: Tensor  # [B], D_KL(m ‖ p(s_t, a_t)) >= 0: Rainbow's priority, differentiable
    target: Tensor  # [B, N], the projected target m, without gradients


def categorical_double_q_learning(
    atoms: Tensor,
    logits_tm1: Tensor,
    a_tm1: Tensor,
    r_t: Tensor,
    discount_t: Tensor,
    logits_t: Tensor,
    q_t_selector: Tensor,
    legal_t: Tensor | None = None,
) -> CategoricalLoss:
    """Rainbow's categorical double-Q n-step loss of a batch of transitions.

    Hessel et al. 2018 (Rainbow), section 3, on Bellemare et al. 2017 (C51), Algorithm 1: the
    target is the target network's distribution at `a* = argmax_a q_t_selector(s', a)`,
    shifted by `r_t` and scaled by `discount_t`, projected onto `atoms`; no gradient reaches it.

    Args:
        atoms: the support `z`, `[N]`, evenly spaced and increasing.
        logits_tm1: the online network's logits at `s_t`, `[B, A, N]`.
        a_tm1: the actions taken, integer `[B]`.
        r_t: the (n-step) rewards `[B]`.
        discount_t: `γ^m`, 0 where the episode terminated, `[B]`.
        logits_t: the target network's logits at the bootstrap state, `[B, A, N]`.
        q_t_selector: Q-values choosing the bootstrap action, `[B, A]`: the online network's
            at the bootstrap state for double Q, the target network's own expectation without.
        legal_t: the bootstrap state's legal actions `[B, A]` bool, or None (all legal): `a*`
            is then the best legal action (`shoal.ops.masking`).

    Returns:
        `CategoricalLoss(cross_entropy [B], kl [B], target [B, N])`.
    """
    _check_batch(atoms, r_t, discount_t)
    batch, num_atoms = r_t.shape[0], atoms.shape[0]
    check_distribution_step(
        "logits_tm1", logits_tm1, "logits_t", logits_t, q_t_selector, a_tm1, batch
    )
    if logits_tm1.shape[2] != num_atoms:
        raise ValueError(
            f"logits_tm1 must be [B, A, N] with N = {num_atoms} atoms, got {list(logits_tm1.shape)}"
        )
    with torch.no_grad():
        best = q_t_selector.argmax(-1) if legal_t is None else masked_argmax(q_t_selector, legal_t)
        p_t = torch.softmax(action_rows(logits_t, best), -1)
        target = categorical_projection(atoms, r_t, discount_t, p_t)
    log_p_tm1 = torch.log_softmax(action_rows(logits_tm1, a_tm1), -1)
    cross_entropy = -(target * log_p_tm1).sum(-1)
    kl = cross_entropy + torch.xlogy(target, target).sum(-1)
    return CategoricalLoss(cross_entropy, kl, target)
