"""Exact reconstruction: real outcomes against the true training rows, and bad input."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from treeleaks import FeatureSchema, from_sklearn, reconstruct
from treeleaks.counts.cells import CellBudget
from treeleaks.runtime.errors import BudgetError, TreeleaksError
from treeleaks.runtime.vocabulary import SolverStatus

from conftest import binary_frame


def sorted_rows(frame: pd.DataFrame) -> np.ndarray:
    values = frame.to_numpy(dtype=float)
    return values[np.lexsort(values.T[::-1])]


def assert_reproduces_counts(model, rows: pd.DataFrame) -> None:
    X = rows[model.feature_names].to_numpy(float)
    for tree, produced in zip(model.trees, model.leaf_counts_of(X, rows[model.label_name])):
        np.testing.assert_array_equal(tree.counts, produced)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_rows=st.integers(1, 40),
    n_features=st.integers(1, 6),
    n_trees=st.integers(1, 6),
    depth=st.sampled_from([None, 1, 2, 3]),
    seed=st.integers(0, 10_000),
    solver=st.sampled_from(["highs", "cp-sat"]),
)
def test_reconstruction_reproduces_every_leaf_count(
    n_rows, n_features, n_trees, depth, seed, solver
):
    X, y = binary_frame(n_rows, n_features, seed)
    forest = RandomForestClassifier(
        n_estimators=n_trees, bootstrap=False, max_depth=depth, random_state=seed
    ).fit(X, y)
    model = from_sklearn(forest, label_name="y")
    result = reconstruct(model, FeatureSchema.from_frame(X), time_limit=20, solver=solver)
    assert result.status == "OPTIMAL"
    assert result.verified and result.certificate.n_counts_wrong == 0
    assert result.n_rows == n_rows
    assert_reproduces_counts(model, result.rows)
    # Rows proven to be training rows really are: never more copies than the truth holds.
    truth = pd.DataFrame(X).assign(y=y).value_counts()
    proven = result.rows[result.proven].value_counts()
    for row, count in proven.items():
        assert truth.get(row, 0) >= count


def test_one_hot_groups_are_respected():
    rng = np.random.default_rng(0)
    group = np.eye(4, dtype=int)[rng.integers(0, 4, 60)]
    X = pd.DataFrame(np.column_stack([group, rng.integers(0, 2, (60, 2))]),
                     columns=["a", "b", "c", "d", "e", "f"])
    y = rng.integers(0, 2, 60)
    forest = RandomForestClassifier(n_estimators=3, max_depth=2, bootstrap=False, random_state=1)
    model = from_sklearn(forest.fit(X, y))
    schema = FeatureSchema.from_frame(X, one_hot_groups=[["a", "b", "c", "d"]])
    result = reconstruct(model, schema)
    assert result.verified
    np.testing.assert_array_equal(result.rows[["a", "b", "c", "d"]].sum(axis=1), 1)


def test_single_decision_tree_is_the_one_tree_case():
    X, y = binary_frame(50, 5, seed=3)
    model = from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y), label_name="y")
    result = reconstruct(model, FeatureSchema.from_frame(X))
    assert result.verified and result.n_rows == 50


def test_a_single_extra_tree_is_read_as_a_tree_and_rebuilt() -> None:
    """scikit-learn's ExtraTreeClassifier / ExtraTreeRegressor: one random-split tree,
    stored as a decision tree; rebuilt, the rows sit in the true rows' leaves."""
    from sklearn.tree import ExtraTreeClassifier, ExtraTreeRegressor

    X, y = binary_frame(60, 6, seed=4)
    for estimator, target in ((ExtraTreeClassifier(random_state=0), y),
                              (ExtraTreeRegressor(random_state=0), X.sum(axis=1) * 1.5)):
        fitted = estimator.fit(X, target)
        model = from_sklearn(fitted, label_name="y", allow_regression=True)
        assert len(model.trees) == 1 and not model.bootstrap
        result = reconstruct(model, FeatureSchema.from_frame(X))
        assert result.verified and result.n_rows == 60
        rebuilt = result.rows[list(X.columns)].to_numpy(dtype=float)
        assert sorted(fitted.apply(rebuilt)) == sorted(fitted.apply(X.to_numpy(dtype=float)))


def test_numerical_and_ordinal_features_come_back_as_intervals():
    rng = np.random.default_rng(5)
    X = pd.DataFrame({"age": rng.integers(18, 80, 40), "income": rng.normal(50, 10, 40),
                      "flag": rng.integers(0, 2, 40)})
    y = (X["age"] > 40).astype(int).to_numpy()
    forest = RandomForestClassifier(n_estimators=5, bootstrap=False, random_state=0).fit(X, y)
    model = from_sklearn(forest, label_name="y")
    schema = FeatureSchema.from_frame(X)
    result = reconstruct(model, schema)
    assert result.verified and result.n_rows == 40
    rows = result.rows
    assert (rows["age"] == rows["age"].round()).all()
    assert ((rows["age"] >= 18) & (rows["age"] <= 79)).all()
    inside = (result.lower["income"] <= rows["income"]) & (rows["income"] <= result.upper["income"])
    assert inside.all()
    assert_reproduces_counts(model, rows)


