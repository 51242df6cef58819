"""ONNX tree ensembles (issue 52, item 2): read through the one door as files without counts,
every tree routing rows as the model it was exported from, what the file gives away said,
and the attacks that need counts refused in words that say why."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_wine
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.io import load_model
from treeleaks.ir.model import ModelFormatError
from treeleaks.runtime.errors import CountsRemovedError

from conftest import one_line_error

onnx = pytest.importorskip("onnx")
skl2onnx = pytest.importorskip("skl2onnx")
runner = CliRunner()


def _export(estimator, X: np.ndarray, path: Path) -> Path:
    path.write_bytes(skl2onnx.to_onnx(estimator, X[:1].astype(np.float32))
                     .SerializeToString())
    return path


def _same_partition(ours: np.ndarray, theirs: np.ndarray) -> bool:
    """Whether two leaf assignments put the same rows together (leaf ids differ)."""
    pairs = set(zip(ours.tolist(), theirs.tolist(), strict=True))
    return len(pairs) == len(set(ours.tolist())) == len(set(theirs.tolist()))


def test_a_forest_routes_every_row_as_scikit_learn_does(tmp_path: Path) -> None:
    X, y = load_wine(return_X_y=True)
    forest = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)
    model = load_model(_export(forest, X, tmp_path / "forest.onnx"), counts_removed_ok=True)
    assert len(model.trees) == 5 and model.classes == [0, 1, 2]
    assert not model.counts_released  # the format keeps none
    leaves = model.apply(X.astype(np.float32).astype(np.float64))
    for t, tree in enumerate(forest.estimators_):
        assert _same_partition(leaves[:, t], tree.apply(X.astype(np.float32)))


def test_the_splits_read_alike_whichever_way_a_node_compares(tmp_path: Path) -> None:
    """Every BRANCH_LEQ rewritten as BRANCH_GT with its branches swapped routes alike."""
    X, y = load_wine(return_X_y=True)
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    path = _export(tree, X, tmp_path / "tree.onnx")
    graph = onnx.load(str(path))
    node = next(n for n in graph.graph.node if n.op_type == "TreeEnsembleClassifier")
    attrs = {a.name: a for a in node.attribute}
    modes = attrs["nodes_modes"].strings
    true_ids, false_ids = attrs["nodes_truenodeids"].ints, attrs["nodes_falsenodeids"].ints
    for i, mode in enumerate(list(modes)):
        if mode == b"BRANCH_LEQ":
            modes[i] = b"BRANCH_GT"
            true_ids[i], false_ids[i] = false_ids[i], true_ids[i]
    flipped = tmp_path / "flipped.onnx"
    flipped.write_bytes(graph.SerializeToString())
    rows = X.astype(np.float32).astype(np.float64)
    before = load_model(path, counts_removed_ok=True).apply(rows)[:, 0]
    after = load_model(flipped, counts_removed_ok=True).apply(rows)[:, 0]
    assert _same_partition(before, after)
    assert _same_partition(after, tree.apply(X.astype(np.float32)))


def test_a_single_regression_tree_gives_its_leaf_values(tmp_path: Path) -> None:
    X, y = load_diabetes(return_X_y=True)
    tree = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
    model = load_model(_export(tree, X, tmp_path / "reg.onnx"), allow_regression=True,
                       counts_removed_ok=True)
    leaf_values = tree.tree_.value.ravel()[tree.tree_.children_left < 0]
    assert np.allclose(np.sort(model.trees[0].values), np.sort(leaf_values), rtol=1e-6)


def test_the_counts_attacks_say_the_format_keeps_none(tmp_path: Path) -> None:
    X, y = load_wine(return_X_y=True)
    path = _export(DecisionTreeClassifier(random_state=0).fit(X, y), X, tmp_path / "t.onnx")
    with pytest.raises(CountsRemovedError, match="keeps no counts \\(its format has none\\)"):
        load_model(path)
    line = one_line_error(runner.invoke(app, ["reconstruct", str(path)]), 2)
    assert "keeps no counts" in line and "single-out" in line
    shown = runner.invoke(app, ["inspect", str(path)])
    assert shown.exit_code == 0 and "not recorded" in shown.stdout


def test_a_truncated_file_is_refused_in_one_line(tmp_path: Path) -> None:
    X, y = load_wine(return_X_y=True)
    path = _export(DecisionTreeClassifier(random_state=0).fit(X, y), X, tmp_path / "t.onnx")
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    with pytest.raises(ModelFormatError, match="truncated or damaged"):
        load_model(path, counts_removed_ok=True)
    assert "truncated or damaged" in one_line_error(runner.invoke(app, ["inspect", str(path)]),
                                                   2)


def test_leaf_fractions_say_how_many_rows_a_leaf_held_at_least(tmp_path: Path) -> None:
    """Binary (one class's weight kept) and multiclass: the largest reduced denominator of
    any leaf's class fractions, as the fitted trees' own leaves give it."""
    from fractions import Fraction

    from sklearn.ensemble import ExtraTreesClassifier

    X, y = load_wine(return_X_y=True)
    for labels in (y, (y == 1).astype(int)):
        forest = ExtraTreesClassifier(n_estimators=6, min_samples_leaf=4,
                                      random_state=0).fit(X, labels)
        truth = max(
            Fraction(round(share * rows), int(rows)).denominator
            for tree in forest.estimators_
            for shares, rows in zip(tree.tree_.value[tree.tree_.children_left < 0][:, 0],
                                    tree.tree_.n_node_samples[tree.tree_.children_left < 0],
                                    strict=True)
            for share in shares)
        model = load_model(_export(forest, X, tmp_path / "et.onnx"), counts_removed_ok=True)
        assert truth > 1
        assert model.facts["rows a leaf held at least, by its class fractions"] == truth
