"""Booster files under bad input (issue 41): edited XGBoost JSON and LightGBM text files are
refused with one line naming the field (exit 2), never read into wrong rows that pass the
certificate, and never turned into a traceback; the input file is never modified."""

from __future__ import annotations

import json
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
    assert "'split_conditions'" in line and "trees[0]" in line and "edited file" in line


@pytest.mark.parametrize("value", ["1e30", "1e38", "inf", "-inf", "nan"])
def test_a_huge_or_missing_lightgbm_threshold_is_refused_naming_the_field(
        lgb_text, tmp_path, value) -> None:
    text = edited_lgb(lgb_text, "threshold", 0, lambda v: v.__setitem__(0, value))
    line = refused(tmp_path, "m.txt", text)
    assert "LightGBM tree 0: field 'threshold'" in line and "edited file" in line


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
