"""Tests for shoal.nets.LSTMCore against a float64 loop written from the LSTM equations."""

from __future__ import annotations

import pytest
import torch

from shoal.nets import LSTMCore

T, B, IN, H = 7, 3, 5, 4


def make_core(seed: int = 0) -> LSTMCore:
    torch.manual_seed(seed)
    return LSTMCore(IN, H).double()


def inputs(seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, B, IN, generator=g, dtype=torch.float64)
    state = (
        torch.randn(B, H, generator=g, dtype=torch.float64),
        torch.randn(B, H, generator=g, dtype=torch.float64),
    )
    reset = torch.zeros(T, B, dtype=torch.bool)
    reset[0, 0] = True  # at the first step, so the initial state must be dropped there
    reset[2, 1] = reset[5, 1] = True  # twice in one column
    reset[4, 0] = True
    return x, state, reset  # column 2 never resets


def reference(core: LSTMCore, x, state, reset):
    """One step at a time (Hochreiter & Schmidhuber 1997; PyTorch's gate order i, f, g, o)."""
    w_ih, w_hh = core.cell.weight_ih, core.cell.weight_hh
    b = core.cell.bias_ih + core.cell.bias_hh
    h, c = (s.clone() for s in state)
    out = torch.zeros(T, B, H, dtype=x.dtype)
    for t in range(T):
        for j in range(B):
            if reset[t, j]:
                h[j], c[j] = 0.0, 0.0
            gates = w_ih @ x[t, j] + w_hh @ h[j] + b
            i, f, g, o = gates.split(H)
            c[j] = torch.sigmoid(f) * c[j] + torch.sigmoid(i) * torch.tanh(g)
            h[j] = torch.sigmoid(o) * torch.tanh(c[j])
            out[t, j] = h[j]
    return out, (h, c)


def test_matches_the_step_by_step_equations() -> None:
    core = make_core()
    # Non-zero biases so the reference's bias term is exercised too.
    with torch.no_grad():
        core.cell.bias_ih.normal_()
        core.cell.bias_hh.normal_()
    x, state, reset = inputs()
    with torch.no_grad():
        out, (h, c) = core(x, state, reset)
        ref_out, (ref_h, ref_c) = reference(core, x, state, reset)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(h, ref_h)
    torch.testing.assert_close(c, ref_c)


def test_a_reset_cuts_off_everything_before_it() -> None:
    core = make_core()
    x, state, reset = inputs()
    out, _ = core(x, state, reset)
    # Column 0 resets at t=4: other inputs and initial state before then must not matter there.
    x2 = x.clone()
    x2[:4] += 1.0
    state2 = (state[0] + 1.0, state[1] - 1.0)
    out2, _ = core(x2, state2, reset)
    torch.testing.assert_close(out2[4:, 0], out[4:, 0])
    # Column 2 never resets, so the same change reaches its later outputs.
    assert not torch.allclose(out2[4:, 2], out[4:, 2])


def test_state_carried_across_calls_equals_one_call() -> None:
    core = make_core()
    x, state, reset = inputs()
    whole, (h, c) = core(x, state, reset)
    first, mid = core(x[:3], state, reset[:3])
    second, (h2, c2) = core(x[3:], mid, reset[3:])
    torch.testing.assert_close(torch.cat([first, second]), whole)
    torch.testing.assert_close(h2, h)
    torch.testing.assert_close(c2, c)


def test_initial_state_and_gradients() -> None:
    core = make_core()
    h, c = core.initial_state(B)
    assert h.shape == c.shape == (B, H) and h.dtype == torch.float64
    assert not h.any() and not c.any()
    x, _, reset = inputs()
    x.requires_grad_(True)
    out, _ = core(x, (h, c), reset)
    assert out.shape == (T, B, H)
    out.sum().backward()
    for name, param in core.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name
    # Column 0 resets at t=4, so its outputs after that carry no gradient back past the reset.
    x.grad = None
    out2, _ = core(x, (h, c), reset)
    out2[4:, 0].sum().backward()
    assert not x.grad[:4, 0].any()
    assert x.grad[4:, 0].any()


def test_empty_sequence_returns_the_state() -> None:
    core = make_core()
    x, state, reset = inputs()
    out, (h, c) = core(x[:0], state, reset[:0])
    assert out.shape == (0, B, H)
    assert h is state[0] and c is state[1]


@pytest.mark.parametrize(
    ("x_shape", "reset_shape", "reset_dtype", "words"),
    [
        ((T, B), (T, B), torch.bool, "x must be"),
        ((T, B, IN + 1), (T, B), torch.bool, "x must be"),
        ((T, B, IN), (T, B + 1), torch.bool, "reset must be"),
        ((T, B, IN), (T, B), torch.float64, "reset must be"),
    ],
)
def test_bad_shapes_raise(x_shape, reset_shape, reset_dtype, words: str) -> None:
    core = make_core()
    with pytest.raises(ValueError, match=words):
        core(
            torch.zeros(x_shape, dtype=torch.float64),
            core.initial_state(B),
            torch.zeros(reset_shape, dtype=reset_dtype),
        )


def test_segments_between_episode_starts_match_a_step_loop_in_float32() -> None:
    # On CPU the steps between episode starts run as one fused LSTM call; it must give the
    # cell's step-by-step outputs, states and gradients.
    torch.manual_seed(0)
    core = LSTMCore(IN, H)
    x = torch.randn(20, B, IN, requires_grad=True)
    reset = torch.zeros(20, B, dtype=torch.bool)
    reset[0] = True
    reset[9, 1] = True  # segments of 9, 1 (a single step) and 10 steps
    reset[10, 2] = True
    out, (h, c) = core(x, core.initial_state(B), reset)
    out.square().sum().backward()
    fused_grad = x.grad.clone()
    x.grad = None
    h_ref, c_ref = core.initial_state(B)
    outs = []
    for t in range(20):
        keep = (~reset[t]).float()[:, None]
        h_ref, c_ref = core.cell(x[t], (h_ref * keep, c_ref * keep))
        outs.append(h_ref)
    ref = torch.stack(outs)
    ref.square().sum().backward()
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(h, h_ref, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(c, c_ref, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(fused_grad, x.grad, atol=1e-6, rtol=1e-5)
