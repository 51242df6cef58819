"""The scikit-learn pipeline frontend: a `Pipeline` whose last step is a tree model, its
steps before it read as what they do to each of the custodian's columns.

The attacks run on the tree model's own features; the model's `InputMap` (``inputs``) says
how each of the custodian's columns becomes them, so rows are encoded to be scored and every
result is decoded back into the custodian's columns. A scaler is affine per column: its
operations are carried back into the tree's thresholds at read time
(`treeleaks.frontends.thresholds_back`), so the IR is already in the custodian's units.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from treeleaks.frontends.gaps import spell_imputed
from treeleaks.frontends.sklearn import REGRESSORS, SUPPORTED, from_sklearn
from treeleaks.frontends.sklearn_boosting import BOOSTERS, REGRESSION_BOOSTERS
from treeleaks.frontends.sklearn_steps import Track, apply_step
from treeleaks.frontends.stored_steps import step_fields, step_list
from treeleaks.frontends.thresholds_back import thresholds_back
from treeleaks.ir.inputs import CodedColumn, InputColumn, InputMap, NumberColumn, OneHotColumn
from treeleaks.ir.model import ReleasedModel
from treeleaks.runtime.errors import UnsupportedModelError

TREE_MODELS = SUPPORTED + BOOSTERS + REGRESSORS + REGRESSION_BOOSTERS
_FLOAT64_TREES = ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor")


def is_pipeline(estimator: Any) -> bool:
    """Whether ``estimator`` is a scikit-learn pipeline (or a bare ColumnTransformer)."""
    return type(estimator).__name__ in ("Pipeline", "ColumnTransformer")


def from_pipeline(pipeline: Any, label_name: str = "label") -> ReleasedModel:
    """The IR of a fitted pipeline's tree model, in the custodian's columns.

    Regressors and stripped files are read as they are (the door judges them). Raises
    `UnsupportedModelError` naming the step treeleaks cannot read, or the last step when it
    is no tree model.
    """
    if type(pipeline).__name__ != "Pipeline":
        raise UnsupportedModelError(
            f"a {type(pipeline).__name__} alone holds no tree model; save the Pipeline whose "
            "last step is the tree model")
    name, final = _flattened(pipeline)[-1]
    kind = type(final).__name__
    if kind not in TREE_MODELS:
        raise UnsupportedModelError(
            f"the pipeline's last step {name!r} is a {kind}, not a tree model treeleaks reads "
            f"({', '.join(TREE_MODELS)})")
    tracks, sparse = [Track(c) for c in _input_names(pipeline)], False
    for step_name, step in _flattened(pipeline)[:-1]:
        tracks, sparse = apply_step(step_name, step, tracks, sparse)
    if len(tracks) != int(final.n_features_in_):
        raise UnsupportedModelError(
            f"the pipeline's steps give {len(tracks)} features but its {kind} reads "
            f"{int(final.n_features_in_)}: an edited file?")
    names = _feature_names(tracks)
    model = from_sklearn(final, feature_names=names, label_name=label_name,
                         allow_regression=True, counts_removed_ok=True)
    position, gap_of = _tree_gaps(model, names, tracks, kind)
    model = _carried_back(model, tracks, kind not in _FLOAT64_TREES, position)
    steps = tuple(type(s).__name__ for _, s in _flattened(pipeline)[:-1])
    inputs = InputMap(_columns(tracks, position, gap_of), tuple(model.feature_names), steps)
    model = _imputed_gaps(model, inputs)
    model.inputs = inputs
    model.facts = {**model.facts, "pipeline steps": step_list(pipeline),
                   "your columns": ", ".join(model.inputs.names)}
    about = model.described()
    model.description = dataclasses.replace(
        about, estimator=f"{about.estimator} in a Pipeline ({', '.join(steps)})",
        fields=about.fields + tuple(step_fields(pipeline)))
    return model


def _flattened(pipeline: Any) -> list[tuple[str, Any]]:
    """The pipeline's steps, nested pipelines' steps in their place."""
    out: list[tuple[str, Any]] = []
    for name, step in pipeline.steps:
        if type(step).__name__ == "Pipeline":
            out += [(f"{name}/{inner}", s) for inner, s in _flattened(step)]
        else:
            out.append((name, step))
    return out


def _input_names(pipeline: Any) -> list[str]:
    """The custodian's columns, as the pipeline was fitted on them."""
    names = getattr(pipeline, "feature_names_in_", None)
    if names is not None:
        return [str(n) for n in names]
    return [f"x{j}" for j in range(int(pipeline.n_features_in_))]


def _feature_names(tracks: list[Track]) -> list[str]:
    """The model's features named after the custodian's columns."""
    names = []
    for track in tracks:
        if track.kind == "hot":
            assert track.encoding is not None
            names.append(f"{track.column}={track.encoding.categories[track.index]}")
        elif track.kind == "gap":
            names.append(f"{track.column} missing")
        else:
            names.append(track.column)
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise UnsupportedModelError(
            f"the pipeline feeds {', '.join(map(repr, twice))} to the tree more than once "
            "(through several branches); treeleaks maps each column through one branch")
    return names


