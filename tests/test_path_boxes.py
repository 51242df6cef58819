"""Paths of trees fitted on gaps: the path a row takes (`Tree.apply_nodes`) and the box of a
cell given by its leaves (`counts.cells.cell_boxes`), checked against a cell-by-cell
reference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier

from treeleaks.counts import cells
from treeleaks.counts.cells import cell_boxes
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema


def gap_table(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Three measurements, two with gaps, a noisy label that reads the gaps too."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"bill": rng.normal(44, 5, n).round(1),
                          "flipper": rng.normal(200, 14, n).round(0),
                          "mass": rng.normal(4200, 800, n).round(-1)})
    for column in ("bill", "mass"):
        frame.loc[rng.random(n) < 0.2, column] = np.nan
    label = ((frame["bill"].fillna(30) < 43) ^ frame["mass"].isna()
             ^ (rng.random(n) < 0.1)).astype(int)
    return frame, label.to_numpy()


@pytest.fixture(scope="module")
def gap_forest() -> tuple[ReleasedModel, np.ndarray]:
    frame, label = gap_table(120, seed=2)
    model = from_sklearn(RandomForestClassifier(n_estimators=8, bootstrap=False,
                                                random_state=0).fit(frame, label))
    assert model.aliased
    return model, model.inputs.encode(frame)[list(model.feature_names)].to_numpy(float)


def reference_cell_box(model: ReleasedModel, leaves: np.ndarray,
                       schema: FeatureSchema | None) -> tuple[np.ndarray, np.ndarray]:
    """One cell's box the plain way: every combination of its leaves' paths, tree by tree,
    empty or ruled-out boxes dropped, the first `MAX_PATH_BOXES` kept, the first one left
    returned (the first box of the step that left none, when one does)."""
    m = model.n_features
    lower, upper = np.full((1, m), -np.inf), np.full((1, m), np.inf)
    for t, tree in enumerate(model.trees):
        path_lower, path_upper, leaf_of_path = tree.path_boxes(m)
        mine = np.flatnonzero(leaf_of_path == leaves[t])
        lower = np.maximum(lower[:, None], path_lower[mine][None]).reshape(-1, m)
        upper = np.minimum(upper[:, None], path_upper[mine][None]).reshape(-1, m)
        keep = (lower < upper).all(axis=1)
        if schema is not None:
            keep &= schema.feasible(lower, upper)
        if not keep.any():
            return lower[0], upper[0]
        lower = lower[keep][:cells.MAX_PATH_BOXES]
        upper = upper[keep][:cells.MAX_PATH_BOXES]
    return lower[0], upper[0]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), cap=st.sampled_from([1, 2, 512]),
       with_schema=st.booleans())
def test_cell_boxes_are_the_cell_by_cell_ones(gap_forest, seed, cap, with_schema) -> None:
    """The training rows' cells and random leaf combinations (mostly empty): the same
    boxes, bit for bit, with and without a schema, whatever the cap on boxes per cell."""
    model, X = gap_forest
    rng = np.random.default_rng(seed)
    drawn = np.column_stack([rng.integers(0, tree.n_leaves, 40) for tree in model.trees])
    leaves = np.vstack([model.apply(X), drawn])
    schema = FeatureSchema.for_model(model).bind(model) if with_schema else None
    original = cells.MAX_PATH_BOXES
    cells.MAX_PATH_BOXES = cap
    try:
        lower, upper = cell_boxes(model, leaves, schema)
        expected = [reference_cell_box(model, row, schema) for row in leaves]
    finally:
        cells.MAX_PATH_BOXES = original
    assert np.array_equal(lower, np.array([e[0] for e in expected]))
    assert np.array_equal(upper, np.array([e[1] for e in expected]))
    # a training row's cell holds a point (the row): its box is one of the cell's pieces,
    # not empty, though the row may lie in another piece (a smaller cap may drop them all)
    assert (lower[:len(X)] < upper[:len(X)]).all() or cap < 512
    assert not (lower[len(X):] < upper[len(X):]).all(axis=1).all()  # some drawn cell is empty


def test_no_cells_no_boxes(gap_forest) -> None:
    model, _ = gap_forest
    lower, upper = cell_boxes(model, np.zeros((0, model.n_trees), dtype=np.int64))
    assert lower.shape == upper.shape == (0, model.n_features)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_a_row_lies_in_the_box_of_the_path_it_takes(gap_forest, seed) -> None:
    """Rows with gaps anywhere: each ends at a leaf node of its leaf, inside that node's
    box; without gaps a tree's leaf node is its leaf's only path."""
    model, X = gap_forest
    rng = np.random.default_rng(seed)
    rows = X[rng.integers(0, len(X), 50)] + rng.normal(0, 2, (50, X.shape[1])) * (
        ~np.isin(np.arange(X.shape[1]), [model.feature_names.index(n) for n in
                                          model.feature_names if "missing" in n]))
    for tree in model.trees:
        node = tree.apply_nodes(rows)
        assert (tree.feature[node] < 0).all()
        assert (tree.leaf_of_node[node] == tree.apply(rows)).all()
        low, high = tree.node_boxes(model.n_features)
        assert ((low[node] < rows) & (rows <= high[node])).all()
