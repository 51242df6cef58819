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

Two options change predictions, off by default, for scikit-learn models only
(`StripOptions`): the thresholds moved off the training values' midpoints
(`strip_thresholds`) and a regressor's leaf values rounded (`strip_rounding`); the check
then compares what they leave unchanged (`strip_check`), and with the training labels the
accuracy (or R²) before and after is reported.
"""

from __future__ import annotations

import dataclasses
import io
import json
import pickle
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from treeleaks.defences.strip_boosters import (
    LIGHTGBM_KEPT,
    XGBOOST_KEPT,
    strip_lightgbm,
    strip_xgboost,
    xgboost_rounds_kept,
)
from treeleaks.defences.strip_check import (
    N_RANDOM,
    Predictions,
    compare,
    outside_moves,
    reloaded,
)
from treeleaks.defences.strip_inputs import (
    Categories,
    Codes,
    InputColumn,
    Numbers,
    random_inputs,
)
from treeleaks.defences.strip_pipeline import pipeline_columns, strip_pipeline
from treeleaks.defences.strip_rounding import round_leaf_values
from treeleaks.defences.strip_sklearn import kept_fields, strip_estimator
from treeleaks.defences.strip_tables import TableInputs, table_inputs
from treeleaks.defences.strip_thresholds import move_thresholds
from treeleaks.defences.strip_wrappers import strip_booster_wrapper, strip_search
from treeleaks.runtime.errors import TreeleaksError, UnsupportedModelError
from treeleaks.wrapper_kinds import LIGHTGBM_WRAPPERS, XGBOOST_WRAPPERS, is_search

FORMATS = ("skops", "pickle", "joblib", "lightgbm", "xgboost", "xgboost-ubj")
THRESHOLD_CHOICES = ("simplest",)
_Predictor = Callable[[np.ndarray], Predictions]


class StripError(TreeleaksError):
    """The file holds something `strip` does not strip, or rows it cannot compare on."""


@dataclass(frozen=True)
class StripOptions:
    """The options that change predictions: ``thresholds`` ("simplest": moved off the
    training values' midpoints) and ``round_values`` (a regressor's leaf values to that
    many significant digits); None leaves them as they are."""

    thresholds: str | None = None
    round_values: int | None = None


@dataclass(frozen=True)
class Score:
    """Accuracy (a classifier) or R² (a regressor) on the custodian's rows, before and
    after."""

    metric: str
    before: float
    after: float


@dataclass(frozen=True)
class Stripped:
    """The stripped file's bytes, what was removed or neutralised, what the options
    changed, the inputs its predictions were compared on and how, what it keeps of the
    training rows because prediction needs it, and the outputs compared (the framework's
    raw booster and the scikit-learn wrapper people load it in, or the estimator's own)."""

    content: bytes
    kind: str
    removed: list[str]
    n_rows: int  # the custodian's rows compared on (0 without them)
    n_random: int
    changes: list[str] = field(default_factory=list)
    compared: list[str] = field(default_factory=list)
    score: Score | None = None
    kept: list[str] = field(default_factory=list)  # the fields prediction reads, each a line
    outputs: list[str] = field(default_factory=list)  # what was compared: the faces' outputs
    checked: str = "the file written was loaded back without treeleaks"


@dataclass(frozen=True)
class _Plan:
    """One file format's stripping: the stripped bytes, what was removed, a predictor for
    the original and a loader for the bytes, the input columns as the framework reads them
    (the random inputs are drawn over them) and the feature names; and what the options
    changed: the thresholds moved per feature, whether the model reads float32, the most a
    prediction may move, and the lines saying so."""

    kind: str
    content: bytes
    removed: list[str]
    original: _Predictor
    load: Callable[[bytes], _Predictor]
    framework: str
    columns: list[InputColumn]
    names: list[str] | None
    moves: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    float32: bool = False
    tolerance: float = 0.0
    changes: list[str] = field(default_factory=list)
    metric: str | None = None
    in_columns: bool = False  # random rows in the custodian's own columns (a pipeline's)
    kept: list[str] = field(default_factory=list)


def strip(model: Any, file_format: str, rows: Any = None, n_random: int = N_RANDOM,
          labels: Any = None, options: StripOptions = StripOptions(),
          released: Any = None) -> Stripped:
    """Strip ``model`` (what a file of ``file_format`` holds, one of `FORMATS`) and prove
    the result predicts as before (within ``options``) on ``rows`` (a data frame of the
    model's feature columns, or an array; a pipeline's: a frame of its own columns;
    ``labels`` their labels, for the score) and on ``n_random`` random inputs (a pipeline's
    drawn in its columns from ``released``, the file's IR); raises `StripError`,
    `UnsupportedModelError` or `StripCheckError` (nothing to write) with one line."""
    _check_request(file_format, options)
    plan, matrix = _planned(model, file_format, rows, options, released)
    stripped = reloaded(plan.load, plan.content, plan.framework)
    inputs, compared = _check_inputs(plan, matrix, n_random)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # feature names, NaN importances: not our concern
        for X, where in inputs:
            expected = plan.original(X)
            compare(expected, stripped(X), where, plan.tolerance)
        score = None if matrix is None or labels is None or plan.metric is None else Score(
            plan.metric, _score(plan.original(matrix), labels, plan.metric),
            _score(stripped(matrix), labels, plan.metric))
    return Stripped(plan.content, plan.kind, plan.removed,
                    0 if matrix is None else len(matrix), n_random, plan.changes, compared,
                    score, plan.kept, list(expected))


def _check_request(file_format: str, options: StripOptions) -> None:
    """One line for a format `strip` does not write or a --thresholds choice it lacks."""
    if file_format not in FORMATS:
        raise StripError(f"unknown format {file_format!r}; strip writes {', '.join(FORMATS)}")
    if options.thresholds not in (None, *THRESHOLD_CHOICES):
        raise StripError(f"--thresholds {options.thresholds!r}: the one choice is "
                         f"{', '.join(THRESHOLD_CHOICES)}")


def _planned(model: Any, file_format: str, rows: Any, options: StripOptions,
             released: Any) -> tuple[_Plan, Any]:
    """The stripping of what the file holds, and the custodian's rows as it reads them
    (None without them)."""
    if file_format in ("lightgbm", "xgboost", "xgboost-ubj"):
        _refuse_options(options, "LightGBM" if file_format == "lightgbm" else "XGBoost")
        plan = (_lightgbm if file_format == "lightgbm" else _xgboost)(model, file_format)
        matrix = None if rows is None else _booster_rows(rows, plan.names,
                                                          len(plan.columns))
        return plan, matrix
    return _fitted(model, file_format, rows, options, released)


def _check_inputs(plan: _Plan, matrix: Any, n_random: int
                  ) -> tuple[list[tuple[Any, str]], list[str]]:
    """The inputs the predictions are compared on (the custodian's rows, then the random
    inputs, moved outside the thresholds' moves), each with its name, and the lines saying
    how they are compared."""
    probes = random_inputs(plan.columns, n_random)
    exact = "identical" if not plan.tolerance else f"within {plan.tolerance:.3g}"
    inputs = [] if matrix is None else [(matrix, "rows of --data")]
    compared = [] if matrix is None else [f"{exact} on the {len(matrix):,} rows of --data"]
    if plan.moves:
        probes = outside_moves(probes, plan.moves, plan.float32)
        compared.append(f"{exact} on {n_random:,} random inputs around the thresholds, "
                        "each value that lay between a threshold's old and new place set "
                        "to the lower of the two (where both split it alike)")
    else:
        compared.append(f"{exact} on {n_random:,} random inputs around the thresholds"
                        + _drawn_words(plan))
    inputs.append((probes, "random inputs"))
    return inputs, compared


def _drawn_words(plan: _Plan) -> str:
    """What the random inputs hold beyond numbers, in words."""
    gaps = any(column.gaps for column in plan.columns)
    unseen = any(isinstance(column, Codes) or (isinstance(column, Categories)
                                               and column.unseen) for column in plan.columns)
    held = [*(["gaps"] if gaps else []), *(["categories never seen"] if unseen else [])]
    return ((" in your columns" if plan.in_columns else "")
            + (f", {' and '.join(held)} included" if held else ""))


def _fitted(model: Any, file_format: str, rows: Any, options: StripOptions, released: Any
            ) -> tuple[_Plan, Any]:
    """The stripping of a fitted object from a skops archive or a pickle: an estimator, a
    pipeline, a booster's scikit-learn wrapper, or a search around one (its model stripped,
    then put back in the search)."""
    kind = type(model).__name__
    if is_search(model):
        if not hasattr(model, "best_estimator_"):
            raise StripError(f"this {kind} holds no fitted model (refit=False): nothing "
                             "predicts, so there is nothing to strip")
        inner, matrix = _fitted(model.best_estimator_, file_format, rows, options, released)
        dump, load = _SERIALISERS[file_format]
        wrapper, removed = strip_search(model, load(inner.content))
        return dataclasses.replace(
            inner, kind=f"{inner.kind} in {kind}", content=dump(wrapper),
            removed=inner.removed + removed, original=_sklearn_outputs(model),
            load=lambda content: _sklearn_outputs(load(content))), matrix
    if kind in LIGHTGBM_WRAPPERS + XGBOOST_WRAPPERS:
        return _booster_wrapper(model, file_format, rows, options)
    if kind == "Pipeline":
        return _pipeline(model, file_format, rows, options, released)
    return _sklearn(model, file_format, rows, options)


def _booster_wrapper(wrapper: Any, file_format: str, rows: Any, options: StripOptions
                     ) -> tuple[_Plan, Any]:
    """A LightGBM or XGBoost scikit-learn wrapper's stripping: its booster's, the booster
    put back in a copy of the wrapper without the losses it saw."""
    kind = type(wrapper).__name__
    _refuse_options(options, "LightGBM" if kind in LIGHTGBM_WRAPPERS else "XGBoost")
    inner, stripped, removed = _stripped_wrapper(wrapper)
    dump, load = _SERIALISERS[file_format]
    matrix = None if rows is None else _booster_rows(rows, inner.names, len(inner.columns))
    return dataclasses.replace(
        inner, kind=f"{inner.kind} in {kind}", content=dump(stripped),
        removed=inner.removed + removed, original=_sklearn_outputs(wrapper),
        load=lambda content: _sklearn_outputs(load(content)),
        framework=f"{inner.framework} ({file_format})",
        metric="R²" if "Regressor" in kind else "accuracy"), matrix


def _stripped_wrapper(wrapper: Any) -> tuple[_Plan, Any, list[str]]:
    """A LightGBM or XGBoost scikit-learn wrapper stripped: its booster's plan, a copy of
    the wrapper holding the stripped booster, and what was removed from the wrapper."""
    if type(wrapper).__name__ in LIGHTGBM_WRAPPERS:
        import lightgbm

        inner = _lightgbm(wrapper.booster_.model_to_string(), "lightgbm")
        booster = lightgbm.Booster(model_str=inner.content.decode("utf-8"))
    else:
        data = json.loads(bytes(wrapper.get_booster().save_raw(raw_format="json")))
        inner = _xgboost(data, "xgboost")
        booster = _xgboost_booster(inner.content)
    stripped, removed = strip_booster_wrapper(wrapper, booster)
    return inner, stripped, removed


def _final_stripped(final: Any) -> tuple[Any, list[str], list[str]]:
    """A pipeline's last step stripped, what was removed, and what it keeps to predict."""
    if type(final).__name__ in LIGHTGBM_WRAPPERS + XGBOOST_WRAPPERS:
        inner, stripped, removed = _stripped_wrapper(final)
        return stripped, inner.removed + removed, inner.kept
    stripped, removed = strip_estimator(final)
    return stripped, removed, kept_fields(final)


def _refuse_options(options: StripOptions, framework: str) -> None:
    """The options edit scikit-learn models only: one line for a booster's file."""
    if options.thresholds is not None or options.round_values is not None:
        given = "--thresholds" if options.thresholds is not None else "--round-values"
        raise UnsupportedModelError(
            f"{given} edits scikit-learn models only; a {framework} file is stripped with "
            f"its thresholds and leaf values as they are: drop {given}")


def _score(predictions: Predictions, labels: Any, metric: str) -> float:
    predicted = next(v for k, v in predictions.items() if k.endswith(".predict"))
    truth = np.asarray(labels)
    if metric == "accuracy":
        return float(np.mean(predicted == truth))
    truth = truth.astype(np.float64)
    residual = float(np.sum((truth - predicted) ** 2))
    total = float(np.sum((truth - truth.mean()) ** 2))
    return 1.0 - residual / total if total else float("nan")


def _booster_rows(rows: Any, names: list[str] | None, n_features: int) -> Any:
    """The rows a booster is checked on: a frame with text columns as a frame, each text
    column a pandas category (LightGBM and XGBoost code it by the categories their file
    keeps), else the feature matrix."""
    import pandas as pd

    columns = list(getattr(rows, "columns", []))
    text = [c for c in columns if not pd.api.types.is_numeric_dtype(rows[c])]
    if not text:
        return _matrix(rows, names, n_features)
    if names and set(names) <= set(columns):
        rows = rows[names]
    if rows.shape[1] != n_features:
        raise StripError(f"the rows to check on have {rows.shape[1]} feature columns but "
                         f"the model reads {n_features}; give the training data with its "
                         "label column named by --label")
    return rows.astype({c: "category" for c in text if c in rows.columns})


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


def _columns(rows: Any, names: list[str] | None) -> Any:
    """The custodian's rows as a model fitted on a table reads them: its columns, by name."""
    missing = [n for n in names or [] if n not in getattr(rows, "columns", [])]
    if names is None or missing:
        raise StripError(f"the rows to check on lack the model's column(s) "
                         f"{', '.join(map(repr, missing[:5]))}; give the training data "
                         "with its label column named by --label")
    return rows[names]


def _sklearn(estimator: Any, file_format: str, rows: Any, options: StripOptions
             ) -> tuple[_Plan, np.ndarray | None]:
    stripped, removed = strip_estimator(estimator)
    table = table_inputs(estimator)
    names, thresholds = _names(estimator), _sklearn_thresholds(estimator, table)
    if table is not None:
        columns = table.columns(thresholds)
    else:
        gaps = _routes_gaps(estimator, len(thresholds))
        columns = [Numbers(None, cuts, gaps) for cuts in thresholds]
    if table is not None and table.categories:
        if options.thresholds is not None:
            raise UnsupportedModelError(
                "--thresholds moves numeric splits only; this model also splits categories "
                "(categorical_features): drop --thresholds")
        matrix = None if rows is None else _columns(rows, names)
    else:
        matrix = None if rows is None else _matrix(rows, names, len(thresholds))
    changes, moves, tolerance = _edited(stripped, matrix, options)
    dump, load = _SERIALISERS[file_format]
    plan = _Plan(type(estimator).__name__, dump(stripped), removed, _sklearn_outputs(estimator),
                 lambda content: _sklearn_outputs(load(content)), f"scikit-learn ({file_format})",
                 columns, names, moves, not hasattr(estimator, "_predictors"), tolerance,
                 changes, "R²" if "Regressor" in type(estimator).__name__ else "accuracy",
                 kept=kept_fields(estimator))
    return plan, matrix


def _edited(stripped: Any, matrix: np.ndarray | None, options: StripOptions
            ) -> tuple[list[str], dict[int, list[tuple[float, float]]], float]:
    """The options' edits of a stripped scikit-learn model, in place: the leaf values
    rounded and the thresholds moved; the lines saying so, the moves per feature and the
    most a prediction may move."""
    changes: list[str] = []
    moves: dict[int, list[tuple[float, float]]] = {}
    tolerance = 0.0
    if options.round_values is not None:
        rounded = round_leaf_values(stripped, options.round_values)
        tolerance = rounded.bound
        changes.append(rounded.summary())
    if options.thresholds == "simplest":
        moved = move_thresholds(stripped, matrix)
        moves = moved.moves
        changes.append(moved.summary())
    return changes, moves, tolerance


def _routes_gaps(estimator: Any, n_features: int) -> bool:
    """Whether ``estimator`` predicts rows with gaps (scikit-learn's trees and forests route
    them since 1.4; its gradient boosting refuses them), so the check must try them."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimator.predict(np.full((1, n_features), np.nan))
    except ValueError:
        return False
    return True


def _pipeline(pipeline: Any, file_format: str, rows: Any, options: StripOptions,
              released: Any) -> tuple[_Plan, Any]:
    """A pipeline's stripping: its tree model's, its steps' unread statistics neutralised,
    checked on the custodian's rows as they are and on random rows in their columns."""
    if options.thresholds is not None or options.round_values is not None:
        given = "--thresholds" if options.thresholds is not None else "--round-values"
        raise UnsupportedModelError(
            f"{given} edits a tree model's own file; a pipeline is stripped with its "
            f"thresholds and leaf values as they are: drop {given}")
    if released is None or released.inputs is None:
        raise StripError("a pipeline is checked on random rows in its own columns: give its "
                         "IR (released=treeleaks.load_model of the file)")
    stripped, removed, kept, final_kept = strip_pipeline(pipeline, _final_stripped)
    lines = [f"{', '.join(kept)}: the pipeline's steps read them to predict (inspect says "
             "what each gives away)"] if kept else []
    lines += final_kept
    dump, load = _SERIALISERS[file_format]
    original = _sklearn_outputs(pipeline)
    thresholds = released.thresholds()
    unseen = _predicts_unseen(original, pipeline_columns(released.inputs, thresholds, True))
    final = type(pipeline.steps[-1][1]).__name__
    plan = _Plan(f"Pipeline ({final})", dump(stripped), removed, original,
                 lambda content: _sklearn_outputs(load(content)),
                 f"scikit-learn ({file_format})",
                 pipeline_columns(released.inputs, thresholds, unseen), None,
                 metric="R²" if "Regressor" in final else "accuracy", in_columns=True,
                 kept=lines)
    return plan, rows


def _predicts_unseen(original: _Predictor, columns: list[InputColumn]) -> bool:
    """Whether the pipeline predicts rows with categories it never saw (an encoder that
    raises on them, ``handle_unknown='error'``, does not)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            original(random_inputs(columns, 50))
    except ValueError:
        return False
    return True


def _sklearn_outputs(estimator: Any) -> _Predictor:
    """The estimator's own predict (and predict_proba), as people call it."""
    kind = type(estimator).__name__

    def predict(X: np.ndarray) -> Predictions:
        out = {f"{kind}.predict": np.asarray(estimator.predict(X))}
        if hasattr(estimator, "predict_proba"):
            out[f"{kind}.predict_proba"] = np.asarray(estimator.predict_proba(X))
        return out
    return predict


def _sklearn_thresholds(estimator: Any, table: TableInputs | None = None
                        ) -> list[np.ndarray]:
    """Each input column's numeric split thresholds over every tree (trees or histogram
    predictors, whose features ``table`` places among the input columns)."""
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    if table is not None:
        for per_round in estimator._predictors:
            for predictor in per_round:
                nodes = predictor.nodes
                inner = (nodes["is_leaf"] == 0) & (nodes["is_categorical"] == 0)
                pairs.append((table.column_of[nodes["feature_idx"][inner]],
                              nodes["num_threshold"][inner]))
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
    categories: dict[int, int] = {}  # per categorical feature, one past its largest code
    for tree in trees:
        pending = [tree["tree_structure"]]
        while pending:
            node = pending.pop()
            if "split_feature" in node:
                feature = int(node["split_feature"])
                if node.get("decision_type") == "==":  # a category split: codes "1||4"
                    codes = [int(c) for c in str(node["threshold"]).split("||")]
                    categories[feature] = max(categories.get(feature, 0), max(codes) + 1)
                else:
                    pairs.append((np.array([feature]), np.array([node["threshold"]])))
                pending += [node["left_child"], node["right_child"]]
    for j, listed in enumerate(original.pandas_categorical or []):
        if j < len(categorical := sorted(categories)):
            categories[categorical[j]] = max(categories[categorical[j]], len(listed))
    return _Plan("LightGBM model", stripped.encode("utf-8"), removed, _lightgbm_outputs(original),
                 lambda content: _lightgbm_outputs(lightgbm.Booster(
                     model_str=content.decode("utf-8"))), "LightGBM",
                 _booster_columns(_per_feature(pairs, original.num_feature()), categories),
                 original.feature_name(), kept=[LIGHTGBM_KEPT])


def _lightgbm_outputs(booster: Any) -> _Predictor:
    return lambda X: {"Booster raw score": np.asarray(booster.predict(X, raw_score=True)),
                      "Booster.predict": np.asarray(booster.predict(X))}


def _xgboost(data: Any, file_format: str) -> _Plan:
    booster_name = data["learner"]["gradient_booster"].get("name")
    if booster_name != "gbtree":
        raise UnsupportedModelError(f"cannot strip an XGBoost {booster_name!r} model; "
                                    "treeleaks strips tree boosters (gbtree)")
    stripped, removed = strip_xgboost(data)
    trees = data["learner"]["gradient_booster"]["model"]["trees"]
    numeric = [(np.asarray(t["left_children"]) >= 0) & (np.asarray(
        t.get("split_type", [0] * len(t["left_children"]))) == 0) for t in trees]
    pairs = [(np.asarray(t["split_indices"])[split],
              np.asarray(t["split_conditions"], dtype=np.float64)[split])
             for t, split in zip(trees, numeric, strict=True)]
    n_features = int(data["learner"]["learner_model_param"]["num_feature"])
    content = json.dumps(stripped).encode("utf-8")
    if file_format == "xgboost-ubj":  # written back as it came, binary JSON
        content = bytes(_xgboost_booster(content).save_raw(raw_format="ubj"))
    source = json.dumps(data).encode("utf-8")
    face = _xgboost_face(data, source)
    return _Plan("XGBoost model", content, removed, _xgboost_outputs(source, face),
                 lambda content: _xgboost_outputs(content, face), "XGBoost",
                 _booster_columns(_per_feature(pairs, n_features), _xgboost_categories(trees)),
                 data["learner"].get("feature_names") or None,
                 kept=[XGBOOST_KEPT, *xgboost_rounds_kept(data)])


def _booster_columns(thresholds: list[np.ndarray], categories: dict[int, int]
                     ) -> list[InputColumn]:
    """A booster's input columns: codes where it splits on categories (``categories``: one
    past the largest code per feature), numbers elsewhere; every one may hold gaps."""
    return [Codes(None, categories[j]) if j in categories else Numbers(None, cuts, gaps=True)
            for j, cuts in enumerate(thresholds)]


def _xgboost_categories(trees: list[dict[str, Any]]) -> dict[int, int]:
    """Per categorical feature of an XGBoost model, one past the largest code a split
    lists."""
    categories: dict[int, int] = {}
    for tree in trees:
        features = np.asarray(tree["split_indices"])
        for node, start, size in zip(tree.get("categories_nodes", []),
                                     tree.get("categories_segments", []),
                                     tree.get("categories_sizes", []), strict=False):
            codes = tree["categories"][start:start + size]
            feature = int(features[node])
            categories[feature] = max(categories.get(feature, 0), max(codes, default=-1) + 1)
    return categories


def _xgboost_booster(content: bytes) -> Any:
    import xgboost

    return xgboost.Booster(model_file=bytearray(content))


def _xgboost_face(data: dict[str, Any], source: bytes) -> str | None:
    """The scikit-learn wrapper people load the file in (``XGBClassifier.load_model``, or
    ``XGBRegressor``'s), which predicts with the trees up to the round early stopping chose:
    its name, or None when the objective has none or the original does not load in it."""
    objective = str(data["learner"].get("objective", {}).get("name", ""))
    if objective.startswith("rank:"):
        return None
    face = ("XGBClassifier" if objective.startswith(("binary:", "multi:"))
            else "XGBRegressor")
    try:
        _xgboost_wrapper(face, source)
    except Exception:  # the original itself does not load there: no face to compare
        return None
    return face


def _xgboost_wrapper(face: str, content: bytes) -> Any:
    import xgboost

    wrapper = getattr(xgboost, face)()
    wrapper.load_model(bytearray(content))
    return wrapper


def _xgboost_outputs(content: bytes, face: str | None) -> _Predictor:
    """The raw booster's outputs for ``content`` (a model's bytes) and, with ``face``, its
    scikit-learn wrapper's (prediction up to the round early stopping chose)."""
    import xgboost

    booster = _xgboost_booster(content)
    wrapper = None if face is None else _xgboost_wrapper(face, content)

    def predict(X: np.ndarray) -> Predictions:
        matrix = xgboost.DMatrix(X, feature_names=booster.feature_names,
                                 enable_categorical=True)
        out = {"Booster margin": np.asarray(booster.predict(matrix, output_margin=True)),
               "Booster.predict": np.asarray(booster.predict(matrix))}
        if wrapper is not None:
            out[f"{face}.predict"] = np.asarray(wrapper.predict(X))
            if hasattr(wrapper, "predict_proba"):
                out[f"{face}.predict_proba"] = np.asarray(wrapper.predict_proba(X))
        return out
    return predict