def test_compas_forest_of_100_trees_is_recovered_exactly(compas):
    frame, label, info = compas
    sample = frame.sample(100, random_state=0)
    y = label.loc[sample.index].to_numpy()
    forest = RandomForestClassifier(n_estimators=100, bootstrap=False, random_state=0)
    model = from_sklearn(forest.fit(sample, y), label_name="y")
    schema = FeatureSchema.from_frame(sample, info["one_hot_groups"], info["at_most_one_groups"])
    result = reconstruct(model, schema)
    assert result.status == "OPTIMAL" and result.verified
    truth = sample.assign(y=y)
    np.testing.assert_array_equal(sorted_rows(result.rows[truth.columns]), sorted_rows(truth))
    assert result.proven_rows == 100


def test_tampered_counts_give_infeasible_with_an_explanation():
    X, y = binary_frame(40, 4, seed=7)
    forest = RandomForestClassifier(n_estimators=3, bootstrap=False, random_state=0).fit(X, y)
    model = from_sklearn(forest)
    model.trees[1].counts[0, 0] += 1
    result = reconstruct(model, FeatureSchema.from_frame(X))
    assert result.status == "INFEASIBLE"
    assert "no dataset reproduces the released counts" in result.message
    assert result.n_rows == 0 and not result.verified


def test_no_time_at_all_gives_unknown_with_the_fix():
    X, y = binary_frame(300, 10, seed=8)
    forest = RandomForestClassifier(n_estimators=30, max_depth=2, bootstrap=False, random_state=0)
    model = from_sklearn(forest.fit(X, y))
    result = reconstruct(model, FeatureSchema.from_frame(X), time_limit=1e-9)
    assert result.status == "UNKNOWN" and not result.verified
    assert "time limit of 1e-09 s ran out" in result.message
    assert "raise it to 10 s or more" in result.message  # the limit to try


def test_solver_out_of_time_returns_the_proven_rows(monkeypatch):
    import treeleaks.attacks.reconstruction.exact as exact
    from treeleaks.counts.solve import Solution

    X, y = binary_frame(300, 10, seed=8)
    forest = RandomForestClassifier(n_estimators=30, max_depth=2, bootstrap=False, random_state=0)
    model = from_sklearn(forest.fit(X, y))
    monkeypatch.setattr(exact, "solve",
                        lambda *a, **k: Solution(None, SolverStatus.UNKNOWN, None, 1.0))
    result = reconstruct(model, FeatureSchema.from_frame(X), time_limit=5.0)
    assert result.status == "UNKNOWN" and not result.verified
    assert "Raise the time limit" in result.message
    assert result.n_rows == int(result.proven_pattern.sum()) < 300


def test_proofs_get_only_what_is_left_of_the_time_limit(monkeypatch):
    import treeleaks.attacks.reconstruction.exact as exact

    granted = []
    real = exact.lower_bounds

    def spy(system, solution, deadline):
        granted.append(deadline - time.perf_counter())
        return real(system, solution, deadline)

    monkeypatch.setattr(exact, "lower_bounds", spy)
    X, y = binary_frame(80, 8, seed=3)
    forest = RandomForestClassifier(n_estimators=10, max_depth=3, bootstrap=False, random_state=0)
    model = from_sklearn(forest.fit(X, y))
    result = reconstruct(model, FeatureSchema.from_frame(X), time_limit=5.0,
                         certainty_time_limit=30.0)
    assert result.verified and len(granted) == 1
    assert 0.0 <= granted[0] <= 5.0 - result.timings["cells"] - result.timings["solve"]


def test_counts_implying_too_many_rows_are_refused_with_the_limit_to_raise():
    X, y = binary_frame(50, 4, seed=2)
    model = from_sklearn(RandomForestClassifier(n_estimators=2, bootstrap=False,
                                                random_state=0).fit(X, y))
    with pytest.raises(BudgetError, match=r"imply 50 training rows.*limit of 49.*--max-rows"):
        reconstruct(model, max_rows=49)


def test_requested_enumeration_stops_at_its_memory_budget_and_says_what_to_try():
    X, y = binary_frame(100, 40, seed=4)
    forest = RandomForestClassifier(n_estimators=20, bootstrap=False, random_state=0)
    model = from_sklearn(forest.fit(X, y))
    result = reconstruct(model, FeatureSchema.from_frame(X), strategy="enumerate",
                         cell_budget=CellBudget(memory_mb=0.05))
    assert result.status == "UNKNOWN" and result.strategy == "enumerate"
    assert "too many cells to list" in result.message and "'generate'" in result.message


def test_without_schema_unsplit_features_are_unknown():
    X, y = binary_frame(30, 4, seed=10)
    X["constant"] = 1
    model = from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y), label_name="y")
    result = reconstruct(model)
    assert result.verified
    assert result.rows["constant"].isna().all() and result.free["constant"].all()


@pytest.mark.parametrize(
    "option, value",
    [("time_limit", float("nan")), ("time_limit", -1), ("certainty_time_limit", float("inf")),
     ("seed", 2**31), ("seed", -1), ("threads", 0), ("threads", 1.5), ("max_rows", 0)],
)
def test_options_a_run_cannot_honour_are_named(option, value):
    X, y = binary_frame(30, 4, seed=1)
    model = from_sklearn(RandomForestClassifier(n_estimators=2, bootstrap=False).fit(X, y))
    with pytest.raises(TreeleaksError, match=f"{option} must be"):
        reconstruct(model, **{option: value})
