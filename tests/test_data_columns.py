"""The custodian's table matches a LightGBM file whose column names LightGBM rewrote."""

from __future__ import annotations

import json
from pathlib import Path

import lightgbm
import pandas as pd
from sklearn.datasets import load_breast_cancer
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.ir.data_columns import as_model_columns, file_name_of


def test_rewritten_names_are_matched_once_and_only_when_unambiguous() -> None:
    frame = pd.DataFrame({"mean radius": [1.0], "a:b": [2.0], "y": [0]})
    renamed = as_model_columns(frame, ["mean_radius", "a_b"], "y")
    assert list(renamed.columns) == ["mean_radius", "a_b", "y"]
    assert file_name_of('x[1]{"q"}, z') == "x_1___q____z"
    twins = pd.DataFrame({"a b": [1.0], "a:b": [2.0], "y": [0]})
    assert list(as_model_columns(twins, ["a_b"], "y").columns) == ["a b", "a:b", "y"]
    assert as_model_columns(frame, ["mean radius", "a:b"], "y") is frame


def test_the_audit_reads_the_table_a_lightgbm_file_was_trained_on(tmp_path: Path) -> None:
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X, y = X.iloc[:120, :4], y.iloc[:120]
    booster = lightgbm.LGBMClassifier(n_estimators=3, verbose=-1).fit(X, y)
    model = tmp_path / "model.txt"
    booster.booster_.save_model(str(model))
    X.assign(target=y).to_csv(tmp_path / "train.csv", index=False)
    result = CliRunner().invoke(app, ["audit", str(model), "--out", str(tmp_path / "a"),
                                      "--data", str(tmp_path / "train.csv"), "--label",
                                      "target", "--budget", "10"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["verdict"]["rows_in_data"] == 120
    assert report["verdict"]["singled_out_measured_on_data"] is True