def _tree_gaps(model: ReleasedModel, names: list[str], tracks: list[Track], kind: str
               ) -> tuple[np.ndarray, dict[int, int]]:
    """Where each step's feature sits among the model's, and the gap feature of each a tree
    fitted on gaps spelled out (`frontends.tree_routing`): a value the steps passed on with
    its gaps. A booster's own map of gaps and categories is refused: the two maps do not
    compose yet."""
    if model.inputs is None:
        return np.arange(len(names)), {}
    if kind in BOOSTERS + REGRESSION_BOOSTERS:
        raise UnsupportedModelError(
            f"the pipeline's {kind} routes gaps or categories of its own, after the steps "
            "before it: the two maps are not composed yet; save the steps' output with its "
            "model alone, or a pipeline whose imputer fills every gap")
    position = np.array([model.feature_names.index(name) for name in names])
    gap_of = {}
    for column in model.inputs.columns:
        if isinstance(column, NumberColumn) and column.gap is not None:
            j = names.index(column.name)
            if tracks[j].kind != "value" or tracks[j].filled:
                raise UnsupportedModelError(
                    f"the pipeline's {kind} routes gaps in {column.name!r}, which its steps "
                    "never leave missing: an edited file?")
            gap_of[j] = column.gap
    return position, gap_of


def _carried_back(model: ReleasedModel, tracks: list[Track], float32: bool,
                  position: np.ndarray) -> ReleasedModel:
    """The model with every threshold in the column's own units, as doubles compare: a
    scaled feature's carried back through its scaler, a tree's float32 reading undone
    (``position``: each track's feature among the model's)."""
    trees = []
    for tree in model.trees:
        threshold = np.array(tree.threshold, dtype=np.float64)
        for j, track in enumerate(tracks):
            at = np.flatnonzero(tree.feature == position[j])
            if (track.ops or float32) and at.size:
                threshold[at] = thresholds_back(threshold[at], track.ops, float32)
        trees.append(dataclasses.replace(tree, threshold=threshold))
    # training values the file gives (a booster's bin edges) stay only where no step moved
    # them: a scaled column's are in the scaler's units
    revealed = {j: v for j, v in model.revealed.items() if not tracks[j].ops}
    carried = dataclasses.replace(model, trees=trees, revealed=revealed)
    carried.validate()
    return carried


def _imputed_gaps(model: ReleasedModel, inputs: InputMap) -> ReleasedModel:
    """The model with each gap an imputer marked (its indicator) routed as the pipeline
    routes it, the fill's way at every split on the value (`gaps.spell_imputed`)."""
    imputed = {c.feature: (c.gap, float(c.fill)) for c in inputs.columns
               if isinstance(c, NumberColumn) and c.gap is not None and c.fill is not None}
    if not imputed:
        return model
    trees = [spell_imputed(tree, imputed, inputs.feature_names, index)
             for index, tree in enumerate(model.trees)]
    spelled = dataclasses.replace(model, trees=trees)
    spelled.validate()
    return spelled


def _columns(tracks: list[Track], position: np.ndarray, gap_of: dict[int, int]
             ) -> tuple[InputColumn, ...]:
    """The input map's columns: each custodian's column and the model features it feeds
    (``position``: each track's; ``gap_of``: the gap feature the model spelled out for a
    track)."""
    fed: dict[str, list[int]] = {}
    for j, track in enumerate(tracks):
        fed.setdefault(track.column, []).append(j)
    columns = []
    for name, features in fed.items():
        column = _column(name, features, tracks)
        track = column.feature if isinstance(column, NumberColumn) else None
        column = _placed(column, position)
        if track in gap_of:  # the model's own gap feature (already one of its indices)
            column = dataclasses.replace(column, gap=gap_of[track])
        columns.append(column)
    return tuple(columns)


def _placed(column: InputColumn, position: np.ndarray) -> InputColumn:
    """``column`` with its tracks' indices turned into the model's feature indices."""
    if isinstance(column, OneHotColumn):
        return dataclasses.replace(column, features=tuple(int(position[f])
                                                          for f in column.features))
    if isinstance(column, NumberColumn):
        return dataclasses.replace(
            column, feature=int(position[column.feature]),
            gap=None if column.gap is None else int(position[column.gap]))
    return dataclasses.replace(column, feature=int(position[column.feature]))


def _column(name: str, features: list[int], tracks: list[Track]) -> InputColumn:
    gaps = [f for f in features if tracks[f].kind == "gap"]
    rest = [f for f in features if tracks[f].kind != "gap"]
    kinds = {tracks[f].kind for f in rest}
    encodings = {id(tracks[f].encoding) for f in rest}
    if kinds == {"hot"} and len(encodings) == 1 and not gaps:
        encoding = tracks[rest[0]].encoding
        assert encoding is not None
        return OneHotColumn(name, tuple(rest), tuple(encoding.categories[tracks[f].index]
                                                     for f in rest),
                            exactly_one=encoding.exactly_one, other=encoding.other)
    if len(rest) == 1 and kinds == {"value"} and len(gaps) <= 1:
        return NumberColumn(name, rest[0], gap=gaps[0] if gaps else None,
                            fill=tracks[rest[0]].fill)
    if len(rest) == 1 and kinds == {"code"} and not gaps:
        encoding = tracks[rest[0]].encoding
        assert encoding is not None
        return CodedColumn(name, rest[0], encoding.categories, unknown=encoding.unknown)
    raise UnsupportedModelError(
        f"the pipeline feeds the column {name!r} to the tree through several branches "
        f"({len(features)} features); treeleaks maps each column through one branch")
