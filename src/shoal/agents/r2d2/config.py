"""R2D2's hyperparameters: `R2D2Config`, in the value family (`shoal.agents.value.recurrent_config`)
since R2D3 extends it."""

from shoal.agents.value.recurrent_config import R2D2Config

__all__ = ["R2D2Config"]
