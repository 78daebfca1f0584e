"""R2D3's hyperparameters (Paine et al. 2019, section 3 and appendix): R2D2's, a dataset of
demonstrations and the demo ratio.

The defaults are R2D2's small settings (`shoal.agents.value.recurrent_config`) with the paper's
demo ratio, 1/256; `presets/r2d3.yaml` holds tuned settings per env.
"""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.checks import require_unit_interval
from shoal.agents.value.recurrent_config import R2D2Config
from shoal.config import param


@dataclass(frozen=True, kw_only=True)
class R2D3Config(R2D2Config):
    """R2D2's settings, the demonstrations (`dataset`) and how often a batch element is one."""

    dataset: str | None = param(
        None,
        "Minari dataset of demonstrations: its id (in $MINARI_DATASETS_PATH or "
        "~/.minari/datasets) or its folder; `shoal train r2d3 --dataset ...` sets it.",
    )
    demo_ratio: float = param(
        1 / 256,
        "Probability that a batch element comes from the demo replay (paper's rho: 1/256).",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require_unit_interval(self, ("demo_ratio",))
        if self.dataset is not None and not str(self.dataset).strip():
            raise ValueError(
                "dataset is empty; pass --dataset with a Minari dataset's id or folder."
            )
