"""``treeleaks strip`` on damaged files: each is refused in one line (exit 2) by the reader
the attacks use, before scikit-learn, LightGBM or XGBoost sees it (they crash, hang or print
a C++ stack trace on these), and nothing is written; a crash the reader cannot foresee ends
a child process, not the command. The damaged files are built here from small models."""

from __future__ import annotations

import json
import os
import pickle
import re
import time
from pathlib import Path
from typing import Any

import lightgbm
import numpy as np
import pytest
import skops.io
import xgboost
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier, ExtraTreeRegressor
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.defences import strip_child
from treeleaks.defences.strip_check import StripCheckError
from treeleaks.defences.strip_child import strip_in_child

from conftest import one_line_error

runner = CliRunner()


@pytest.fixture(scope="module")
def table() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, (60, 3)).astype(float)
    return X, (X[:, 0] + X[:, 1] > 3).astype(int)


def without_nodes(tree: Any) -> Any:
    """A scikit-learn ``Tree`` like ``tree`` with no node at all."""
    state = tree.__getstate__()
    cls, args = tree.__reduce__()[:2]
    empty = cls(*args)
    empty.__setstate__({**state, "node_count": 0, "nodes": state["nodes"][:0],
                        "values": state["values"][:0]})
    return empty


def refused(path: Path, tmp_path: Path, *options: str) -> str:
    """Strip ``path``: exit 2, one ``error:`` line, nothing written, the input unchanged."""
    before = path.read_bytes()
    out = tmp_path / f"safe{path.suffix}"
    line = one_line_error(runner.invoke(app, ["strip", str(path), "--out", str(out),
                                              "--no-measure", *options]))
    assert not out.exists() and path.read_bytes() == before
    assert "Stack trace" not in line and "this is a bug" not in line
    return line


def lightgbm_text(table: tuple[np.ndarray, np.ndarray]) -> str:
    X, y = table
    params = {"objective": "binary", "verbose": -1, "num_leaves": 4, "min_data_in_leaf": 3}
    return lightgbm.train(params, lightgbm.Dataset(X, y), num_boost_round=3).model_to_string()


def test_a_tree_without_nodes_is_refused_not_a_segfault(table, tmp_path: Path) -> None:
    tree = DecisionTreeClassifier(random_state=0).fit(*table)
    tree.tree_ = without_nodes(tree.tree_)
    path = tmp_path / "tree.skops"
    skops.io.dump(tree, path)
    line = refused(path, tmp_path)
    assert "tree.skops" in line and "malformed tree 0: a tree has no nodes" in line


def test_a_forest_whose_first_tree_has_no_nodes_is_refused_at_once(table,
                                                                   tmp_path: Path) -> None:
    forest = RandomForestClassifier(3, max_depth=3, random_state=0).fit(*table)
    forest.estimators_[0].tree_ = without_nodes(forest.estimators_[0].tree_)
    path = tmp_path / "forest.skops"
    skops.io.dump(forest, path)
    start = time.perf_counter()
    assert "malformed tree 0: a tree has no nodes" in refused(path, tmp_path)
    assert time.perf_counter() - start < 30  # it hung past 150 s


def test_a_lightgbm_leaf_value_that_is_nan_is_refused_not_an_abort(table,
                                                                    tmp_path: Path) -> None:
    text = lightgbm_text(table)
    path = tmp_path / "nan.txt"
    path.write_text(re.sub(r"(?m)^leaf_value=\S+", "leaf_value=nan", text, count=1))
    line = refused(path, tmp_path)
    assert "tree 0: field 'leaf_value' holds nan" in line


