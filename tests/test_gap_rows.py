"""Forests fitted on tables with gaps, rebuilt row by row: a leaf reached by several paths
(`Tree.aliased`) counts the rows on any of them, and the row searches move rows between
paths (counts/paths.py, counts/threshold_grid.py)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier
from test_gaps import _routed

from treeleaks.attacks.reconstruct import reconstruct
from treeleaks.attacks.reconstruction.draw_search_stage import landed_rows
from treeleaks.counts.draw_search import search_drawn_rows
from treeleaks.counts.paths import leaf_hulls, leaves_of, tree_paths
from treeleaks.counts.row_search import row_points, search_rows
from treeleaks.counts.threshold_grid import ThresholdGrid
from treeleaks.counts.verify import verify_within_draws
from treeleaks.frontends.gaps import Layout, spell_out
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.ir.model import ReleasedModel, Tree
from treeleaks.ir.schema import FeatureSchema


def _gappy(n: int, seed: int, share: float = 0.15) -> tuple[pd.DataFrame, np.ndarray]:
    """Three measurements, two with gaps, and a label that reads the gaps too."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"bill": rng.normal(44, 5, n).round(1),
                          "flipper": rng.normal(200, 14, n).round(0),
                          "mass": rng.normal(4200, 800, n).round(-1)})
    for column in ("bill", "mass"):
        frame.loc[rng.random(n) < share, column] = np.nan
    label = ((frame["bill"].fillna(30) < 43) ^ (frame["mass"].isna())).astype(int)
    return frame, label.to_numpy()


@pytest.fixture(scope="module")
def gap_forest() -> tuple[ReleasedModel, pd.DataFrame, np.ndarray]:
    frame, label = _gappy(70, seed=1)
    fitted = RandomForestClassifier(n_estimators=12, random_state=0).fit(frame, label)
    model = from_sklearn(fitted)
    assert model.aliased and model.bootstrap
    return model, frame, label


def _held(model: ReleasedModel, rows: pd.DataFrame, positions: np.ndarray) -> list[np.ndarray]:
    """Per tree, the draws of each class the rows bring to each leaf, the rows read back in
    the table's columns and encoded again."""
    assert model.inputs is not None
    again = model.inputs.encode(model.inputs.decode(rows))[list(model.feature_names)]
    leaves = model.apply(again.to_numpy(dtype=float))
    cls = np.searchsorted(model.classes, rows[model.label_name].to_numpy())
    held = []
    for t, tree in enumerate(model.trees):
        count = np.zeros_like(tree.counts)
        np.add.at(count, (leaves[:, t], cls), tree.draws[positions])
        held.append(count)
    return held


def test_a_default_forest_on_gaps_is_rebuilt_row_by_row(gap_forest) -> None:
    model, frame, _ = gap_forest
    rec = reconstruct(model, time_limit=40)
    assert rec.formulation == "bootstrap-known" and rec.strategy == "per-row", rec.message
    assert rec.verified and rec.n_rows > 0, rec.message
    positions = (rec.bootstrap.positions if rec.bootstrap is not None
                 and rec.bootstrap.positions is not None else np.arange(rec.n_rows))
    held = _held(model, rec.rows, positions)
    complete = rec.n_rows == len(frame)
    for tree, count in zip(model.trees, held):
        assert (count == tree.counts).all() if complete else (count <= tree.counts).all()
    gaps = model.inputs.decode(rec.rows)["mass"].isna()
    assert (gaps == (rec.rows["mass=(missing)"] == 1)).all()


def test_the_draw_search_keeps_rows_on_a_path_of_their_leaf(gap_forest) -> None:
    model, _, _ = gap_forest
    found = search_drawn_rows(model, time.perf_counter() + 2, seed=0)
    assert len(found) > 0
    schema = FeatureSchema.infer(model).bind(model)
    frames, positions = landed_rows(model, schema, found)
    assert len(positions) > 0
    assert verify_within_draws(model, frames["rows"], positions).verified
    for tree, count in zip(model.trees, _held(model, frames["rows"], positions)):
        assert (count <= tree.counts).all()


def test_the_row_search_takes_a_forest_without_bootstrap_on_gaps() -> None:
    frame, label = _gappy(60, seed=2, share=0.25)
    fitted = RandomForestClassifier(n_estimators=10, bootstrap=False, random_state=0).fit(
        frame, label)
    model = from_sklearn(fitted)
    assert model.aliased and "bill=(missing)" in model.feature_names
    assert all((tree.counts.sum(axis=0) == np.bincount(label)).all() for tree in model.trees)
    truth = model.inputs.encode(frame)[list(model.feature_names)].to_numpy(dtype=float)
    true_leaves = model.apply(truth)
    start = (true_leaves[:30], label[:30])  # rows by leaf, as the cells give them
    paths, cls = search_rows(model, time.perf_counter() + 3, seed=0, start=start, pinned=10)
    assert len(cls) >= 30
    leaves = leaves_of(model, paths)
    assert (model.apply(row_points(model, paths)) == leaves).all()  # each row on its paths
    for t, tree in enumerate(model.trees):
        count = np.zeros_like(tree.counts)
        np.add.at(count, (leaves[:, t], cls), 1)
        assert (count <= tree.counts).all()


