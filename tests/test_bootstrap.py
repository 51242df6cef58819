"""Bootstrap forests with known draws (rows in training order) and unknown ones
(draws inferred): every weighted and distinct-row count reproduced, clear refusals."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier

from treeleaks import (
    FeatureSchema,
    ReleasedModel,
    UnsupportedModelError,
    from_sklearn,
    reconstruct,
)
from treeleaks.runtime.vocabulary import SolverStatus

from conftest import SHARED_DATA, binary_frame


def weighted_and_distinct_counts(model: ReleasedModel, rows: pd.DataFrame):
    """Each tree's (leaf, class) counts of the rows with the tree's draws, and each leaf's
    number of distinct rows drawn: computed here, apart from the certificate's code."""
    X = rows[model.feature_names].to_numpy(dtype=float)
    labels = rows[model.label_name].tolist()
    for tree in model.trees:
        weighted = np.zeros_like(tree.counts)
        distinct = np.zeros(tree.n_leaves, dtype=np.int64)
        for x, label, drawn in zip(X, labels, tree.draws):
            leaf = tree.apply(x[None, :])[0]
            weighted[leaf, model.classes.index(label)] += drawn
            distinct[leaf] += drawn > 0
        yield tree, weighted, distinct


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    n_rows=st.integers(8, 40),
    n_features=st.integers(2, 6),
    n_trees=st.integers(1, 8),
    depth=st.sampled_from([None, 2, 4]),
    seed=st.integers(0, 10_000),
)
def test_rows_reproduce_every_weighted_and_distinct_count(n_rows, n_features, n_trees, depth,
                                                          seed):
    X, y = binary_frame(n_rows, n_features, seed)
    forest = RandomForestClassifier(n_estimators=n_trees, max_depth=depth, random_state=seed)
    model = from_sklearn(forest.fit(X, y))
    result = reconstruct(model, FeatureSchema.from_frame(X), time_limit=20)
    assert result.formulation == "bootstrap-known"
    if result.status == "UNKNOWN":  # shallow trees over many rows may outgrow the cell budget
        assert "too many cells" in result.message or "too large" in result.message
        return
    assert result.status == "OPTIMAL" and result.verified and result.n_rows == n_rows
    for tree, weighted, distinct in weighted_and_distinct_counts(model, result.rows):
        np.testing.assert_array_equal(weighted, tree.counts)
        np.testing.assert_array_equal(distinct, tree.n_samples)
    # A proven row is the training row at its position, on every value it pins.
    proven = result.proven
    np.testing.assert_array_equal(result.rows[model.feature_names].to_numpy()[proven],
                                  X.to_numpy()[proven])
    np.testing.assert_array_equal(result.rows[model.label_name].to_numpy()[proven], y[proven])


def test_deep_forest_rows_come_back_in_training_order():
    X, y = binary_frame(60, 8, seed=11)
    model = from_sklearn(RandomForestClassifier(n_estimators=30, random_state=2).fit(X, y))
    result = reconstruct(model, FeatureSchema.from_frame(X), time_limit=30)
    assert result.verified
    values = result.rows[model.feature_names].to_numpy()
    # Row k is training row k wherever the trees that drew it pin its values.
    pinned = ~result.free.to_numpy()
    assert (values[pinned] == X.to_numpy()[pinned]).mean() > 0.95
    assert (result.rows[model.label_name].to_numpy() == y).all()


def test_a_smaller_bootstrap_sample_is_handled():
    X, y = binary_frame(50, 6, seed=3)
    forest = RandomForestClassifier(n_estimators=10, max_samples=0.6, random_state=1).fit(X, y)
    model = from_sklearn(forest)
    assert all(tree.draws.sum() == 30 for tree in model.trees)
    result = reconstruct(model, FeatureSchema.from_frame(X), time_limit=20)
    assert result.verified and result.n_rows == 50


def test_draws_that_contradict_the_counts_are_infeasible():
    X, y = binary_frame(40, 5, seed=4)
    data = from_sklearn(RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)).to_dict()
    draws = data["trees"][2]["multiplicities"]
    once, twice = draws.index(1), draws.index(2)
    draws[once], draws[twice] = 2, 1  # same draws and distinct rows, other rows weighted
    result = reconstruct(ReleasedModel.from_dict(data), time_limit=20)
    assert result.status == "INFEASIBLE" and not result.verified
    # propagation finds the count the tampered draws cannot meet, in the tampered tree
    assert "tree 2, leaf" in result.message and "multiplicities" in result.message


