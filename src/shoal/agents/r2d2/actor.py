"""R2D2's actor side: `R2D2Policy`, in the value family (`shoal.agents.value.recurrent_policy`)
since R2D3 acts the same way."""

from shoal.agents.value.recurrent_policy import R2D2Policy

__all__ = ["R2D2Policy"]