def test_a_lightgbm_file_cut_in_half_is_called_truncated(table, tmp_path: Path) -> None:
    text = lightgbm_text(table)
    path = tmp_path / "half.txt"
    path.write_text(text[: len(text) // 2])
    line = refused(path, tmp_path)
    assert "a truncated file" in line and "counts were removed" not in line
    cut = text[: text.index("leaf_count=", text.index("Tree=1"))]  # inside a tree
    path.write_text(cut)
    line = one_line_error(runner.invoke(app, ["inspect", str(path)]))
    assert "stops after 2 tree(s) of the 3 its tree_sizes lists" in line
    assert "a truncated file" in line


def test_a_lightgbm_tree_edited_to_another_size_is_refused_naming_tree_sizes(
        table, tmp_path: Path) -> None:
    """LightGBM seeks by ``tree_sizes`` and aborts when a tree's bytes differ; the reader
    reads the file line by line, so strip asks before LightGBM sees it."""
    text = lightgbm_text(table)
    value = re.search(r"(?m)^leaf_value=(\S+)", text).group(1)
    path = tmp_path / "edited.txt"
    path.write_text(text.replace(f"leaf_value={value}", f"leaf_value={value}0001", 1))
    line = refused(path, tmp_path)
    assert "tree 0 is" in line and "tree_sizes" in line
    fixed = tmp_path / "fixed.txt"  # the advice: without the line, LightGBM reads in order
    fixed.write_text(re.sub(r"(?m)^tree_sizes=.*\n", "", path.read_text()))
    done = runner.invoke(app, ["strip", str(fixed), "--out", str(tmp_path / "s.txt"),
                               "--no-measure"])
    assert done.exit_code == 0, done.output


def xgboost_file(table: tuple[np.ndarray, np.ndarray], tmp_path: Path,
                 objective: str) -> dict[str, Any]:
    X, y = table
    booster = xgboost.train({"objective": objective, "max_depth": 2},
                            xgboost.DMatrix(X, y), num_boost_round=3)
    booster.save_model(tmp_path / "source.json")
    return json.loads((tmp_path / "source.json").read_text())


def emptied(data: dict[str, Any], index: int) -> dict[str, Any]:
    tree = data["learner"]["gradient_booster"]["model"]["trees"][index]
    for key, value in list(tree.items()):
        if isinstance(value, list):
            tree[key] = []
    tree["tree_param"]["num_nodes"] = "0"
    return data


def test_an_empty_xgboost_tree_is_one_line_not_a_stack_trace(table, tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(emptied(xgboost_file(table, tmp_path, "binary:logistic"), 1)))
    assert "malformed tree 1: a tree has no nodes" in refused(path, tmp_path)


def test_what_the_reader_declines_reaches_the_framework_in_a_child(
        table, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An objective the reader does not read (binary:hinge) is handed on; XGBoost's error on
    its empty tree comes back as one line, without XGBoost's stack trace; a scikit-learn
    kind the reader does not read crashes scikit-learn in the child, not the command."""
    path = tmp_path / "hinge.json"
    path.write_text(json.dumps(emptied(xgboost_file(table, tmp_path, "binary:hinge"), 1)))
    line = refused(path, tmp_path)
    assert "XGBoost could not load or predict with the model" in line
    assert "Check failed: n_nodes != 0" in line and "[bt]" not in line
    X, _ = table
    regressor = ExtraTreeRegressor(random_state=0).fit(X, X[:, 0] + X[:, 1])
    regressor.tree_ = without_nodes(regressor.tree_)
    path = tmp_path / "regressor.skops"
    skops.io.dump(regressor, path)
    monkeypatch.setattr(strip_child, "CHILD_SECONDS", 20.0)  # it reads memory past the tree:
    line = refused(path, tmp_path)  # a crash, or a walk in circles
    assert ("scikit-learn crashed (SIGSEGV)" in line or "did not finish" in line
            or "no nodes" in line)
    assert "nothing was written" in line or "no nodes" in line


class _Aborts:
    """An object whose unpickling aborts the process, as a framework's fatal error does."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return os.abort, ()


class _Sleeps:
    """An object whose unpickling takes a minute, as a framework walking in circles does."""

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return time.sleep, (60,)


def test_a_child_that_dies_is_one_line_naming_the_signal() -> None:
    pickle.dumps(_Aborts())  # it travels; it is the child that dies
    with pytest.raises(StripCheckError, match=r"crashed \(SIGABRT\) .*nothing was written"):
        strip_in_child(_Aborts(), "skops")


def test_a_child_that_never_finishes_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(strip_child, "CHILD_SECONDS", 3.0)
    start = time.perf_counter()
    with pytest.raises(StripCheckError, match=r"did not finish .* in 3 s .*nothing was "
                       "written"):
        strip_in_child(_Sleeps(), "skops")
    assert time.perf_counter() - start < 20


def test_one_tree_zeroed_is_an_edit_not_removed_counts(table, tmp_path: Path) -> None:
    """strip zeroes every tree's counts; a file with one tree zeroed and the others not was
    edited or damaged, and is called that, not "counts were removed"."""
    forest = RandomForestClassifier(3, max_depth=3, bootstrap=False, random_state=0).fit(*table)
    tree = forest.estimators_[1].tree_
    state = tree.__getstate__()
    nodes = state["nodes"].copy()
    nodes["n_node_samples"] = 0
    nodes["weighted_n_node_samples"] = 0
    cls, args = tree.__reduce__()[:2]
    forest.estimators_[1].tree_ = cls(*args)
    forest.estimators_[1].tree_.__setstate__({**state, "nodes": nodes})
    path = tmp_path / "edited.skops"
    skops.io.dump(forest, path)
    for command in ("reconstruct", "inspect"):
        line = one_line_error(runner.invoke(app, [command, str(path)]))
        assert "tree 1's row counts are all 0 while tree 0's are not: an edited file" in line
        assert "counts were removed" not in line
    assert "an edited file" in refused(path, tmp_path)
    data = xgboost_file(table, tmp_path, "binary:logistic")
    second = data["learner"]["gradient_booster"]["model"]["trees"][1]
    second["sum_hessian"] = [0.0] * len(second["sum_hessian"])
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    line = one_line_error(runner.invoke(app, ["inspect", str(path)]))
    assert "tree 1's covers (sum_hessian) are all 0 while tree 0's are not" in line