def test_a_forest_without_its_draws_falls_back_to_inferring_them_and_says_so():
    X, y = binary_frame(30, 4, seed=5)
    data = from_sklearn(RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)).to_dict()
    for tree in data["trees"]:
        del tree["multiplicities"]
    result = reconstruct(ReleasedModel.from_dict(data), time_limit=30)
    assert result.formulation == "bootstrap-unknown" and result.verified
    assert "does not expose its draws" in result.message


def _placements_never_solve(monkeypatch):
    """The placement solvers find nothing, as on forests of 5-10 trees over 21 columns."""
    import treeleaks.attacks.reconstruction.bootstrap as bootstrap

    monkeypatch.setattr(bootstrap, "_solve",
                        lambda *args, **kwargs: (None, SolverStatus.UNKNOWN, "highs"))


def test_draws_not_met_in_time_fall_back_to_inferred_draws_and_say_so(monkeypatch):
    _placements_never_solve(monkeypatch)
    X, y = binary_frame(40, 5, seed=8)
    model = from_sklearn(RandomForestClassifier(n_estimators=6, random_state=3).fit(X, y))
    result = reconstruct(model, FeatureSchema.from_frame(X), time_limit=20)
    assert result.status == "FEASIBLE" and result.formulation == "bootstrap-unknown"
    assert "released draws" in result.message and "inferred draws" in result.message
    assert result.verified and result.n_rows == 40
    # the rows reproduce every count with the draws the result carries, not the model's
    inferred = replace(model, trees=[replace(tree, draws=b) for tree, b in
                                     zip(model.trees, result.bootstrap.draws)])
    for tree, weighted, distinct in weighted_and_distinct_counts(inferred, result.rows):
        np.testing.assert_array_equal(weighted, tree.counts)
        np.testing.assert_array_equal(distinct, tree.n_samples)


def test_a_placement_problem_too_large_falls_back_and_says_why(monkeypatch):
    import treeleaks.attacks.reconstruction.bootstrap as bootstrap

    monkeypatch.setattr(bootstrap, "MAX_NONZEROS", 10)  # the covering problem keeps its own
    monkeypatch.setattr(bootstrap, "WITHOUT_CELLS_SHARE", 0.0)  # no time to place row by row
    X, y = binary_frame(40, 5, seed=9)
    model = from_sklearn(RandomForestClassifier(n_estimators=6, random_state=4).fit(X, y))
    result = reconstruct(model, FeatureSchema.from_frame(X), time_limit=20)
    assert result.status == "FEASIBLE" and result.formulation == "bootstrap-unknown"
    assert result.verified and result.n_rows == 40
    assert result.message.startswith("the placement problem is too large")
    assert "inferred draws instead" in result.message


def test_numerical_data_too_large_gets_no_one_hot_hint(monkeypatch):
    from sklearn.datasets import load_iris

    import treeleaks.attacks.reconstruction.bootstrap as bootstrap

    monkeypatch.setattr(bootstrap, "MAX_NONZEROS", 10)
    X, y = load_iris(return_X_y=True, as_frame=True)
    model = from_sklearn(RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y))
    result = reconstruct(model, time_limit=20)
    assert result.message.startswith("the placement problem is too large")
    assert "cells on average" in result.message and "one-hot" not in result.message


def test_no_fallback_when_the_trees_drew_fewer_rows_than_the_data_has(monkeypatch):
    _placements_never_solve(monkeypatch)
    X, y = binary_frame(40, 5, seed=8)
    forest = RandomForestClassifier(n_estimators=6, max_samples=0.7, random_state=3)
    result = reconstruct(from_sklearn(forest.fit(X, y)), FeatureSchema.from_frame(X),
                         time_limit=10)
    assert result.status == "UNKNOWN" and result.n_rows == 0
    assert "raise the time limit" in result.message


