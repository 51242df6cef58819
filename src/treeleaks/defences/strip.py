"""The release-safe file: a model file with every field prediction does not need removed or
neutralised (row counts, weighted counts, impurities, hessian sums, gains, random states,
scores on the training rows), in the format it came in, proven to predict as before.

`strip` takes what the file holds (a scikit-learn estimator from a skops archive or a
pickle, a LightGBM model text, a parsed XGBoost JSON model), strips it, serialises it, loads
those bytes back with the framework itself and compares its predictions with the
original's on the custodian's rows and on `strip_check.N_RANDOM` random inputs around the
thresholds; a file that does not load back or predicts differently raises
`StripCheckError`, so nothing is written. What the file still gives away: its structure,
each leaf's fractions or value, and its thresholds (see docs/strip.md).
"""

from __future__ import annotations

import io
import json
import pickle
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from treeleaks.defences.strip_boosters import strip_lightgbm, strip_xgboost
from treeleaks.defences.strip_check import (
    N_RANDOM,
    Predictions,
    compare,
    probe_inputs,
    reloaded,
)
from treeleaks.defences.strip_sklearn import strip_estimator
from treeleaks.errors import TreeleaksError, UnsupportedModelError

FORMATS = ("skops", "pickle", "joblib", "lightgbm", "xgboost")
_Predictor = Callable[[np.ndarray], Predictions]


class StripError(TreeleaksError):
    """The file holds something `strip` does not strip, or rows it cannot compare on."""


@dataclass(frozen=True)
class Stripped:
    """The stripped file's bytes, what was removed or neutralised, and the inputs its
    predictions were compared on."""

    content: bytes
    kind: str
    removed: list[str]
    n_rows: int  # the custodian's rows compared on (0 without them)
    n_random: int


@dataclass(frozen=True)
class _Plan:
    """One file format's stripping: the stripped bytes, what was removed, a predictor for
    the original and a loader for the bytes, the thresholds and the feature names."""

    kind: str
    content: bytes
    removed: list[str]
    original: _Predictor
    load: Callable[[bytes], _Predictor]
    framework: str
    thresholds: list[np.ndarray]
    names: list[str] | None


