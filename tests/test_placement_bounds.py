"""Bounds every dataset shares on a bootstrap forest's placements: they never exclude the
training rows' own placements, they fix only what is forced, and a subset of rows is
called unique only when it is."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier

from treeleaks import FeatureSchema, from_sklearn
from treeleaks.attacks.reconstruction.bootstrap import placements
from treeleaks.attacks.reconstruction.placement_bounds import (
    _unique_subset,
    probe_subsystems,
    propagate_placements,
)

from conftest import binary_frame


def true_placements(problem, X: np.ndarray, label_index: np.ndarray) -> np.ndarray:
    """The placement of each training row: the cell holding it, with its own class."""
    cells = problem.cells
    found = []
    for k, x in enumerate(X):
        cell = np.flatnonzero(((cells.lower < x) & (x <= cells.upper)).all(axis=1))
        assert cell.size == 1
        j = np.flatnonzero((problem.row == k) & (problem.cell == cell[0])
                           & (problem.cls == label_index[k]))
        assert j.size == 1
        found.append(int(j[0]))
    return np.array(found)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    n_rows=st.integers(10, 60),
    n_features=st.integers(2, 6),
    n_trees=st.integers(2, 12),
    depth=st.sampled_from([None, 2, 3]),
    seed=st.integers(0, 10_000),
)
def test_the_training_rows_are_never_excluded_and_what_is_fixed_is_theirs(
        n_rows, n_features, n_trees, depth, seed):
    X, y = binary_frame(n_rows, n_features, seed)
    forest = RandomForestClassifier(n_estimators=n_trees, max_depth=depth, random_state=seed)
    model = from_sklearn(forest.fit(X, y))
    schema = FeatureSchema.from_frame(X).bind(model)
    problem = placements(model, schema, time.perf_counter() + 30)
    truth = true_placements(problem, X.to_numpy(dtype=float),
                            np.array([model.classes.index(label) for label in y]))
    y_true = np.zeros(problem.cell.size, dtype=np.int64)
    y_true[truth] = 1
    np.testing.assert_array_equal(problem.A @ y_true, problem.lo)  # the system is right

    propagated = propagate_placements(problem.A, problem.lo, problem.hi)
    assert not isinstance(propagated, int)
    probed = probe_subsystems(problem.A, problem.lo, problem.hi, propagated,
                              problem.cell * model.n_classes + problem.cls, problem.row,
                              time.perf_counter() + 20)
    assert not isinstance(probed, int)
    for first, last in (propagated, probed):
        # sound: the true dataset is within the bounds, so a fixed placement is the truth
        assert np.all(first <= y_true) and np.all(y_true <= last)
    # probing only tightens
    assert np.all(probed[0] >= propagated[0]) and np.all(probed[1] <= propagated[1])


def test_a_subset_is_unique_only_when_no_other_meets_the_counts():
    # columns are candidate rows, equations their weighted counts
    unique = sp.csr_matrix(np.array([[1, 2, 0], [1, 0, 1]]))
    soon = time.perf_counter() + 5.0
    np.testing.assert_array_equal(_unique_subset(unique, np.array([3.0, 1.0]), soon),
                                  [True, True, False])
    several = sp.csr_matrix(np.array([[1, 1, 1]]))  # any one of three rows
    assert _unique_subset(several, np.array([1.0]), soon) is None
    assert _unique_subset(several, np.array([4.0]), soon) == "infeasible"
    no_time = time.perf_counter()
    assert _unique_subset(unique, np.array([3.0, 1.0]), no_time) is None  # no time, no claim


def test_a_count_no_subset_meets_is_named():
    # two groups; the equations of group 0 ask for weight 3 from rows of weight 2
    A = sp.csr_matrix(np.array([[2, 2, 0], [1, 1, 0], [0, 0, 1]]))
    lo = hi = np.array([3, 1, 1])
    bounds = (np.zeros(3, dtype=np.int64), np.ones(3, dtype=np.int64))
    assert probe_subsystems(A, lo, hi, bounds, np.array([0, 0, 1]), np.array([0, 1, 2]),
                            time.perf_counter() + 10) == 0