@pytest.mark.parametrize("name", ["compas", "adult", "default_credit"])
def test_shared_datasets_are_rebuilt_exactly_at_n100(name):
    meta = SHARED_DATA / "datasets.json"
    if not meta.exists():
        pytest.skip("shared datasets not available")
    info = json.loads(meta.read_text())[name]
    frame = pd.read_csv(SHARED_DATA / info["file"]).sample(100, random_state=0)
    frame = frame.reset_index(drop=True)
    label = frame.pop(info["label"])
    forest = RandomForestClassifier(n_estimators=100, random_state=0).fit(frame, label)
    model = from_sklearn(forest, label_name=info["label"])
    result = reconstruct(model, FeatureSchema.from_frame(frame), time_limit=60)
    assert result.status == "OPTIMAL" and result.verified and result.certainty_complete
    error = np.abs(result.rows[model.feature_names].to_numpy() - frame.to_numpy()).mean()
    assert error <= 0.005
    proven = result.proven
    assert proven.sum() >= 50  # most rows are provably training rows, at their position
    np.testing.assert_array_equal(result.rows[model.feature_names].to_numpy()[proven],
                                  frame.to_numpy()[proven])


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(n_rows=st.integers(8, 40), n_features=st.integers(2, 6), n_trees=st.integers(1, 15),
       depth=st.sampled_from([1, 2, 3, None]), seed=st.integers(0, 10**6))
def test_inferred_draws_reproduce_every_weighted_and_distinct_count(n_rows, n_features,
                                                                    n_trees, depth, seed):
    X, y = binary_frame(n_rows, n_features, seed)
    forest = RandomForestClassifier(n_estimators=n_trees, max_depth=depth,
                                    random_state=seed).fit(X, y)
    model = from_sklearn(forest, label_name="label")
    result = reconstruct(model, time_limit=30, ignore_draws=True)
    assert result.formulation == "bootstrap-unknown"
    assert result.status in ("OPTIMAL", "FEASIBLE"), result.message
    assert len(result.rows) == n_rows and len(result.bootstrap.draws) == n_trees
    drawn = replace(model, trees=[replace(tree, draws=b) for tree, b in
                                  zip(model.trees, result.bootstrap.draws)])
    for tree, weighted, distinct in weighted_and_distinct_counts(drawn, result.rows):
        np.testing.assert_array_equal(weighted, tree.counts)
        np.testing.assert_array_equal(distinct, tree.n_samples)
    assert result.verified
    # proofs hold whatever the draws: each proven row has a training row of its class in
    # its region of the trees (as many of them as rows proven there)
    truth = X.assign(label=y)
    region = {}
    for leaves, label in zip(map(tuple, model.apply(truth[model.feature_names].to_numpy(
            dtype=float))), truth["label"]):
        region[(leaves, label)] = region.get((leaves, label), 0) + 1
    proven = result.rows[result.proven_pattern]
    for leaves, label in zip(map(tuple, model.apply(proven[model.feature_names].to_numpy(
            dtype=float))), proven["label"]):
        assert region.get((leaves, label), 0) > 0
        region[(leaves, label)] -= 1


def test_a_forest_with_a_smaller_bootstrap_size_is_refused_without_its_draws():
    X, y = binary_frame(30, 4, seed=2)
    forest = RandomForestClassifier(n_estimators=3, max_samples=0.5, random_state=0).fit(X, y)
    with pytest.raises(UnsupportedModelError, match=r"max_samples=0\.5"):
        reconstruct(from_sklearn(forest), ignore_draws=True)


def test_too_many_cells_places_the_rows_one_by_one_under_auto(monkeypatch):
    import treeleaks.attacks.reconstruction.bootstrap as bootstrap

    monkeypatch.setattr(bootstrap, "MAX_NONZEROS", 10)  # the cells' problem is too large
    X, y = binary_frame(40, 5, seed=9)
    model = from_sklearn(RandomForestClassifier(n_estimators=6, random_state=4).fit(X, y))
    result = reconstruct(model, FeatureSchema.from_frame(X), time_limit=20)
    assert result.status == "OPTIMAL" and result.verified and result.n_rows == 40
    assert result.strategy == "per-row" and result.formulation == "bootstrap-known"
    assert result.message.startswith("the placement problem is too large")
    assert "placed one by one instead" in result.message
    # in training order: a proven row k carries training row k's label
    proven = result.proven_pattern
    assert (result.rows["label"].to_numpy()[proven] == y[proven]).all()
