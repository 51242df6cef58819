"""Predicate singling out: every predicate isolates one training row of its label, and
together they single out exactly the rows a count of 1 exposes."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from treeleaks import from_sklearn
from treeleaks.attacks.predicates import Condition
from treeleaks.attacks.reconstruct import reconstruct
from treeleaks.attacks.singling_out import (
    NOT_PROVEN_BOOTSTRAP,
    CountsUnavailableError,
    DataMismatchError,
    check_against_data,
    expected_tries,
    measured_leaf_counts,
    no_counts_ranking,
    node_counts,
    single_out,
    split_data,
    tries_without_counts,
)
from treeleaks.attacks.singling_out_cells import PROVEN_CELL
from treeleaks.ir.model import ModelFormatError, ReleasedModel
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.sklearn_compat import node_class_counts

from conftest import binary_frame


def small_data(n_rows: int, n_features: int, n_classes: int, seed: int) -> pd.DataFrame:
    """Small integer features (0..3) and a label in 0..n_classes-1, as a training CSV would be."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.integers(0, 4, (n_rows, n_features)),
                     columns=[f"c{j}" for j in range(n_features)])
    return X.assign(y=rng.integers(0, n_classes, n_rows))


def exposed_by_counts(estimator: DecisionTreeClassifier, X: pd.DataFrame | np.ndarray,
                      y: np.ndarray) -> set[int]:
    """Brute force: rows alone of their class in some node, read off scikit-learn's own
    decision paths."""
    paths = estimator.decision_path(X).toarray().astype(bool)
    exposed = set()
    for node in range(paths.shape[1]):
        for cls in np.unique(y):
            rows = np.flatnonzero(paths[:, node] & (y == cls))
            if rows.size == 1:
                exposed.add(int(rows[0]))
    return exposed


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(n_rows=st.integers(3, 60), n_features=st.integers(1, 5), n_classes=st.integers(2, 4),
       seed=st.integers(0, 10_000), depth=st.sampled_from([None, 2, 4]),
       min_leaf=st.integers(1, 3))
def test_predicates_single_out_exactly_the_rows_a_count_of_one_exposes(
    n_rows: int, n_features: int, n_classes: int, seed: int, depth: int | None, min_leaf: int
) -> None:
    data = small_data(n_rows, n_features, n_classes, seed)
    X, y = data.drop(columns="y"), data["y"].to_numpy()
    tree = DecisionTreeClassifier(max_depth=depth, min_samples_leaf=min_leaf,
                                  random_state=seed).fit(X, y)
    model = from_sklearn(tree)
    result = single_out(model)
    exposure = check_against_data(result, model, data, "y")
    assert all(p.proven and len(p.matches) == 1 for p in result.predicates)
    assert set(exposure.singled_out) == exposed_by_counts(tree, X, y)
    lengths = [len(p.conditions) for p in result.predicates]
    assert lengths == sorted(lengths)


@pytest.mark.parametrize("seed", range(4))
def test_internal_node_counts_are_the_sums_of_their_leaves(seed: int) -> None:
    data = small_data(80, 4, 3, seed)
    tree = DecisionTreeClassifier(random_state=seed).fit(data.drop(columns="y"), data["y"])
    counts = node_counts(from_sklearn(tree).trees[0])
    np.testing.assert_allclose(counts, node_class_counts(tree.tree_), atol=1e-9)


def test_predicate_reads_as_plain_statements_for_binary_columns() -> None:
    X, y = binary_frame(40, 4, seed=1)
    model = from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y), label_name="out")
    predicate = single_out(model).predicates[0]
    text = predicate.text("out", binary={"f0", "f1", "f2", "f3"})
    expected = [f"{c.feature} = {1 if c.op == '>' else 0}" for c in predicate.conditions]
    assert text == " AND ".join([*expected, f"out = {predicate.label}"])
    assert Condition("age", "<=", 37.5).text(binary=False) == "age <= 37.5"
    record = predicate.to_dict("out", set())
    assert set(record) >= {"conditions", "label", "node", "tree", "proven"}
    assert record["conditions"][0].keys() == {"feature", "op", "threshold"}


def test_a_predicate_is_as_short_as_the_path_allows() -> None:
    """Two cuts of one feature on a path leave its tightest bound on each side only."""
    X = pd.DataFrame({"a": [0, 1, 2, 3, 4, 5, 6, 7.0]})
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    model = from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y))
    for p in single_out(model).predicates:
        ops = [c.op for c in p.conditions]
        assert len(ops) == len(set(ops)) <= 2


# --- without counts ---------------------------------------------------------------------------


