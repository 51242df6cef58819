"""ONNX exports of default models (skl2onnx for scikit-learn, onnxmltools for LightGBM and
XGBoost) read so that the IR's leaves give ONNX Runtime's own outputs on 10,000 random rows
around the thresholds, gaps among them; and the graphs it does not read refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.frontends.onnx_trees import read_onnx_ensemble
from treeleaks.io import load_model
from treeleaks.runtime.errors import UnsupportedModelError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
runner = CliRunner()
ROWS = 10_000


def _skl2onnx(model, X: np.ndarray):
    skl2onnx = pytest.importorskip("skl2onnx")
    return skl2onnx.to_onnx(model, X[:1].astype(np.float32),
                            options={id(model): {"zipmap": False}} if hasattr(
                                model, "classes_") else None)


def _onnxmltools(model, X: np.ndarray):
    onnxmltools = pytest.importorskip("onnxmltools")
    from onnxmltools.convert.common.data_types import FloatTensorType

    types = [("input", FloatTensorType([None, X.shape[1]]))]
    if "lightgbm" in type(model).__module__:
        return onnxmltools.convert_lightgbm(model, initial_types=types, zipmap=False)
    return onnxmltools.convert_xgboost(model, initial_types=types)


def _lightgbm(kind: str):
    lightgbm = pytest.importorskip("lightgbm")
    return (lightgbm.LGBMRegressor if kind == "reg" else lightgbm.LGBMClassifier)(verbose=-1)


def _xgboost():
    xgboost = pytest.importorskip("xgboost")
    return xgboost.XGBClassifier(n_estimators=30)


CASES = {
    "skl2onnx RandomForestClassifier, wine": (lambda: RandomForestClassifier(random_state=0),
                                              load_wine, _skl2onnx),
    "skl2onnx RandomForestRegressor, diabetes": (lambda: RandomForestRegressor(
        n_estimators=30, random_state=0), load_diabetes, _skl2onnx),
    "onnxmltools LightGBM, breast cancer": (lambda: _lightgbm("clf"), load_breast_cancer,
                                            _onnxmltools),
    "onnxmltools LightGBM, wine (3 classes)": (lambda: _lightgbm("clf"), load_wine,
                                               _onnxmltools),
    "onnxmltools LightGBM regressor, diabetes": (lambda: _lightgbm("reg"), load_diabetes,
                                                 _onnxmltools),
    "onnxmltools XGBoost, wine": (_xgboost, load_wine, _onnxmltools),
}


def _random_rows(model, n: int, seed: int = 0) -> np.ndarray:
    """Rows of float32 values on either side of every threshold, 5% of them gaps."""
    rng = np.random.default_rng(seed)
    columns = []
    for feature in range(len(_table_columns(model))):
        cuts = _thresholds(model, feature)
        near = np.concatenate([cuts * (1 - 1e-4) - 1e-4, cuts * (1 + 1e-4) + 1e-4, [0.0]])
        columns.append(rng.choice(near, n))
    X = np.column_stack(columns).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X


def _table_columns(model) -> list[str]:
    return [c.name for c in model.inputs.columns] if model.inputs is not None \
        else list(model.feature_names)


def _thresholds(model, column: int) -> np.ndarray:
    feature = column if model.inputs is None else model.inputs.columns[column].features[0]
    cuts = [t.threshold[t.feature == feature] for t in model.trees]
    return np.unique(np.concatenate(cuts)) if cuts else np.zeros(0)


@pytest.mark.parametrize("case", list(CASES))
def test_the_irs_leaves_give_onnx_runtimes_outputs(case: str, tmp_path: Path) -> None:
    make, load, export = CASES[case]
    X, y = load(return_X_y=True)
    fitted = make().fit(X, y)
    path = tmp_path / "model.onnx"
    path.write_bytes(export(fitted, X).SerializeToString())
    read = read_onnx_ensemble(path)
    model = read.model
    rows = _random_rows(model, ROWS)
    frame = pd.DataFrame(rows.astype(np.float64), columns=_table_columns(model))
    features = model.inputs.encode(frame).to_numpy() if model.inputs is not None else rows
    ours = read.scores(model.apply(features.astype(np.float64)))
    session = ort.InferenceSession(str(path))
    outputs = session.run(None, {session.get_inputs()[0].name: rows})
    theirs = outputs[-1] if model.classes else outputs[0].ravel()
    scale = max(1.0, float(np.abs(theirs).max()))
    assert np.abs(ours - theirs).max() <= 1e-5 * scale
    assert np.isnan(rows).any()  # gaps were routed, too


def _graph(*nodes) -> bytes:
    from onnx import TensorProto, helper

    graph = helper.make_graph(list(nodes), "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", 3)])
    return model.SerializeToString()


def _regressor(output: str, mode: str = "BRANCH_LEQ"):
    from onnx import helper

    return helper.make_node(
        "TreeEnsembleRegressor", ["x"], [output], domain="ai.onnx.ml", n_targets=1,
        nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0],
        nodes_modes=[mode, "LEAF", "LEAF"], nodes_values=[0.5, 0.0, 0.0],
        nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
        target_treeids=[0, 0], target_nodeids=[1, 2], target_ids=[0, 0],
        target_weights=[1.0, 2.0])


@pytest.mark.parametrize(("nodes", "words"), [
    (lambda: [__import__("onnx").helper.make_node("Identity", ["x"], ["y"])],
     "holds 0 tree ensembles (operators: Identity)"),
    (lambda: [_regressor("a"), _regressor("y")],
     "holds 2 tree ensembles (operators: TreeEnsembleRegressor)"),
    (lambda: [_regressor("y", "BRANCH_EQ")], "splits by BRANCH_EQ"),
])
def test_graphs_it_does_not_read_are_refused_naming_what_they_hold(
        nodes, words: str, tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(_graph(*nodes()))
    with pytest.raises(UnsupportedModelError, match=words.replace("(", r"\(").replace(")", r"\)")):
        load_model(path, allow_regression=True)
    done = runner.invoke(app, ["inspect", str(path)])
    assert done.exit_code == 2 and words in done.output


def test_a_lightgbm_export_is_singled_out_and_audited_saying_what_no_counts_rule_out(
        tmp_path: Path) -> None:
    X, y = load_breast_cancer(return_X_y=True)
    path = tmp_path / "lgbm.onnx"
    path.write_bytes(_onnxmltools(_lightgbm("clf").fit(X, y), X).SerializeToString())
    single = runner.invoke(app, ["single-out", str(path), "--no-counts"])
    assert single.exit_code == 0, single.output
    out = tmp_path / "audit"
    audit = runner.invoke(app, ["audit", str(path), "--out", str(out), "--budget", "20"])
    assert audit.exit_code == 0, audit.output
    steps = {step["name"]: step for step in
             json.loads((out / "report.json").read_text())["attacks"]}
    for name in ("reconstruct", "leak", "prune"):  # what the missing counts rule out
        assert steps[name]["status"] == "does not apply"
        assert steps[name]["why"] == ("the file stores no counts (its framework keeps none), "
                                      "and this attack reads them")
    assert steps["single-out"]["figures"]["n_predicates"] > 0
    assert "not stored (the framework keeps none)" in " ".join(
        line.strip("│ ") for line in audit.output.splitlines())
