"""Agent57's (beta_j, gamma_j) table against the papers' formulas, written out in their notation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from shoal.agents.agent57.mixtures import MixtureTable, mixture_table


def sigma(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def ngu_beta(i: int, N: int, beta: float) -> float:
    """NGU, App. "Distributed training"."""
    if i == 0:
        return 0.0
    if i == N - 1:
        return beta
    return beta * sigma(10 * (2 * i - (N - 2)) / (N - 2))


def ngu_gamma(i: int, N: int, gamma_max: float, gamma_min: float) -> float:
    """NGU, App. "Distributed training"."""
    return 1 - math.exp(
        ((N - 1 - i) * math.log(1 - gamma_max) + i * math.log(1 - gamma_min)) / (N - 1)
    )


def agent57_gamma(j: int, N: int, gamma_0: float, gamma_1: float, gamma_2: float) -> float:
    """Agent57's appendix, paper naming (gamma_0 = max, gamma_1 = mid, gamma_2 = min), with the
    two corrections documented in shoal.agents.agent57.mixtures: the sigmoid ladder over
    j = 1..6 read from its end (i = 7 - j in the printed `sigmoid(10 (2i - 6) / 6)`), and the
    tail's first coefficient N-1-j where the paper prints N-9."""
    if j == 0:
        return gamma_0
    if 1 <= j <= 6:
        i = 7 - j
        return gamma_1 + (gamma_0 - gamma_1) * sigma(10 * (2 * i - 6) / 6)
    if j == 7:
        return gamma_1
    return 1 - math.exp(
        ((N - 1 - j) * math.log(1 - gamma_1) + (j - 8) * math.log(1 - gamma_2)) / (N - 9)
    )


def test_agent57_table_matches_the_papers_formulas():
    table = mixture_table(32, beta_max=0.3, gamma_max=0.9999, gamma_mid=0.997, gamma_min=0.99)
    N = 32
    expected_betas = [ngu_beta(i, N, 0.3) for i in range(N)]
    expected_gammas = [agent57_gamma(j, N, 0.9999, 0.997, 0.99) for j in range(N)]
    np.testing.assert_allclose(table.betas, expected_betas, rtol=0, atol=1e-9)
    np.testing.assert_allclose(table.gammas, expected_gammas, rtol=0, atol=1e-9)
    assert len(table) == N
    assert table.betas.dtype == np.float64 and table.gammas.dtype == np.float64


def test_defaults_are_agent57s_and_spot_values():
    table = mixture_table()
    assert len(table) == 32
    assert table.betas[0] == 0.0
    assert table.betas[31] == pytest.approx(0.3, abs=1e-12)
    assert table.gammas[0] == pytest.approx(0.9999, abs=1e-12)
    assert table.gammas[7] == pytest.approx(0.997, abs=1e-12)
    assert table.gammas[8] == pytest.approx(0.997, abs=1e-12)  # the tail starts at gamma_mid
    assert table.gammas[31] == pytest.approx(0.99, abs=1e-12)
    # Middle of NGU's sigmoid ladder: i = (N-2)/2 = 15 gives sigma(0) = 1/2.
    assert table.betas[15] == pytest.approx(0.15, abs=1e-12)
    # Middle of the far-sighted ladder: j = 4 gives sigma(0) = 1/2.
    assert table.gammas[4] == pytest.approx((0.9999 + 0.997) / 2, abs=1e-12)


def test_far_sighted_block_holds_the_printed_discounts_in_falling_order():
    """The printed j = 1..6 branch, taken literally, rises; the table holds the same values
    reversed so the discounts never rise with j."""
    table = mixture_table()
    printed = [0.997 + (0.9999 - 0.997) * sigma(10 * (2 * j - 6) / 6) for j in range(1, 7)]
    assert printed[0] < printed[-1]  # the literal reading climbs back towards gamma_max
    np.testing.assert_allclose(table.gammas[1:7], printed[::-1], rtol=0, atol=1e-12)


