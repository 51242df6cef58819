"""Booster files under bad input (issue 41): edited XGBoost JSON and LightGBM text files are
refused with one line naming the field (exit 2), never read into wrong rows that pass the
certificate, and never turned into a traceback; the input file is never modified."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.cli.reconstruct import _integral
from treeleaks.counts.verify import verify
from treeleaks.io import load_model
from treeleaks.runtime.errors import TreeleaksError

from conftest import one_line_error

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
runner = CliRunner()
FAST = ["--time-limit", "20", "--certainty-time-limit", "1"]


def small_data() -> tuple[pd.DataFrame, pd.Series]:
    """60 rows of four 4-valued columns and a label leaning on the first."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.integers(0, 4, size=(60, 4)), columns=[f"f{j}" for j in range(4)])
    y = ((X.f0 + rng.integers(0, 2, 60)) > 2).astype(int)
    return X, y


@pytest.fixture(scope="module")
def xgb_doc() -> dict[str, Any]:
    X, y = small_data()
    booster = xgb.XGBClassifier(n_estimators=3, max_depth=3).fit(X, y).get_booster()
    return json.loads(bytes(booster.save_raw(raw_format="json")))


@pytest.fixture(scope="module")
def lgb_text() -> str:
    X, y = small_data()
    fitted = lgb.LGBMClassifier(n_estimators=3, num_leaves=8, min_child_samples=1,
                                min_child_weight=0, verbose=-1).fit(X, y)
    return fitted.booster_.model_to_string()


