"""R2D2's loss over replayed sequences, in the value family (`shoal.agents.value.sequence_loss`)
since R2D3 learns with it too."""

from shoal.agents.value.loss import sequence_priorities
from shoal.agents.value.sequence_loss import (
    SequenceTD,
    initial_priorities,
    r2d2_loss,
    sequence_td_errors,
    time_major,
)

__all__ = [
    "SequenceTD",
    "initial_priorities",
    "r2d2_loss",
    "sequence_priorities",
    "sequence_td_errors",
    "time_major",
]
