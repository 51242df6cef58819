"""A histogram booster's bin edges read back into its training values (frontends/bin_values)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble._hist_gradient_boosting.binning import _BinMapper

from treeleaks.frontends.bin_values import Reading, midpoints, read_edges


def _grid_values(draw: st.DrawFn, decimals: int) -> np.ndarray:
    """Distinct values on the grid of ``decimals`` places (as a CSV parses them), holding
    three neighbouring grid points, so that the edges leave one reading on the grid."""
    steps = draw(st.lists(st.integers(-10**6, 10**6), min_size=0, max_size=60))
    start = draw(st.integers(-10**6, 10**6))
    ints = np.unique(np.array([*steps, start, start + 1, start + 2], dtype=np.int64))
    return np.array([float(int(k)) / 10**decimals for k in ints])


@st.composite
def grid_columns(draw: st.DrawFn) -> np.ndarray:
    return _grid_values(draw, draw(st.integers(0, 4)))


@settings(max_examples=150, deadline=None)
@given(grid_columns())
def test_values_on_a_grid_come_back_exactly(values: np.ndarray) -> None:
    read = read_edges(midpoints(values))
    assert read.reading == Reading.PINNED
    assert read.values is not None and read.values.tolist() == values.tolist()
    assert read.low < values[0] < read.high


@settings(max_examples=60, deadline=None)
@given(grid_columns())
def test_midpoints_are_the_edges_scikit_learn_cuts(values: np.ndarray) -> None:
    rows = np.repeat(values, 2)[:, None]
    mapper = _BinMapper(n_bins=256).fit(rows)
    if len(values) <= 255:
        assert np.array_equal(mapper.bin_thresholds_[0], midpoints(values))
        assert read_edges(mapper.bin_thresholds_[0]).values.tolist() == values.tolist()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(300, 2000))
def test_quantile_edges_are_not_read_as_values(seed: int, n_rows: int) -> None:
    rng = np.random.default_rng(seed)
    column = rng.normal(size=(n_rows, 1)) * rng.uniform(0.1, 100)
    edges = _BinMapper(n_bins=256).fit(column).bin_thresholds_[0]
    assert read_edges(edges).reading == Reading.QUANTILES


def test_values_up_to_a_shift_when_the_gaps_exceed_the_precision() -> None:
    """Every gap 0.5 on a grid of 0.25: the edges 0.5, 1, 1.5 fit the values shifted by
    any of several numbers of one decimal, so the values are known up to that shift."""
    read = read_edges(midpoints(np.array([0.25, 0.75, 1.25, 1.75])))
    assert read.reading == Reading.SHIFTED
    assert np.allclose(np.diff(read.values), [0.6, 0.4, 0.6])  # alternate as any shift does


def test_two_values_are_known_up_to_a_shift() -> None:
    """A 0/1 flag: one edge at 0.5 bounds the smallest value from above only."""
    read = read_edges(np.array([0.5]))
    assert read.reading == Reading.SHIFTED and read.values.tolist() == [0.0, 1.0]


def test_one_value_gives_nothing() -> None:
    assert read_edges(np.zeros(0)).reading == Reading.SINGLE


def test_passenger_ages_in_months_come_back() -> None:
    """The issue's example: ages in twelfths of a year, then whole years."""
    ages = np.array([0.1667, 0.3333, 0.4167, 0.6667, 0.75, 0.8333, 0.9167, 1, 2, 3, 4, 5,
                     11.5, 14, 20, 22.5, 30, 80])
    read = read_edges(midpoints(ages))
    assert read.reading == Reading.PINNED and read.values.tolist() == ages.tolist()
    # the simpler rule (the smallest value with the fewest digits) takes 0.2 for 0.1667
    assert read_edges(midpoints(ages), choice="smallest").values[0] == 0.2