def strip(model: Any, file_format: str, rows: Any = None, n_random: int = N_RANDOM) -> Stripped:
    """Strip ``model`` (what a file of ``file_format`` holds, one of `FORMATS`) and prove
    the result predicts as before on ``rows`` (a data frame of the model's feature columns,
    or an array) and on ``n_random`` random inputs; raises `StripError`,
    `UnsupportedModelError` or `StripCheckError` (nothing to write) with one line."""
    if file_format not in FORMATS:
        raise StripError(f"unknown format {file_format!r}; strip writes {', '.join(FORMATS)}")
    plan = {"lightgbm": _lightgbm, "xgboost": _xgboost}.get(file_format, _sklearn)(
        model, file_format)
    stripped = reloaded(plan.load, plan.content, plan.framework)
    inputs = []
    if rows is not None:
        inputs.append((_matrix(rows, plan.names, len(plan.thresholds)), "rows of --data"))
    inputs.append((probe_inputs(plan.thresholds, n_random), "random inputs"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # feature names, NaN importances: not our concern
        for X, where in inputs:
            compare(plan.original(X), stripped(X), where)
    return Stripped(plan.content, plan.kind, plan.removed,
                    0 if rows is None else len(inputs[0][0]), n_random)


def _matrix(rows: Any, names: list[str] | None, n_features: int) -> np.ndarray:
    """The rows as the model's feature matrix: a frame's columns by the model's names when
    it has them all, else in order."""
    columns = list(getattr(rows, "columns", []))
    if names and columns and set(names) <= set(columns):
        rows = rows[names]
    matrix = np.asarray(rows, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] != n_features:
        raise StripError(f"the rows to check on have {matrix.shape[-1]} feature columns but "
                         f"the model reads {n_features}; give the training data with its "
                         "label column named by --label")
    return matrix


def _sklearn(estimator: Any, file_format: str) -> _Plan:
    stripped, removed = strip_estimator(estimator)
    dump, load = _SERIALISERS[file_format]
    return _Plan(type(estimator).__name__, dump(stripped), removed, _sklearn_outputs(estimator),
                 lambda content: _sklearn_outputs(load(content)), f"scikit-learn ({file_format})",
                 _sklearn_thresholds(estimator), _names(estimator))


def _sklearn_outputs(estimator: Any) -> _Predictor:
    def predict(X: np.ndarray) -> Predictions:
        out = {"predict": np.asarray(estimator.predict(X))}
        if hasattr(estimator, "predict_proba"):
            out["predict_proba"] = np.asarray(estimator.predict_proba(X))
        return out
    return predict


def _sklearn_thresholds(estimator: Any) -> list[np.ndarray]:
    """Each feature's split thresholds over every tree (trees or histogram predictors)."""
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    if hasattr(estimator, "_predictors"):
        for per_round in estimator._predictors:
            for predictor in per_round:
                inner = predictor.nodes["is_leaf"] == 0
                pairs.append((predictor.nodes["feature_idx"][inner],
                              predictor.nodes["num_threshold"][inner]))
    else:
        members = np.asarray(getattr(estimator, "estimators_", [estimator])).ravel()
        for member in members:
            inner = member.tree_.children_left >= 0
            pairs.append((member.tree_.feature[inner], member.tree_.threshold[inner]))
    return _per_feature(pairs, int(estimator.n_features_in_))


def _per_feature(pairs: list[tuple[np.ndarray, np.ndarray]], n_features: int
                 ) -> list[np.ndarray]:
    features = np.concatenate([f for f, _ in pairs]) if pairs else np.zeros(0, int)
    cuts = np.concatenate([t for _, t in pairs]) if pairs else np.zeros(0)
    return [np.unique(cuts[features == j]) for j in range(n_features)]


def _names(estimator: Any) -> list[str] | None:
    names = getattr(estimator, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def _skops_dump(estimator: Any) -> bytes:
    import skops.io

    return skops.io.dumps(estimator)


def _skops_load(content: bytes) -> Any:
    import skops.io

    return skops.io.loads(content, trusted=skops.io.get_untrusted_types(data=content))


def _joblib_dump(estimator: Any) -> bytes:
    import joblib

    buffer = io.BytesIO()
    joblib.dump(estimator, buffer)
    return buffer.getvalue()


def _joblib_load(content: bytes) -> Any:
    import joblib

    return joblib.load(io.BytesIO(content))


_SERIALISERS: dict[str, tuple[Callable[[Any], bytes], Callable[[bytes], Any]]] = {
    "skops": (_skops_dump, _skops_load),
    "pickle": (pickle.dumps, pickle.loads),
    "joblib": (_joblib_dump, _joblib_load),
}


def _lightgbm(text: Any, file_format: str) -> _Plan:
    import lightgbm

    original = lightgbm.Booster(model_str=text)
    stripped, removed = strip_lightgbm(text)
    trees = original.dump_model()["tree_info"]
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    for tree in trees:
        pending = [tree["tree_structure"]]
        while pending:
            node = pending.pop()
            if "split_feature" in node:
                pairs.append((np.array([node["split_feature"]]), np.array([node["threshold"]])))
                pending += [node["left_child"], node["right_child"]]
    return _Plan("LightGBM model", stripped.encode("utf-8"), removed, _lightgbm_outputs(original),
                 lambda content: _lightgbm_outputs(lightgbm.Booster(
                     model_str=content.decode("utf-8"))), "LightGBM",
                 _per_feature(pairs, original.num_feature()), original.feature_name())


def _lightgbm_outputs(booster: Any) -> _Predictor:
    return lambda X: {"raw score": np.asarray(booster.predict(X, raw_score=True)),
                      "predict": np.asarray(booster.predict(X))}


def _xgboost(data: Any, file_format: str) -> _Plan:
    booster_name = data["learner"]["gradient_booster"].get("name")
    if booster_name != "gbtree":
        raise UnsupportedModelError(f"cannot strip an XGBoost {booster_name!r} model; "
                                    "treeleaks strips tree boosters (gbtree)")
    stripped, removed = strip_xgboost(data)
    trees = data["learner"]["gradient_booster"]["model"]["trees"]
    pairs = [(np.asarray(t["split_indices"])[np.asarray(t["left_children"]) >= 0],
              np.asarray(t["split_conditions"], dtype=np.float64)[
                  np.asarray(t["left_children"]) >= 0]) for t in trees]
    n_features = int(data["learner"]["learner_model_param"]["num_feature"])
    return _Plan("XGBoost model", json.dumps(stripped).encode("utf-8"), removed,
                 _xgboost_outputs(_xgboost_booster(json.dumps(data).encode("utf-8"))),
                 lambda content: _xgboost_outputs(_xgboost_booster(content)), "XGBoost",
                 _per_feature(pairs, n_features), data["learner"].get("feature_names") or None)


def _xgboost_booster(content: bytes) -> Any:
    import xgboost

    return xgboost.Booster(model_file=bytearray(content))


def _xgboost_outputs(booster: Any) -> _Predictor:
    import xgboost

    def predict(X: np.ndarray) -> Predictions:
        matrix = xgboost.DMatrix(X, feature_names=booster.feature_names)
        return {"raw score": np.asarray(booster.predict(matrix, output_margin=True)),
                "predict": np.asarray(booster.predict(matrix))}
    return predict
