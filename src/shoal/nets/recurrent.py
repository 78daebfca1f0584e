"""Recurrent core for agents with memory, over time-major sequences that cross episode starts."""

from __future__ import annotations

import itertools

import torch
from torch import nn

__all__ = ["LSTMCore", "LSTMState"]

LSTMState = tuple[torch.Tensor, torch.Tensor]
"""`(h, c)`, each `[B, H]`."""


class LSTMCore(nn.Module):
    """An LSTM (Hochreiter & Schmidhuber 1997) whose state is zeroed where episodes start.

    `forward(x [T, B, in], state, reset [T, B]) -> (out [T, B, H], new_state)`. Where
    `reset[t, b]` is True (the observation at `t` is the first of an episode), the state of
    entry `b` is zeroed before step `t` is processed, so nothing from the previous episode
    leaks into the new one; unrolls can therefore be cut anywhere, as in R2D2 and IMPALA.

    Weights are orthogonal and biases zero, as in CleanRL's recurrent PPO.
    """

    def __init__(self, in_features: int, hidden_size: int) -> None:
        super().__init__()
        self.cell = nn.LSTMCell(in_features, hidden_size)
        for name, param in self.cell.named_parameters():
            if name.startswith("weight"):
                nn.init.orthogonal_(param)
            else:
                nn.init.zeros_(param)
        self.in_features = in_features
        self.hidden_size = hidden_size
        self.out_features = hidden_size

    def initial_state(self, batch_size: int) -> LSTMState:
        """Zero `(h, c)`, each `[batch_size, H]`, on the device and dtype of the weights."""
        weight = self.cell.weight_hh
        zeros = torch.zeros(batch_size, self.hidden_size, dtype=weight.dtype, device=weight.device)
        return zeros, zeros.clone()

    def forward(
        self, x: torch.Tensor, state: LSTMState, reset: torch.Tensor
    ) -> tuple[torch.Tensor, LSTMState]:
        """Run `T` steps. `x [T, B, in]`, `state` `([B, H], [B, H])`, `reset [T, B]` bool.

        Returns the hidden outputs `[T, B, H]` and the state after the last step.
        """
        if x.dim() != 3 or x.shape[2] != self.in_features:
            raise ValueError(f"x must be [T, B, {self.in_features}], got {list(x.shape)}")
        h, c = state
        t_len, batch = x.shape[:2]
        if reset.shape != (t_len, batch) or reset.dtype != torch.bool:
            raise ValueError(
                f"reset must be a bool tensor [T, B] = [{t_len}, {batch}], "
                f"got {reset.dtype} {list(reset.shape)}"
            )
        if h.shape != (batch, self.hidden_size) or c.shape != h.shape:
            raise ValueError(
                f"state must be two [B, H] = [{batch}, {self.hidden_size}] tensors, "
                f"got {list(h.shape)} and {list(c.shape)}"
            )
        # The steps run in segments that start where some entry starts an episode: the state is
        # reset once at a segment's first step, then the segment is one fused LSTM call on CPU
        # (torch.lstm, several times faster than a step loop forward and backward; the same
        # weights and gate order as the cell), or a step loop elsewhere and for single steps.
        # `where`, not a 0/1 multiply, so a non-finite state cannot survive a reset as NaN.
        start = reset.unsqueeze(-1)
        any_start = reset.any(dim=1).tolist()
        bounds = [0, *(t for t in range(1, t_len) if any_start[t]), t_len]
        fused = x.device.type == "cpu"
        outputs = [h.new_zeros(0, batch, self.hidden_size)]
        for begin, end in itertools.pairwise(bounds):
            if begin == end:
                continue
            if any_start[begin]:
                h = torch.where(start[begin], 0.0, h)
                c = torch.where(start[begin], 0.0, c)
            if fused and end - begin > 1:
                out, h_n, c_n = torch.lstm(
                    x[begin:end],
                    (h.unsqueeze(0), c.unsqueeze(0)),
                    self._weights(),
                    True,  # has biases
                    1,  # layers
                    0.0,  # dropout
                    self.training,
                    False,  # bidirectional
                    False,  # batch first
                )
                h, c = h_n[0], c_n[0]
                outputs.append(out)
                continue
            for t in range(begin, end):
                h, c = self.cell(x[t], (h, c))
                outputs.append(h.unsqueeze(0))
        return torch.cat(outputs), (h, c)

    def _weights(self) -> list[torch.Tensor]:
        cell = self.cell
        return [cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh]