def test_gammas_never_rise_and_betas_never_fall():
    table = mixture_table()
    assert np.all(np.diff(table.gammas) <= 0.0)
    assert np.all(np.diff(table.betas) >= 0.0)
    assert np.all((table.gammas >= 0.99) & (table.gammas <= 0.9999))
    assert np.all((table.betas >= 0.0) & (table.betas <= 0.3))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 10, 16])
def test_small_and_odd_sizes_keep_the_schedule_properties(n):
    table = mixture_table(n, beta_max=0.5, gamma_max=0.999, gamma_mid=0.995, gamma_min=0.9)
    assert len(table) == n
    assert table.gammas[0] == pytest.approx(0.999, abs=1e-12)
    assert table.gammas[-1] == pytest.approx(0.9, abs=1e-12)
    assert table.betas[0] == 0.0
    assert table.betas[-1] == pytest.approx(0.5, abs=1e-12)
    assert np.all(np.diff(table.gammas) <= 0.0)
    assert np.all(np.diff(table.betas) >= 0.0)
    np.testing.assert_allclose(table.betas, [ngu_beta(i, n, 0.5) for i in range(n)], atol=1e-12)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_below_nine_the_gammas_are_ngus_schedule(n):
    table = mixture_table(n, gamma_max=0.9999, gamma_mid=0.997, gamma_min=0.99)
    expected = [ngu_gamma(i, n, 0.9999, 0.99) for i in range(n)]
    np.testing.assert_allclose(table.gammas, expected, rtol=0, atol=1e-12)


def test_nine_mixtures_end_the_far_sighted_block_with_gamma_min():
    table = mixture_table(9)
    np.testing.assert_allclose(table.gammas[:8], mixture_table(32).gammas[:8], rtol=0, atol=1e-12)
    assert table.gammas[8] == pytest.approx(0.99, abs=1e-12)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_mixtures": 1},
        {"num_mixtures": 0},
        {"beta_max": -0.1},
        {"beta_max": math.nan},
        {"gamma_max": 1.0},
        {"gamma_min": -0.1},
        {"gamma_mid": 0.99999},  # above gamma_max
        {"gamma_mid": 0.98},  # below gamma_min
    ],
)
def test_bad_arguments_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        mixture_table(**kwargs)


def test_tables_are_read_only():
    table = mixture_table()
    with pytest.raises(ValueError):
        table.betas[0] = 1.0
    with pytest.raises(ValueError):
        table.gammas[0] = 0.5
    source = np.array([0.0, 0.3])
    own = MixtureTable(betas=source, gammas=np.array([0.99, 0.9]))
    source[1] = 7.0  # the table copied its input
    assert own.betas[1] == 0.3


def test_mismatched_table_arrays_raise():
    with pytest.raises(ValueError):
        MixtureTable(betas=np.zeros(3), gammas=np.zeros(4))


def test_select_numpy_and_torch_indices():
    table = mixture_table()
    index = np.array([[0, 31, 7], [8, 15, 4]])
    beta, gamma = table.select(index)
    assert beta.shape == gamma.shape == (2, 3)
    assert beta.dtype == torch.float32 and gamma.dtype == torch.float32
    np.testing.assert_allclose(beta.numpy(), table.betas[index], rtol=1e-6)
    np.testing.assert_allclose(gamma.numpy(), table.gammas[index], rtol=1e-6)

    out = table.select(torch.tensor(index), dtype=torch.float64)
    assert out.beta.dtype == torch.float64
    np.testing.assert_array_equal(out.beta.numpy(), table.betas[index])
    np.testing.assert_array_equal(out.gamma.numpy(), table.gammas[index])

    scalar = table.select(3)
    assert scalar.gamma.shape == ()
    assert scalar.gamma.item() == pytest.approx(table.gammas[3], rel=1e-6)


def test_select_rejects_bad_indices():
    table = mixture_table(4)
    with pytest.raises(ValueError, match="out of range"):
        table.select(np.array([0, 4]))
    with pytest.raises(ValueError, match="out of range"):
        table.select(torch.tensor([-1]))
    with pytest.raises(TypeError):
        table.select(np.array([0.0, 1.0]))
    with pytest.raises(TypeError):
        table.select(torch.tensor([0.0]))
