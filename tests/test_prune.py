"""The pruning defence: no reachable node shows a count in 1..k-1, nothing pruned stays in
the object, and the result is a working scikit-learn model."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier, RandomForestRegressor
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from treeleaks import from_sklearn
from treeleaks.attacks.reconstruct import reconstruct
from treeleaks.attacks.singling_out import single_out
from treeleaks.defences.prune import PruningError, exposing_nodes, prune
from treeleaks.io import load_estimator, save_model
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.sklearn_compat import node_class_counts

from conftest import binary_frame


def reachable(sk_tree) -> list[int]:
    stack, seen = [0], []
    while stack:
        node = stack.pop()
        seen.append(node)
        if sk_tree.children_left[node] >= 0:
            stack += [sk_tree.children_left[node], sk_tree.children_right[node]]
    return seen


def data(n_rows: int, n_features: int, n_classes: int, seed: int
         ) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.integers(0, 4, (n_rows, n_features)),
                     columns=[f"c{j}" for j in range(n_features)])
    return X, rng.integers(0, n_classes, n_rows)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(n_rows=st.integers(10, 80), n_features=st.integers(1, 5), seed=st.integers(0, 10_000),
       k=st.integers(1, 5))
def test_no_reachable_node_shows_a_count_below_k(n_rows: int, n_features: int, seed: int,
                                                  k: int) -> None:
    X, y = data(n_rows, n_features, 2, seed)
    y[:k], y[k:2 * k] = 0, 1  # at least k rows of each class, so the root can stay
    tree = DecisionTreeClassifier(random_state=seed).fit(X, y)
    nodes_before = tree.tree_.node_count
    pruned, summary = prune(tree, k)
    assert tree.tree_.node_count == nodes_before  # the input is left untouched
    sk = pruned.tree_
    counts = node_class_counts(sk)
    assert not ((counts > 0) & (counts < k - 1e-9)).any()
    assert sorted(reachable(sk)) == list(range(sk.node_count))  # nothing unreachable kept
    assert summary.nodes_after == sk.node_count and summary.nodes_before == nodes_before
    # The largest such subtree: a new leaf was cut because one of its children showed < k.
    exposing = exposing_nodes(tree.tree_, k, regression=False)
    for old in _new_leaves(tree.tree_, sk):
        kids = tree.tree_.children_left[old], tree.tree_.children_right[old]
        assert exposing[list(kids)].any()
    if k == 1:
        assert sk.node_count == nodes_before
    if k == 2:
        assert single_out(from_sklearn(pruned)).predicates == []


def _new_leaves(original, pruned) -> list[int]:
    """Original node numbers of the pruned tree's leaves that were internal before, matched
    by walking both trees together."""
    found, stack = [], [(0, 0)]
    while stack:
        old, new = stack.pop()
        if pruned.children_left[new] < 0:
            if original.children_left[old] >= 0:
                found.append(old)
            continue
        stack += [(original.children_left[old], pruned.children_left[new]),
                  (original.children_right[old], pruned.children_right[new])]
    return found


def test_pruned_tree_predicts_pickles_and_serialises_like_an_estimator(tmp_path: Path) -> None:
    X, y = binary_frame(300, 10, seed=0)
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    pruned, _ = prune(tree, 2)
    assert pruned.tree_.node_count < tree.tree_.node_count
    predictions = pruned.predict(X)
    assert set(predictions) <= set(tree.classes_)
    np.testing.assert_allclose(pruned.predict_proba(X).sum(axis=1), 1.0)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(pruned)).predict(X), predictions)
    path = save_model(pruned, tmp_path / "pruned.skops")
    loaded = load_estimator(path)
    np.testing.assert_array_equal(loaded.predict(X), predictions)
    state = loaded.tree_.__getstate__()
    assert len(state["nodes"]) == len(state["values"]) == pruned.tree_.node_count
    original = save_model(tree, tmp_path / "original.skops")
    assert skops.io.get_untrusted_types(file=path) == skops.io.get_untrusted_types(
        file=original)


def test_new_leaves_keep_the_frequencies_of_the_rows_below() -> None:
    X, y = binary_frame(200, 8, seed=1)
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    pruned, _ = prune(tree, 3)
    counts = node_class_counts(pruned.tree_)
    leaves = pruned.apply(X)
    for leaf in np.unique(leaves):
        truth = np.bincount(y[leaves == leaf], minlength=2)
        np.testing.assert_allclose(counts[leaf], truth)


def test_regressor_leaves_hold_at_least_k_rows() -> None:
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 4)), columns=list("abcd"))
    y = X.a * 3 + rng.normal(size=200)
    tree = DecisionTreeRegressor(random_state=0).fit(X, y)
    pruned, _ = prune(tree, 5)
    leaves = pruned.apply(X)
    assert np.bincount(leaves)[np.unique(leaves)].min() >= 5
    assert pruned.tree_.n_node_samples.min() >= 5
    model = from_sklearn(pruned, allow_regression=True)
    assert single_out(model).predicates == []
    assert pruned.score(X, y) > 0.5


@pytest.mark.parametrize("kind", [RandomForestClassifier, ExtraTreesClassifier])
def test_every_tree_of_a_forest_is_pruned(kind: type) -> None:
    X, y = binary_frame(150, 8, seed=2)
    forest = kind(n_estimators=4, random_state=0).fit(X, y)
    pruned, summary = prune(forest, 2)
    assert summary.nodes_after < summary.nodes_before
    for member in pruned.estimators_:
        counts = node_class_counts(member.tree_)
        assert not ((counts > 0) & (counts < 2)).any()
        assert not ((member.tree_.n_node_samples > 0) & (member.tree_.n_node_samples < 2)).any()
    assert single_out(from_sklearn(pruned)).predicates == []
    assert pruned.predict(X).shape == (150,)


def test_pruning_a_forest_does_not_stop_its_reconstruction() -> None:
    """What the docs warn: every tree is safe, the forest's counts still rebuild the rows."""
    X, y = binary_frame(40, 5, seed=3)
    forest = RandomForestClassifier(n_estimators=5, bootstrap=False, max_features=0.6,
                                    random_state=0).fit(X, y)
    pruned, _ = prune(forest, 2)
    recon = reconstruct(from_sklearn(pruned), time_limit=20)
    assert recon.verified and recon.n_rows == 40


def test_regression_forest_is_pruned() -> None:
    X, y = binary_frame(100, 6, seed=4)
    forest = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y.astype(float))
    pruned, _ = prune(forest, 3)
    assert all(m.tree_.n_node_samples.min() >= 3 for m in pruned.estimators_)


def test_what_pruning_cannot_do_is_refused_clearly() -> None:
    X, y = binary_frame(30, 4, seed=0)
    y[:] = 0
    y[0] = 1  # one row of class 1 in the whole training set: the root shows it
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    with pytest.raises(PruningError, match="root itself shows a count below 2"):
        prune(tree, 2)
    with pytest.raises(PruningError, match="at least 1"):
        prune(tree, 0)
    with pytest.raises(UnsupportedModelError, match="cannot prune a LogisticRegression"):
        prune(LogisticRegression().fit(X, y), 2)
    with pytest.raises(UnsupportedModelError, match="not fitted"):
        prune(DecisionTreeClassifier(), 2)