def test_expected_tries_matches_every_tie_order() -> None:
    """Brute force over every order within a depth: the mean position of the first valid."""
    depths = np.array([3, 3, 2, 2, 2, 2, 1])
    valid = np.array([False, False, False, True, True, False, True])
    positions = []
    for deep in itertools.permutations(range(2)):
        for mid in itertools.permutations(range(2, 6)):
            order = [*deep, *mid, 6]
            positions.append(1 + next(i for i, k in enumerate(order) if valid[k]))
    assert expected_tries(depths, valid) == pytest.approx(np.mean(positions))
    assert expected_tries(depths, valid) == pytest.approx(2 + 5 / 3)
    assert expected_tries(depths, np.zeros(7, dtype=bool)) is None


def test_no_counts_ranking_tries_deepest_leaves_first_with_every_label() -> None:
    data = small_data(60, 3, 3, seed=5)
    model = from_sklearn(DecisionTreeClassifier(random_state=0).fit(data.drop(columns="y"),
                                                                    data["y"]))
    ranking = no_counts_ranking(model)
    assert len(ranking) == model.trees[0].n_leaves * 3
    assert [d for _, _, d in ranking] == sorted((d for _, _, d in ranking), reverse=True)
    by_counts = tries_without_counts(model)
    measured = tries_without_counts(model, leaf_counts=measured_leaf_counts(model, data, "y"))
    assert by_counts == measured  # the training data and the counts agree
    assert by_counts.n_valid == int((model.trees[0].counts == 1).sum())


def stripped(model: ReleasedModel) -> ReleasedModel:
    data = model.to_dict()
    for tree in data["trees"]:
        tree["counts"] = [[0] * len(row) for row in tree["counts"]]
        tree.pop("n_samples", None)
    return ReleasedModel.from_dict(data)


def test_stripped_counts_leave_only_the_ranking_or_a_measurement() -> None:
    data = small_data(50, 3, 2, seed=2)
    model = from_sklearn(DecisionTreeClassifier(random_state=0).fit(data.drop(columns="y"),
                                                                    data["y"]))
    bare = stripped(model)
    assert not bare.counts_released and model.counts_released
    with pytest.raises(CountsUnavailableError, match="only the no-counts ranking is available"):
        single_out(bare)
    with pytest.raises(CountsUnavailableError):
        tries_without_counts(bare)
    measured = tries_without_counts(bare, leaf_counts=measured_leaf_counts(bare, data, "y"))
    assert measured == tries_without_counts(model)


# --- regression trees -------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, derandomize=True)
@given(n_rows=st.integers(2, 50), seed=st.integers(0, 10_000), min_leaf=st.integers(1, 3))
def test_regression_leaves_with_one_row_single_it_out(n_rows: int, seed: int,
                                                      min_leaf: int) -> None:
    rng = np.random.default_rng(seed)
    data = small_data(n_rows, 3, 2, seed).assign(y=rng.normal(size=n_rows))
    X, y = data.drop(columns="y"), data["y"].to_numpy()
    tree = DecisionTreeRegressor(min_samples_leaf=min_leaf, random_state=0).fit(X, y)
    model = from_sklearn(tree, allow_regression=True)
    result = single_out(model)
    exposure = check_against_data(result, model, data, "y")
    leaves = tree.apply(X)
    alone = {i for i, leaf in enumerate(leaves) if (leaves == leaf).sum() == 1}
    assert all(len(p.matches) == 1 and p.proven for p in result.predicates)
    assert set(exposure.singled_out) == alone
    assert all(p.label == y[p.matches[0]] for p in result.predicates)


def test_regression_model_round_trips_and_is_validated() -> None:
    X, _ = binary_frame(30, 3, seed=0)
    y = np.arange(30, dtype=float)
    model = from_sklearn(DecisionTreeRegressor(random_state=0).fit(X, y), allow_regression=True)
    again = ReleasedModel.from_json(model.to_json())
    assert again.is_regression and again.classes == []
    np.testing.assert_array_equal(again.trees[0].values, model.trees[0].values)
    record = json.loads(model.to_json())
    record["classes"] = [0, 1]
    with pytest.raises(ModelFormatError, match="regression model has no classes"):
        ReleasedModel.from_dict(record)
    record = json.loads(model.to_json())
    del record["trees"][0]["values"]
    with pytest.raises(ModelFormatError, match="needs its leaf 'values'"):
        ReleasedModel.from_dict(record)
    record = json.loads(model.to_json())
    record["trees"][0]["values"] = record["trees"][0]["values"][1:]
    with pytest.raises(ModelFormatError, match="one entry per leaf"):
        ReleasedModel.from_dict(record)