def xgb_trees(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["learner"]["gradient_booster"]["model"]["trees"]


def first_split(tree: dict[str, Any]) -> int:
    """A split node of ``tree`` below the root (editing the root can empty a leaf)."""
    return next(n for n, child in enumerate(tree["left_children"]) if n > 0 and child >= 0)


def edited_xgb(doc: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> str:
    """The JSON text of ``doc`` after ``edit`` on a deep copy (``json.dumps`` writes NaN and
    Infinity as JavaScript literals, which XGBoost's own reader accepts too)."""
    copy = json.loads(json.dumps(doc))
    edit(copy)
    return json.dumps(copy)


def edited_lgb(text: str, field: str, tree: int, replace: Callable[[list[str]], None]) -> str:
    """``text`` with the ``field=`` line of tree ``tree`` rewritten by ``replace`` on its
    values."""
    lines = text.splitlines()
    start = lines.index(f"Tree={tree}")
    at = next(i for i in range(start, len(lines)) if lines[i].startswith(f"{field}="))
    values = lines[at].split("=", 1)[1].split()
    replace(values)
    lines[at] = f"{field}=" + " ".join(values)
    return "\n".join(lines) + "\n"


def refused(tmp_path: Path, name: str, text: str, *command: str) -> str:
    """Run ``command`` (default: reconstruct) on a file holding ``text``: exit 2, one
    ``error:`` line, the file unchanged. Returns the line."""
    path = tmp_path / name
    path.write_text(text)
    result = runner.invoke(app, [*(command or ("reconstruct",)), str(path), *FAST])
    line = one_line_error(result, 2)
    assert path.read_text() == text
    assert "this is a bug" not in line
    return line


@pytest.mark.parametrize("value", [1e30, 1e38, float("inf"), -float("inf"), 1e39,
                                   float("nan")])
def test_a_huge_or_missing_xgboost_threshold_is_refused_naming_the_field(
        xgb_doc, tmp_path, value) -> None:
    def edit(doc: dict[str, Any]) -> None:
        for tree in xgb_trees(doc):
            tree["split_conditions"][first_split(tree)] = value

    line = refused(tmp_path, "m.json", edited_xgb(xgb_doc, edit))
    assert "'split_conditions'" in line and "trees[0]" in line and "edited" in line


@pytest.mark.parametrize("value", ["1e30", "1e38", "inf", "-inf", "nan"])
def test_a_huge_or_missing_lightgbm_threshold_is_refused_naming_the_field(
        lgb_text, tmp_path, value) -> None:
    text = edited_lgb(lgb_text, "threshold", 0, lambda v: v.__setitem__(0, value))
    line = refused(tmp_path, "m.txt", text)
    assert "LightGBM tree 0: field 'threshold'" in line and "edited" in line


def test_the_written_rows_are_the_rows_the_certificate_routed(xgb_doc, tmp_path) -> None:
    path, out = tmp_path / "m.json", tmp_path / "rows.csv"
    path.write_text(json.dumps(xgb_doc))
    result = runner.invoke(app, ["reconstruct", str(path), *FAST, "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = pd.read_csv(out)
    certificate = verify(load_model(path), written)
    assert certificate.verified, certificate.first_mismatch


def test_whole_numbers_past_2_to_53_are_not_turned_into_int64_extremes() -> None:
    rows = pd.DataFrame({"a": [1e30, -1e30], "b": [0.0, 1.0], "label": [0, 1]})
    written = _integral(rows)
    assert written["a"].tolist() == [1e30, -1e30]  # kept as floats, not -2^63
    assert written["b"].dtype == np.int64


def test_rows_no_tree_routes_as_training_values_fail_the_certificate(xgb_doc) -> None:
    model = load_model_from_doc(xgb_doc)
    X, y = small_data()
    rows = X.astype(float).assign(label=y)
    assert verify(model, rows).verified
    for odd in (np.nan, np.inf, -1e300):
        bad = rows.copy()
        bad.loc[3, "f1"] = odd
        certificate = verify(model, bad)
        assert not certificate.verified and "row 3 column 'f1'" in certificate.first_mismatch


def load_model_from_doc(doc: dict[str, Any]) -> Any:
    from treeleaks.frontends.xgboost import read_xgboost

    return read_xgboost(doc)


@pytest.mark.parametrize(("field", "tree", "entry", "value", "expected"), [
    ("leaf_count", 0, 0, "27.5", "field 'leaf_count' holds 27.5 at entry 0, not a whole"),
    ("leaf_count", 0, 0, "-3", "field 'leaf_count' holds -3 at entry 0, it must be at least 0"),
    ("leaf_count", 1, 0, "1000000000", "LightGBM tree 1 node"),  # not its children's
    ("leaf_count", 0, 0, "nan", "field 'leaf_count' holds nan at entry 0, not a finite"),
    ("leaf_weight", 0, 0, "nan", "field 'leaf_weight' holds nan"),
    ("leaf_weight", 1, 1, "-inf", "field 'leaf_weight' holds -inf"),
    ("leaf_value", 0, 0, "inf", "field 'leaf_value' holds inf"),
    ("num_leaves", 0, 0, "nan", "field 'num_leaves' holds nan"),
    ("num_leaves", 0, 0, "8.5", "field 'num_leaves' holds 8.5"),
    ("split_feature", 0, 1, "-1", "field 'split_feature' holds -1 at entry 1, it must be"),
    ("split_feature", 0, 1, "9", "field 'split_feature' holds 9 at entry 1, it must be"),
    ("left_child", 0, 1, "2.5", "field 'left_child' holds 2.5"),
    ("decision_type", 0, 0, "nan", "field 'decision_type' holds nan"),
])
def test_an_edited_lightgbm_number_is_named(lgb_text, tmp_path, field, tree, entry, value,
                                            expected) -> None:
    text = edited_lgb(lgb_text, field, tree, lambda v: v.__setitem__(entry, value))
    line = refused(tmp_path, "m.txt", text)
    assert expected in line, line
    assert "bagging" not in line.replace("records no bagging", "")  # no cause it lacks
    assert "cannot convert" not in line


def test_a_count_edit_is_not_blamed_on_bagging_the_file_does_not_record(lgb_text,
                                                                       tmp_path) -> None:
    def plus_one(values: list[str]) -> None:
        values[0] = str(int(values[0]) + 1)

    line = refused(tmp_path, "m.txt", edited_lgb(lgb_text, "leaf_count", 1, plus_one))
    # the leaf's parent holds fewer rows than its children (issue 51): named first
    assert "LightGBM tree 1 node" in line and "internal_count" in line, line
    assert "edited after training" in line and "GOSS)" not in line


@pytest.mark.parametrize(("where", "value", "expected"), [
    (("trees", 0, "sum_hessian", 0), float("nan"), "field 'sum_hessian' holds nan"),
    (("trees", 0, "sum_hessian", 1), -2.0, "field 'sum_hessian' holds -2"),
    (("trees", 0, "split_indices", 0), -1, "field 'split_indices' holds -1 at entry 0"),
    (("trees", 0, "split_indices", 0), 7, "field 'split_indices' holds 7 at entry 0, past"),
    (("trees", 0, "left_children", 0), 1.5, "field 'left_children' holds 1.5"),
    (("trees", 0, "left_children", 0), 99, "a child index is past"),
    (("trees", 1, "split_conditions", 1), float("inf"), "field 'split_conditions' holds inf"),
    (("base_score",), "NaN", "base_score' holds nan, not a finite"),
    (("base_score",), "[1.5E0]", "base_score' holds 1.5, not a probability"),
    (("num_feature",), "nan", "num_feature' holds nan, not a finite"),
    (("trees", 0, "sum_hessian", 1), 100.0, "XGBoost tree 0 node 0 holds"),  # issue 51
])
def test_an_edited_xgboost_number_is_named(xgb_doc, tmp_path, where, value,
                                           expected) -> None:
    def edit(doc: dict[str, Any]) -> None:
        if where[0] == "trees":
            xgb_trees(doc)[where[1]][where[2]][where[3]] = value
        else:
            doc["learner"]["learner_model_param"][where[0]] = value

    line = refused(tmp_path, "m.json", edited_xgb(xgb_doc, edit))
    assert expected in line, line
    assert "cannot convert" not in line


def duplicated_tree(doc: dict[str, Any]) -> None:
    """Tree 1 twice: every count still holds, the later sums cannot."""
    model = doc["learner"]["gradient_booster"]["model"]
    model["trees"].insert(1, json.loads(json.dumps(model["trees"][1])))
    for index, tree in enumerate(model["trees"]):
        tree["id"] = index
    model["tree_info"].append(0)
    model["gbtree_model_param"]["num_trees"] = str(len(model["trees"]))
    if "iteration_indptr" in model:
        model["iteration_indptr"].append(model["iteration_indptr"][-1] + 1)


def tripled_leaf_value(doc: dict[str, Any]) -> None:
    tree = xgb_trees(doc)[2]
    leaf = next(n for n, child in enumerate(tree["left_children"]) if child < 0)
    tree["split_conditions"][leaf] *= 3


@pytest.mark.parametrize("edit", [duplicated_tree, tripled_leaf_value])
def test_gradient_sums_no_dataset_meets_are_infeasible_not_a_fallback(xgb_doc, tmp_path,
                                                                      edit) -> None:
    line = refused_with(tmp_path, "m.json", edited_xgb(xgb_doc, edit), 3)
    assert "no dataset meets both the booster's counts and its leaf values" in line
    assert "contradict each other at tree 2 leaf" in line and "tolerance" not in line


def test_an_edited_later_lightgbm_leaf_value_is_infeasible(lgb_text, tmp_path) -> None:
    text = edited_lgb(lgb_text, "leaf_value", 2, lambda v: v.__setitem__(1, "5"))
    line = refused_with(tmp_path, "m.txt", text, 3)
    assert "contradict each other at tree 2 leaf" in line


def refused_with(tmp_path: Path, name: str, text: str, code: int) -> str:
    """``reconstruct`` on a file holding ``text`` ends with ``code`` and one line."""
    path = tmp_path / name
    path.write_text(text)
    line = one_line_error(runner.invoke(app, ["reconstruct", str(path), *FAST]), code)
    assert path.read_text() == text
    return line


def with_missing_values(X: pd.DataFrame) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return X.astype(float).mask(rng.random(X.shape) < 0.15)


@pytest.mark.parametrize("method", ["hist", "exact", "approx"])
def test_xgboost_with_missing_values_is_read_and_plain_data_too(tmp_path, method) -> None:
    from treeleaks.frontends.xgboost import read_xgboost

    X, y = small_data()
    plain = xgb.XGBClassifier(n_estimators=4, max_depth=3, tree_method=method).fit(X, y)
    assert read_xgboost(plain).n_rows == len(X)  # one side for every split: no missing
    fitted = xgb.XGBClassifier(n_estimators=4, max_depth=3, tree_method=method).fit(
        with_missing_values(X), y)
    path = tmp_path / "m.json"
    fitted.save_model(path)
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0, result.output


def test_dart_boosters_are_refused_with_the_reason(tmp_path) -> None:
    X, y = small_data()
    light = lgb.LGBMClassifier(boosting_type="dart", n_estimators=4, verbose=-1).fit(X, y)
    path = tmp_path / "dart.txt"
    light.booster_.save_model(str(path))
    line = one_line_error(runner.invoke(app, ["inspect", str(path)]), 2)
    assert "LightGBM boosting 'dart'" in line and "rescales" in line
    extreme = xgb.XGBClassifier(booster="dart", n_estimators=4, max_depth=3).fit(X, y)
    path = tmp_path / "dart.json"
    extreme.save_model(path)
    line = one_line_error(runner.invoke(app, ["inspect", str(path)]), 2)
    assert "XGBoost booster 'dart'" in line and "rescales" in line


@pytest.mark.parametrize("value", [1e300, 1e-300, 1e-45])
def test_an_edited_leaf_value_raises_no_runtime_warning(xgb_doc, tmp_path, value) -> None:
    def edit(doc: dict[str, Any]) -> None:
        tree = xgb_trees(doc)[0]
        tree["split_conditions"][tree["left_children"].index(-1)] = value

    path = tmp_path / "m.json"
    path.write_text(edited_xgb(xgb_doc, edit))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from treeleaks.frontends.xgboost import read_xgboost

        with pytest.raises(TreeleaksError):  # the library: refused, no warning on the way
            read_xgboost(path)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], caught[0]


def test_runtime_warnings_never_reach_the_command_lines_stderr(tmp_path) -> None:
    """In a process of its own (pytest records warnings itself): a warning numpy raises
    inside a command is not printed beside the one error line."""
    script = tmp_path / "warn.py"
    script.write_text(
        "import numpy as np, typer\n"
        "from treeleaks.cli import app\n"
        "@app.command('warn-now')\n"
        "def warn_now() -> None:\n"
        "    np.float32(1e300)\n"
        "    np.array([1.0]) / 0.0\n"
        "    raise typer.Exit(0)\n"
        "app()\n")
    done = subprocess.run([sys.executable, str(script), "warn-now"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "TREELEAKS_DEBUG": ""})
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr
