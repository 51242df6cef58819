"""Certainty bounds are sound: never above the true number of rows in any cell."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier

from treeleaks import FeatureSchema, from_sklearn
from treeleaks.counts.cells import enumerate_cells
from treeleaks.counts.certainty import lower_bounds
from treeleaks.counts.solve import solve
from treeleaks.counts.system import build_system, propagate

from conftest import binary_frame


def true_counts(cells, system, X: np.ndarray, y_index: np.ndarray) -> np.ndarray:
    """Rows of each (cell, class) variable in the true training set."""
    inside = (cells.lower[None] < X[:, None]) & (X[:, None] <= cells.upper[None])
    cell_of_row = inside.all(axis=2).argmax(axis=1)
    lookup = {(c, k): j for j, (c, k) in enumerate(zip(system.cell, system.cls))}
    counts = np.zeros(system.n_vars, dtype=np.int64)
    for c, k in zip(cell_of_row, y_index):
        counts[lookup[(c, k)]] += 1
    return counts


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_rows=st.integers(2, 40),
    n_features=st.integers(2, 6),
    n_trees=st.integers(1, 8),
    depth=st.sampled_from([1, 2, 3, None]),
    seed=st.integers(0, 10_000),
)
def test_lower_bounds_never_exceed_the_truth(n_rows, n_features, n_trees, depth, seed):
    X, y = binary_frame(n_rows, n_features, seed)
    forest = RandomForestClassifier(
        n_estimators=n_trees, max_depth=depth, bootstrap=False, random_state=seed
    ).fit(X, y)
    model = from_sklearn(forest)
    schema = FeatureSchema.from_frame(X).bind(model)
    cells = enumerate_cells(model, schema)
    system = propagate(build_system(model, cells))
    truth = true_counts(cells, system, X.to_numpy(float), model.class_index(y))
    solution = solve(system, time.perf_counter() + 60)
    certainty = lower_bounds(system, solution.counts, time.perf_counter() + 30)
    assert certainty.complete
    assert np.all(system.lb <= truth) and np.all(truth <= system.ub)
    assert np.all(certainty.lower <= truth)
    assert np.all(certainty.lower <= solution.counts)


def test_full_depth_forest_proves_every_row():
    X, y = binary_frame(60, 5, seed=11)
    X = X.drop_duplicates()
    y = y[X.index]
    forest = RandomForestClassifier(n_estimators=30, bootstrap=False, random_state=0).fit(X, y)
    model = from_sklearn(forest)
    schema = FeatureSchema.from_frame(X).bind(model)
    cells = enumerate_cells(model, schema)
    system = propagate(build_system(model, cells))
    certainty = lower_bounds(system, solve(system, time.perf_counter() + 60).counts,
                             time.perf_counter() + 30)
    assert certainty.lower.sum() == len(X)


def test_no_time_for_lps_keeps_the_propagated_bounds_and_says_so():
    X, y = binary_frame(200, 8, seed=12)
    forest = RandomForestClassifier(n_estimators=20, max_depth=2, bootstrap=False, random_state=0)
    model = from_sklearn(forest.fit(X, y))
    schema = FeatureSchema.from_frame(X).bind(model)
    cells = enumerate_cells(model, schema)
    system = propagate(build_system(model, cells))
    solution = solve(system, time.perf_counter() + 60).counts
    assert np.any(solution > system.lb), "the case needs open variables to bound"
    certainty = lower_bounds(system, solution, deadline=time.perf_counter())
    assert not certainty.complete and certainty.n_lps == 0
    np.testing.assert_array_equal(certainty.lower, system.lb)
