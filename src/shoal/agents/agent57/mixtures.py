"""The family of (beta_j, gamma_j) mixtures Agent57 trains and its meta-controller picks from.

Mixture `j` learns `Q(x, a, j) = Q_e(x, a, j) + beta_j Q_i(x, a, j)` with discount `gamma_j`
(Badia et al. 2020, "Agent57: Outperforming the Atari Human Benchmark", sec. 3). Index 0 is the
exploitative mixture (`beta_0 = 0`, the highest discount); higher indices weigh the intrinsic
reward more and look less far ahead.

Sources of the two schedules:

- betas: Never Give Up (Badia et al. 2020, "Never Give Up: Learning Directed Exploration
  Strategies", App. "Distributed training"), unchanged in Agent57:
  `beta_0 = 0`, `beta_{N-1} = beta`, and `beta_i = beta * sigmoid(10 (2i - (N-2)) / (N-2))`
  otherwise. Valid for every `N >= 2`.
- gammas: Agent57's appendix, where the family {(beta_j, gamma_j)} is defined, with
  `gamma_0 = gamma_max = 0.9999`, `gamma_1 = gamma_mid = 0.997`, `gamma_2 = gamma_min = 0.99`
  in the paper's naming (its gamma_0..2 are constants, not table entries), as printed:

      gamma_j = gamma_0                                                  j = 0
              = gamma_1 + (gamma_0 - gamma_1) sigmoid(10 (2i - 6) / 6)   j in 1..6
              = gamma_1                                                  j = 7
              = 1 - exp(((N-9) log(1 - gamma_1) + (j-8) log(1 - gamma_2)) / (N-9))   otherwise

  Read literally this is not the schedule the paper describes, and two corrections are made:
  (1) the last branch as printed rises from 0.997 at j = 8 to 1 - 0.003 * 0.01 at j = N-1 and
  never reaches `gamma_2`; the numerator is taken to be `(N-1-j) log(1 - gamma_1) +
  (j-8) log(1 - gamma_2)`, NGU's log-linear interpolation of `1 - gamma` from `gamma_1` at
  j = 8 down to `gamma_2` at j = N-1 (so gamma_8 = gamma_7 = gamma_1). (2) the sigmoid branch,
  which prints `i` for `j`, increases with j, so it climbs from about gamma_1 at j = 1 to about
  gamma_0 at j = 6 and drops back to gamma_1 at j = 7. Block 0..7 is NGU's sigmoid ladder for 8
  mixtures between gamma_1 and gamma_0, whose ends the paper pins as gamma_0 at j = 0 and gamma_1
  at j = 7, so the ladder is read end to start: `sigmoid(10 (2(7-j) - 6) / 6)`. This keeps the
  printed set of discounts and makes them never rise with j, like the betas never fall.

For N < 9 the Agent57 layout (8 mixtures in [gamma_mid, gamma_max], then a tail down to
gamma_min) does not fit, so the gammas fall back to NGU's own schedule between the two ends,
`gamma_i = 1 - exp(((N-1-i) log(1 - gamma_max) + i log(1 - gamma_min)) / (N-1))`, and gamma_mid
is not used. For N = 9 the tail is the single mixture j = 8 = N-1, set to gamma_min.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

__all__ = ["Mixture", "MixtureTable", "mixture_table"]

# Size of Agent57's far-sighted block: j = 0..7 span [gamma_mid, gamma_max].
_HIGH_DISCOUNT_BLOCK = 8


class Mixture(NamedTuple):
    """Per-index intrinsic weights and discounts, each shaped like the index."""

    beta: Tensor
    gamma: Tensor


@dataclass(frozen=True, eq=False)
class MixtureTable:
    """The (beta_j, gamma_j) of every mixture j = 0..N-1, as read-only float64 arrays `[N]`."""

    betas: np.ndarray
    gammas: np.ndarray
    _tensors: dict[tuple[torch.dtype, torch.device], tuple[Tensor, Tensor]] = field(
        default_factory=dict, init=False, repr=False
    )

    def __post_init__(self) -> None:
        betas = np.array(self.betas, dtype=np.float64)
        gammas = np.array(self.gammas, dtype=np.float64)
        if betas.ndim != 1 or gammas.shape != betas.shape or betas.size < 1:
            raise ValueError(
                "MixtureTable needs betas and gammas as two 1-D arrays of the same length >= 1, "
                f"got shapes {betas.shape} and {gammas.shape}."
            )
        if not (np.all(np.isfinite(betas)) and np.all(np.isfinite(gammas))):
            raise ValueError("MixtureTable betas and gammas must be finite.")
        betas.flags.writeable = False
        gammas.flags.writeable = False
        object.__setattr__(self, "betas", betas)
        object.__setattr__(self, "gammas", gammas)

    def __len__(self) -> int:
        return int(self.betas.shape[0])

    def select(
        self,
        index: int | Sequence[int] | np.ndarray | Tensor,
        *,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> Mixture:
        """`(beta, gamma)` of each mixture index, e.g. `[T, B]` indices to `[T, B]` tensors.

        Args:
            index: integer mixture indices in `[0, N)`, any shape.
            dtype: floating dtype of the result.
            device: device of the result; by default the index tensor's device, else CPU.

        Returns:
            `Mixture(beta, gamma)`, two tensors shaped like `index`.
        """
        if isinstance(index, Tensor):
            if index.dtype.is_floating_point or index.dtype.is_complex or index.dtype == torch.bool:
                raise TypeError(f"mixture index must be an integer tensor, got {index.dtype}.")
            idx = index
        else:
            array = np.asarray(index)
            if not np.issubdtype(array.dtype, np.integer):
                raise TypeError(f"mixture index must hold integers, got dtype {array.dtype}.")
            idx = torch.as_tensor(array, dtype=torch.long)
        target = torch.device(device) if device is not None else idx.device
        idx = idx.to(device=target, dtype=torch.long)
        if idx.numel() > 0:
            low, high = int(idx.min()), int(idx.max())
            if low < 0 or high >= len(self):
                raise ValueError(
                    f"mixture index out of range: got values in [{low}, {high}], but the table "
                    f"has {len(self)} mixtures (valid indices 0..{len(self) - 1})."
                )
        betas, gammas = self._on(dtype, target)
        return Mixture(beta=betas[idx], gamma=gammas[idx])

    def _on(self, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor]:
        key = (dtype, device)
        if key not in self._tensors:
            # torch.tensor copies, so the read-only numpy arrays are never shared with torch.
            self._tensors[key] = (
                torch.tensor(self.betas, dtype=dtype, device=device),
                torch.tensor(self.gammas, dtype=dtype, device=device),
            )
        return self._tensors[key]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _ngu_betas(n: int, beta_max: float) -> list[float]:
    """NGU App. "Distributed training": 0, then a sigmoid ladder, then beta_max."""
    betas = [beta_max * _sigmoid(10.0 * (2 * i - (n - 2)) / (n - 2)) for i in range(1, n - 1)]
    return [0.0, *betas, beta_max]


def _log_interpolated(n: int, gamma_high: float, gamma_low: float) -> list[float]:
    """NGU's discounts: `1 - gamma` geometric from `1 - gamma_high` (i = 0) to `1 - gamma_low`."""
    a, b = math.log1p(-gamma_high), math.log1p(-gamma_low)
    inner = [-math.expm1(((n - 1 - i) * a + i * b) / (n - 1)) for i in range(1, n - 1)]
    return [gamma_high, *inner, gamma_low]