def test_reconstruction_refuses_regressors_it_does_not_read() -> None:
    X, _ = binary_frame(30, 3, seed=0)
    forest = RandomForestRegressor(n_estimators=3, bootstrap=False,
                                   criterion="absolute_error", random_state=0)
    model = from_sklearn(forest.fit(X, np.arange(30.0)), allow_regression=True)
    with pytest.raises(UnsupportedModelError, match=r"absolute_error.* not supported yet"):
        reconstruct(model)
    with pytest.raises(UnsupportedModelError, match="regressor"):
        from_sklearn(forest)


# --- forests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_no_bootstrap_forest_predicates_are_proven_and_each_isolates_a_row(seed: int) -> None:
    X, y = binary_frame(60, 8, seed=seed)
    forest = RandomForestClassifier(n_estimators=5, bootstrap=False, max_features=0.5,
                                    random_state=seed).fit(X, y)
    model = from_sklearn(forest)
    result = single_out(model)
    exposure = check_against_data(result, model, X.assign(label=y), "label")
    assert all(p.proven and len(p.matches) == 1 for p in result.predicates)
    tree_rows = set()
    for t, member in enumerate(forest.estimators_):
        tree_rows |= exposed_by_counts(member, X.to_numpy(), y)
        assert {p.node for p in result.predicates if p.tree == t} <= set(
            range(member.tree_.node_count))
    cells = [p for p in result.predicates if p.tree is None]
    assert all(p.how == PROVEN_CELL for p in cells)
    assert set(exposure.singled_out) - tree_rows <= {p.matches[0] for p in cells}


def test_forest_cells_single_out_rows_no_tree_does() -> None:
    """On these seeds the forest as a whole proves cells no single tree's count exposes."""
    found = 0
    for seed in range(6):
        X, y = binary_frame(60, 8, seed=seed)
        forest = RandomForestClassifier(n_estimators=5, bootstrap=False, max_features=0.5,
                                        random_state=seed).fit(X, y)
        model = from_sklearn(forest)
        for p in single_out(model).predicates:
            if p.tree is None:
                cell = p.selects(X) & (y == model.classes.index(p.label))
                leaves = [m.apply(X[cell].to_numpy(dtype=np.float32)) for m in forest.estimators_]
                assert cell.sum() == 1
                per_tree = [((m.apply(X.to_numpy(dtype=np.float32)) == leaf[0])
                             & (y == model.classes.index(p.label))).sum()
                            for m, leaf in zip(forest.estimators_, leaves)]
                assert min(per_tree) >= 2  # no tree alone singles this row out
                found += 1
    assert found > 0


def test_bootstrap_forest_predicates_are_not_called_proven() -> None:
    X, y = binary_frame(60, 6, seed=0)
    model = from_sklearn(RandomForestClassifier(n_estimators=4, random_state=0).fit(X, y))
    result = single_out(model)
    assert result.predicates and not any(p.proven for p in result.predicates)
    assert all(p.how == NOT_PROVEN_BOOTSTRAP for p in result.predicates)
    assert any("out-of-bag" in note for note in result.notes)


def test_data_that_do_not_match_the_model_are_refused() -> None:
    data = small_data(30, 3, 2, seed=0)
    model = from_sklearn(DecisionTreeClassifier().fit(data.drop(columns="y"), data["y"]))
    result = single_out(model)
    with pytest.raises(DataMismatchError, match="lack the model's columns c2"):
        check_against_data(result, model, data.drop(columns="c2"), "y")
    with pytest.raises(DataMismatchError, match="does not know: extra"):
        check_against_data(result, model, data.assign(extra=1), "y")
    with pytest.raises(DataMismatchError, match="no label column 'z'"):
        check_against_data(result, model, data, "z")
    with pytest.raises(DataMismatchError, match="label 7 is not one of the model's classes"):
        check_against_data(result, model, data.assign(y=7), "y")


def test_a_text_column_where_the_model_reads_numbers_is_named_with_the_fix() -> None:
    X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0], [3.0, 0.0]])
    model = from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, [0, 1, 0, 1]))
    frame = pd.DataFrame({model.feature_names[0]: ["a", "b", "c", "d"],
                          model.feature_names[1]: [1.0, 0.0, 1.0, 0.0], "y": [0, 1, 0, 1]})
    with pytest.raises(DataMismatchError, match=f"column '{model.feature_names[0]}' holds text "
                                                "where the model reads numbers"):
        split_data(model, frame, "y")