@settings(max_examples=150, deadline=None)
@given(_routed(), st.data())
def test_a_grid_point_routes_to_the_path_of_the_leaf_the_tree_sends_it_to(case, data) -> None:
    routed, columns, n_leaves, _ = case
    layout = Layout.of(columns)
    nodes, kept = spell_out(routed, layout, n_leaves)
    tree = Tree(*nodes, np.ones((kept.size, 1), dtype=np.int64))
    model = ReleasedModel([tree, tree], [0], list(layout.names))  # the second at an offset
    grid = ThresholdGrid.of(model)
    points = np.array(data.draw(st.lists(st.tuples(*(st.integers(0, int(b) - 1)
                                                     for b in grid.n_bins)),
                                         min_size=1, max_size=20)), dtype=np.int64)
    values = np.column_stack([grid.values[f][points[:, f]] for f in range(len(grid.n_bins))])
    for t in range(model.n_trees):
        path = grid.route(points, np.full(len(points), t))
        assert (grid.path_leaf[path] - grid.offset[t] == tree.apply(values)).all()
        assert ((grid.lo[path] <= points) & (points <= grid.hi[path])).all()
        assert (grid.path_offset[t] <= path).all()


@pytest.mark.parametrize("bootstrap", [True, False])
def test_a_regression_forest_on_gaps_gives_its_targets_back(bootstrap: bool) -> None:
    from sklearn.ensemble import RandomForestRegressor

    frame, _ = _gappy(50, seed=1, share=0.2)
    target = np.random.default_rng(5).normal(10, 3, len(frame)).round(2)
    fitted = RandomForestRegressor(n_estimators=8, bootstrap=bootstrap, random_state=0).fit(
        frame, target)
    model = from_sklearn(fitted, allow_regression=True)
    assert model.aliased
    rec = reconstruct(model, time_limit=30)
    assert rec.formulation == ("regression-bootstrap-known" if bootstrap
                               else "regression-exact")
    assert rec.verified and rec.n_rows == len(frame), rec.message
    assert sorted(rec.rows[model.label_name]) == pytest.approx(sorted(target))
    assert model.inputs is not None
    again = model.inputs.encode(model.inputs.decode(rec.rows))[list(model.feature_names)]
    leaves = model.apply(again.to_numpy(dtype=float))
    for t, tree in enumerate(model.trees):  # every leaf's rows, read back (training order)
        drawn = tree.draws if bootstrap else np.ones(len(frame), dtype=np.int64)
        assert (np.bincount(leaves[:, t], weights=drawn, minlength=tree.n_leaves)
                == tree.counts[:, 0]).all()


@settings(max_examples=150, deadline=None)
@given(_routed())
def test_each_path_box_routes_to_its_leaf_and_lies_in_the_leaf_hull(case) -> None:
    routed, columns, n_leaves, _ = case
    layout = Layout.of(columns)
    nodes, kept = spell_out(routed, layout, n_leaves)
    tree = Tree(*nodes, np.ones((kept.size, 1), dtype=np.int64))
    m = len(layout.names)
    paths = tree_paths(tree, m)
    assert sorted(paths.node.tolist()) == np.flatnonzero(tree.feature < 0).tolist()
    assert (np.diff(paths.leaf) >= 0).all()  # numbered leaf by leaf
    inside = np.where(np.isfinite(paths.upper), paths.upper,
                      np.where(np.isfinite(paths.lower), paths.lower + 1.0, 0.0))
    live = (paths.lower < paths.upper).all(axis=1)  # random splits may contradict each other
    assert (tree.apply(inside[live]) == paths.leaf[live]).all()
    low, high = leaf_hulls(tree, m)
    assert ((low[paths.leaf] <= paths.lower) & (paths.upper <= high[paths.leaf])).all()
    if not tree.aliased:  # one path a leaf: the leaf's own box, in leaf order
        box_low, box_high = tree.leaf_boxes(m)
        assert (paths.leaf == np.arange(tree.n_leaves)).all()
        assert np.array_equal(paths.lower, box_low) and np.array_equal(low, box_low)
        assert np.array_equal(paths.upper, box_high) and np.array_equal(high, box_high)
