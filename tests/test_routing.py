"""Routing a forest at once gives every tree's own leaf, edge values and gaps included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import ExtraTreesClassifier, HistGradientBoostingClassifier

from treeleaks import from_sklearn
from treeleaks.ir import routing


def _each_tree(model, X: np.ndarray) -> np.ndarray:
    return np.column_stack([tree.apply(X) for tree in model.trees])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(10, 120), chunk=st.sampled_from([7, 1 << 20]))
def test_the_forest_router_reaches_each_trees_own_leaf(seed: int, n: int, chunk: int) -> None:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(n, 4)).astype(float)
    y = rng.integers(0, 2, n)
    model = from_sklearn(ExtraTreesClassifier(n_estimators=6, random_state=seed).fit(X, y),
                         label_name="label")
    thresholds = np.concatenate([t.threshold[t.feature >= 0] for t in model.trees])
    on_edges = rng.choice(thresholds, size=(20, 4)) if thresholds.size else X[:1]
    probe = np.vstack([X, rng.normal(2, 2, size=(30, 4)), on_edges, np.full((1, 4), np.nan)])
    saved, routing.CHUNK = routing.CHUNK, chunk
    try:
        routed = model.apply(probe)
    finally:
        routing.CHUNK = saved
    assert (routed == _each_tree(model, probe)).all()


def test_a_booster_read_with_gaps_routes_as_its_trees() -> None:
    """HistGradientBoosting trained with gaps: its trees read over gap features."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int)
    model = from_sklearn(HistGradientBoostingClassifier(max_iter=5).fit(X, y),
                         label_name="label")
    data = rng.integers(0, 2, size=(50, model.n_features)).astype(float)
    assert (model.apply(data) == _each_tree(model, data)).all()
