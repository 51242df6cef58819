"""Bounds from a booster's gradient sums (`counts.side_bounds`): they never cut off a
dataset that meets the counts and the sums (checked by brute force), they refuse sums no
dataset meets, on a fine XGBoost model they keep the true rows while ruling out most
variables, and the rows they prove are training rows."""

from __future__ import annotations

import itertools
import time
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from treeleaks import FeatureSchema, reconstruct
from treeleaks.counts.cells import enumerate_cells
from treeleaks.counts.gradient_rows import SideRows
from treeleaks.counts.side_bounds import with_side_bounds
from treeleaks.counts.system import CountSystem, InconsistentCountsError, build_system
from treeleaks.demos.demo_data import LABEL, demo_data

from conftest import binary_frame


def small_system(draw_values: list[int], ub: list[int], equation: list[int],
                 coefficients: np.ndarray, widths: np.ndarray) -> CountSystem:
    """One count equation (0/1 coefficients) and side rows centred on ``draw_values``'s
    sums, each ``± width`` wide: ``draw_values`` meets everything."""
    truth = np.asarray(draw_values)
    A = sp.csr_matrix(np.asarray([equation]))
    centre = coefficients @ truth
    side = SideRows(sp.csr_matrix(coefficients), centre - widths, centre + widths)
    n = truth.size
    return CountSystem(A, A @ truth, np.zeros(n, dtype=np.int64),
                       np.asarray(ub, dtype=np.int64), np.arange(n), np.zeros(n, dtype=int),
                       side)


def feasible_points(system: CountSystem) -> list[tuple[int, ...]]:
    side = system.side
    points = []
    for point in itertools.product(*(range(int(u) + 1) for u in system.ub)):
        x = np.asarray(point)
        sums = side.matrix @ x
        if ((system.A @ x == system.b).all() and (sums >= side.lower).all()
                and (sums <= side.upper).all()):
            points.append(point)
    return points


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_bounds_keep_every_dataset_that_meets_the_counts_and_sums(data) -> None:
    n = data.draw(st.integers(2, 4))
    ub = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    truth = [data.draw(st.integers(0, u)) for u in ub]
    equation = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    n_side = data.draw(st.integers(1, 3))
    coefficient = st.floats(-1.0, 1.0, allow_nan=False).map(lambda v: round(v, 3))
    coefficients = np.asarray(data.draw(st.lists(
        st.lists(coefficient, min_size=n, max_size=n), min_size=n_side, max_size=n_side)))
    widths = np.asarray(data.draw(st.lists(st.sampled_from([1e-4, 1e-2, 0.3, 1.0]),
                                           min_size=n_side, max_size=n_side)))
    system = small_system(truth, ub, equation, coefficients, widths)
    bounded = with_side_bounds(system, time.perf_counter() + 10)
    for point in feasible_points(system):
        assert (bounded.lb <= point).all() and (np.asarray(point) <= bounded.ub).all()
    assert (bounded.lb >= system.lb).all() and (bounded.ub <= system.ub).all()


def test_a_bound_that_binds_is_found() -> None:
    # 0.4·x0 + 0.1·x1 within 0.3 ± 0.05 and x0 + x1 == 3: one x0 row already adds 0.4
    system = small_system([0, 3], [3, 3], [1, 1], np.asarray([[0.4, 0.1]]),
                          np.asarray([0.05]))
    bounded = with_side_bounds(system, time.perf_counter() + 10)
    assert bounded.lb.tolist() == [0, 3] and bounded.ub.tolist() == [0, 3]


def test_sums_no_dataset_meets_are_refused() -> None:
    system = small_system([1, 2], [3, 3], [1, 1], np.asarray([[0.4, 0.1]]),
                          np.asarray([0.01]))
    system.side.lower[:] += 2.0  # beyond what three rows can add
    system.side.upper[:] += 2.0
    with pytest.raises(InconsistentCountsError, match="gradient sums"):
        with_side_bounds(system, time.perf_counter() + 10)


def test_a_fine_xgboost_model_keeps_its_true_rows_and_loses_most_variables() -> None:
    xgb = pytest.importorskip("xgboost")
    from treeleaks.frontends.xgboost import read_xgboost

    X, y = demo_data()
    X, y = X.iloc[:80].reset_index(drop=True), np.unique(y[:80], return_inverse=True)[1]
    fitted = xgb.XGBClassifier(n_estimators=20, min_child_weight=0, random_state=0).fit(
        X.to_numpy(dtype=float), y)
    model = read_xgboost(fitted, list(X.columns), label_name=LABEL)
    cells = enumerate_cells(model, FeatureSchema.from_frame(X).bind(model))
    system = build_system(model, cells, gradients=True)
    bounded = with_side_bounds(system, time.perf_counter() + 30)
    # the true dataset as variables: each row's cell (by its leaves) and class
    cell_of = {tuple(leaves): k for k, leaves in enumerate(cells.leaf)}
    var_of = {(c, k): j for j, (c, k) in enumerate(zip(system.cell, system.cls))}
    truth = np.zeros(system.n_vars, dtype=np.int64)
    for leaves, label in zip(model.apply(X.to_numpy(dtype=float)), y):
        truth[var_of[cell_of[tuple(leaves)], label]] += 1
    assert ((bounded.lb <= truth) & (truth <= bounded.ub)).all()
    assert (bounded.ub > 0).sum() < 0.2 * (system.ub > 0).sum()


@pytest.mark.parametrize("seed", [0, 1])
def test_the_sums_prove_rows_that_really_were_trained_on(seed: int) -> None:
    # Before the sums bounded the proofs, tree 0's counts alone proved none of these rows.
    xgb = pytest.importorskip("xgboost")
    from treeleaks.frontends.xgboost import read_xgboost

    X, y = binary_frame(60, 8, seed=seed)
    fitted = xgb.XGBClassifier(n_estimators=20, min_child_weight=0, random_state=0).fit(
        X.to_numpy(dtype=float), y)
    model = read_xgboost(fitted, list(X.columns), label_name="y")
    rec = reconstruct(model, FeatureSchema.from_frame(X), time_limit=30)
    assert rec.verified and rec.proven_rows >= 10
    assert "leaf values imply" in rec.proof
    truth = Counter((*tuple(row), label) for row, label in zip(X.to_numpy().tolist(),
                                                                 y.tolist()))
    proven = Counter(tuple(int(v) for v in row) for row in rec.rows[rec.proven].to_numpy())
    assert all(truth[row] >= n for row, n in proven.items())
