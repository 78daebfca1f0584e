"""Private shape and dtype checks shared by the ops modules.

Every op validates its inputs on entry so that a wrong shape fails with a message naming the
argument, instead of broadcasting silently or failing deep inside torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real

import torch
from torch import Tensor


def _shape(x: Tensor) -> tuple[int, ...]:
    return tuple(x.shape)


def check_floating(name: str, x: Tensor) -> None:
    """Raise ValueError unless `x` is a floating-point tensor."""
    if not isinstance(x, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")


def check_time_batch(name: str, x: Tensor) -> tuple[int, int]:
    """Check that `x` is a time-major `[T, B]` float tensor with T >= 1; return (T, B)."""
    check_floating(name, x)
    if x.ndim != 2:
        raise ValueError(f"{name} must be time-major [T, B], got shape {_shape(x)}")
    if x.shape[0] == 0:
        raise ValueError(f"{name} must have at least one time step, got shape {_shape(x)}")
    return x.shape[0], x.shape[1]


def check_same_shape(ref_name: str, ref: Tensor, others: Sequence[tuple[str, Tensor]]) -> None:
    """Raise ValueError unless every `(name, tensor)` in `others` has the shape of `ref`."""
    for name, x in others:
        if not isinstance(x, Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if x.shape != ref.shape:
            raise ValueError(
                f"{name} has shape {_shape(x)} but {ref_name} has shape {_shape(ref)}; "
                "they must match"
            )


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Whether `shape` broadcasts to exactly `target` (numpy rules, without growing `target`)."""
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(shape), reversed(target), strict=False))


def check_broadcastable_to(name: str, x: Tensor, target_name: str, target: Tensor) -> None:
    """Raise ValueError unless `x` broadcasts to exactly `target`'s shape."""
    if not broadcasts_to(x.shape, target.shape):
        raise ValueError(
            f"{name} with shape {_shape(x)} does not broadcast to the shape "
            f"{_shape(target)} of {target_name}"
        )


def end_mask(end_t: Tensor | None, ref_name: str, ref: Tensor) -> Tensor:
    """Return `end_t` as a 0/1 tensor of `ref`'s dtype (nonzero means ended); zeros if None."""
    if end_t is None:
        return torch.zeros_like(ref)
    check_same_shape(ref_name, ref, [("end_t", end_t)])
    return (end_t.detach() != 0).to(ref.dtype)


def lambda_per_step(lambda_: float | Tensor, ref_name: str, ref: Tensor) -> Tensor:
    """Return λ as a tensor broadcast to `ref`'s `[T, B]` shape and dtype.

    A float must lie in [0, 1]; a tensor must broadcast to `[T, B]` (scalar, `[T, 1]`, `[T, B]`).
    """
    if isinstance(lambda_, Tensor):
        check_broadcastable_to("lambda_", lambda_, ref_name, ref)
        return lambda_.to(ref.dtype).expand(ref.shape)
    if isinstance(lambda_, bool) or not isinstance(lambda_, Real):
        raise ValueError(f"lambda_ must be a float or a tensor, got {type(lambda_).__name__}")
    value = float(lambda_)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"lambda_ must lie in [0, 1], got {value}")
    return torch.full_like(ref, value)


def _finite_number(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not abs(value) < float("inf"):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_nonnegative(name: str, value: float) -> None:
    """Raise ValueError unless `value` is a finite number >= 0."""
    if not _finite_number(name, value) >= 0.0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")


def check_positive(name: str, value: float) -> None:
    """Raise ValueError unless `value` is a finite number > 0."""
    if not _finite_number(name, value) > 0.0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


def check_distribution_step(
    name_tm1: str,
    dist_tm1: Tensor,
    name_t: str,
    dist_t: Tensor,
    q_t_selector: Tensor,
    a_tm1: Tensor,
    batch: int,
) -> None:
    """The distributional double-Q ops' inputs: `dist_tm1` and `dist_t` float `[B, A, N]` alike,
    `q_t_selector` `[B, A]`, `a_tm1` integer `[B]`."""
    check_floating(name_tm1, dist_tm1)
    check_floating(name_t, dist_t)
    if dist_tm1.ndim != 3 or dist_tm1.shape[0] != batch:
        raise ValueError(f"{name_tm1} must be [B, A, N] with B = {batch}, got {_shape(dist_tm1)}")
    check_same_shape(name_tm1, dist_tm1, [(name_t, dist_t)])
    if _shape(q_t_selector) != _shape(dist_t)[:2]:
        raise ValueError(
            f"q_t_selector must be [B, A] = {list(dist_t.shape[:2])}, got "
            f"{list(q_t_selector.shape)}"
        )
    if _shape(a_tm1) != (batch,) or a_tm1.is_floating_point():
        raise ValueError(
            f"a_tm1 must be integer actions [B] = [{batch}], got {a_tm1.dtype} {list(a_tm1.shape)}"
        )


def check_transitions(r_t: Tensor, discount_t: Tensor) -> int:
    """A batch `[B]` of float rewards and discounts alike; returns B."""
    check_floating("r_t", r_t)
    if r_t.ndim != 1:
        raise ValueError(f"r_t must be a batch [B] of transitions, got shape {list(r_t.shape)}")
    check_same_shape("r_t", r_t, [("discount_t", discount_t)])
    return int(r_t.shape[0])