def _agent57_gammas(n: int, gamma_max: float, gamma_mid: float, gamma_min: float) -> list[float]:
    """Agent57's discounts for n >= 9, with the two corrections in the module docstring."""
    block = _HIGH_DISCOUNT_BLOCK
    high = [
        gamma_mid + (gamma_max - gamma_mid) * _sigmoid(10.0 * (2 * (block - 1 - j) - 6) / 6)
        for j in range(1, block - 1)
    ]
    a, b = math.log1p(-gamma_mid), math.log1p(-gamma_min)
    tail = [
        -math.expm1(((n - 1 - j) * a + (j - block) * b) / (n - 1 - block))
        for j in range(block, n - 1)
    ]
    return [gamma_max, *high, gamma_mid, *tail, gamma_min]


def mixture_table(
    num_mixtures: int = 32,
    beta_max: float = 0.3,
    gamma_max: float = 0.9999,
    gamma_mid: float = 0.997,
    gamma_min: float = 0.99,
) -> MixtureTable:
    """Agent57's (beta_j, gamma_j) family; schedules and their sources in the module docstring.

    Args:
        num_mixtures: N, the number of mixtures (Agent57: 32). At least 2; below 9 the gammas
            use NGU's schedule between gamma_max and gamma_min.
        beta_max: intrinsic-reward weight of the most exploratory mixture, `beta_{N-1}`.
        gamma_max: discount of mixture 0, the exploitative one.
        gamma_mid: discount of mixture 7, where Agent57's far-sighted block ends.
        gamma_min: discount of mixture N-1.

    Returns:
        The table, `betas` never falling and `gammas` never rising with the index.
    """
    if isinstance(num_mixtures, bool) or not isinstance(num_mixtures, int | np.integer):
        raise TypeError(f"num_mixtures must be an int, got {type(num_mixtures).__name__}.")
    if num_mixtures < 2:
        raise ValueError(
            f"num_mixtures must be at least 2 (one exploitative and one exploratory mixture), "
            f"got {num_mixtures}; Agent57 uses 32."
        )
    if not (math.isfinite(beta_max) and beta_max >= 0.0):
        raise ValueError(
            f"beta_max must be a finite number >= 0, got {beta_max}; Agent57 uses 0.3."
        )
    if not (0.0 <= gamma_min <= gamma_mid <= gamma_max < 1.0):
        raise ValueError(
            "discounts must satisfy 0 <= gamma_min <= gamma_mid <= gamma_max < 1, got "
            f"gamma_min={gamma_min}, gamma_mid={gamma_mid}, gamma_max={gamma_max}; Agent57 uses "
            "0.99, 0.997 and 0.9999."
        )
    n = int(num_mixtures)
    betas = _ngu_betas(n, float(beta_max))
    if n < _HIGH_DISCOUNT_BLOCK + 1:
        gammas = _log_interpolated(n, float(gamma_max), float(gamma_min))
    else:
        gammas = _agent57_gammas(n, float(gamma_max), float(gamma_mid), float(gamma_min))
    return MixtureTable(betas=np.asarray(betas), gammas=np.asarray(gammas))
