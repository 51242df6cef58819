"""The scikit-learn pipeline frontend: a `Pipeline` whose last step is a tree model, its
steps before it read as what they do to each of the custodian's columns.

The attacks run on the tree model's own features; the model's `InputMap` (``inputs``) says
how each of the custodian's columns becomes them, so rows are encoded to be scored and every
result is decoded back into the custodian's columns. A scaler is affine per column: its
operations are carried back into the tree's thresholds at read time
(`treeleaks.frontends.thresholds_back`), so the IR is already in the custodian's units.
A model that routes gaps or categories itself (a histogram booster, a tree fitted on gaps)
has its own map from the steps' output to its features; the two are composed, so an
ordinal encoder's codes split natively come back as the custodian's categories and a gap
passed on by the steps comes back as a gap.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from treeleaks.frontends.gaps import spell_imputed, without_gap_features
from treeleaks.frontends.sklearn import REGRESSORS, SUPPORTED, from_sklearn
from treeleaks.frontends.sklearn_boosting import BOOSTERS, REGRESSION_BOOSTERS
from treeleaks.frontends.sklearn_steps import Encoding, Track, apply_step
from treeleaks.frontends.stored_steps import step_fields, step_list
from treeleaks.frontends.thresholds_back import thresholds_back
from treeleaks.ir.inputs import CodedColumn, InputColumn, InputMap, NumberColumn, OneHotColumn
from treeleaks.ir.model import ReleasedModel, Tree
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.wrapper_kinds import LIGHTGBM_WRAPPERS, XGBOOST_WRAPPERS

TREE_MODELS = (SUPPORTED + BOOSTERS + REGRESSORS + REGRESSION_BOOSTERS + LIGHTGBM_WRAPPERS
               + XGBOOST_WRAPPERS)
# the models that compare a feature as a double (the others read it as a float32 first)
_FLOAT64_TREES = ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor",
                  *LIGHTGBM_WRAPPERS)


def is_pipeline(estimator: Any) -> bool:
    """Whether ``estimator`` is a scikit-learn pipeline (or a bare ColumnTransformer)."""
    return type(estimator).__name__ in ("Pipeline", "ColumnTransformer")


def from_pipeline(pipeline: Any, label_name: str = "label") -> ReleasedModel:
    """The IR of a fitted pipeline's tree model, in the custodian's columns.

    Regressors and stripped files are read as they are (the door judges them). Raises
    `UnsupportedModelError` naming the step treeleaks cannot read, or the last step when it
    is no tree model.
    """
    final, kind = _final_step(pipeline)
    tracks = _tracks(pipeline, final, kind)
    names = _feature_names(tracks)
    model = _final_model(final, names, label_name, _passed_gaps(names, tracks))
    model, own = _settled_gaps(model, _own_columns(model, names, tracks, kind), tracks, kind)
    position = np.array([c.feature if isinstance(c, NumberColumn) else -1 for c in own])
    model = _carried_back(model, tracks, kind not in _FLOAT64_TREES, position)
    steps = tuple(type(s).__name__ for _, s in _flattened(pipeline)[:-1])
    columns = _columns(tracks, own)
    model = dataclasses.replace(model, feature_names=_category_names(model, columns))
    inputs = InputMap(columns, tuple(model.feature_names), steps)
    model = _imputed_gaps(model, inputs)
    model.inputs = inputs
    model.facts = {**model.facts, "pipeline steps": step_list(pipeline),
                   "your columns": ", ".join(model.inputs.names)}
    about = model.described()
    model.description = dataclasses.replace(
        about, estimator=f"{about.estimator} in a Pipeline ({', '.join(steps)})",
        fields=about.fields + tuple(step_fields(pipeline)))
    return model


def _final_step(pipeline: Any) -> tuple[Any, str]:
    """The pipeline's tree model and its class name; refused for a bare ColumnTransformer
    or a last step that is no tree model."""
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
    return final, kind


def _tracks(pipeline: Any, final: Any, kind: str) -> list[Track]:
    """What the steps before the tree model make of the custodian's columns: one track per
    feature the model reads, refused unless they number the model's features."""
    tracks, sparse = [Track(c) for c in _input_names(pipeline)], False
    for step_name, step in _flattened(pipeline)[:-1]:
        tracks, sparse = apply_step(step_name, step, tracks, sparse)
    if len(tracks) != int(final.n_features_in_):
        raise UnsupportedModelError(
            f"the pipeline's steps give {len(tracks)} features but its {kind} reads "
            f"{int(final.n_features_in_)}: an edited file?")
    return tracks


def _passed_gaps(names: list[str], tracks: list[Track]) -> frozenset[str]:
    """The coded features whose gaps an encoder passed on: they held gaps, whatever the
    model's splits show."""
    return frozenset(name for name, track in zip(names, tracks) if track.kind == "code"
                     and track.encoding is not None and _nan(track.encoding.missing))


def _settled_gaps(model: ReleasedModel, own: list[InputColumn], tracks: list[Track],
                  kind: str) -> tuple[ReleasedModel, list[InputColumn]]:
    """The model and its own columns without the gap features of tracks the steps never
    leave missing: refused on a model with counts (its routing contradicts its steps),
    dropped from a stripped one (only a split's gap side showed them)."""
    never = _gaps_never_given(own, tracks)
    if not never:
        return model, own
    if model.counts_released:
        name = next(c.name for c in own if isinstance(c, NumberColumn) and c.gap in never)
        raise UnsupportedModelError(
            f"the pipeline's {kind} routes gaps in {name!r}, which its steps never "
            "leave missing: an edited file?")
    model, renumber = without_gap_features(model, never)
    return model, [_renumbered(c, renumber) for c in own]


def _final_model(final: Any, names: list[str], label_name: str, gaps: frozenset[str]
                 ) -> ReleasedModel:
    """The pipeline's tree model over the steps' features ``names`` (``gaps``: the features
    whose gaps an encoder passed on), read as it is: a scikit-learn model, or LightGBM's or
    XGBoost's scikit-learn wrapper (whose booster routes gaps and categories of its own)."""
    kind = type(final).__name__
    if kind in LIGHTGBM_WRAPPERS:
        from treeleaks.frontends.lightgbm import read_lightgbm

        return read_lightgbm(final, feature_names=names, label_name=label_name,
                             counts_removed_ok=True)
    if kind in XGBOOST_WRAPPERS:
        from treeleaks.frontends.xgboost import read_xgboost

        return read_xgboost(final, feature_names=names, label_name=label_name,
                            counts_removed_ok=True)
    return from_sklearn(final, feature_names=names, label_name=label_name,
                        allow_regression=True, counts_removed_ok=True, gaps=gaps)


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


def _own_columns(model: ReleasedModel, names: list[str], tracks: list[Track], kind: str
                 ) -> list[InputColumn]:
    """Per track, how the model itself reads it: one numeric feature, with a gap feature
    where the model routes gaps (a tree fitted on gaps, `frontends.tree_routing`; a
    histogram booster, `frontends.hist_routing`), or one 0/1 feature per category where a
    booster splits it natively. Refuses a routing the steps cannot have fed it."""
    if model.inputs is None:
        return [NumberColumn(name, j) for j, name in enumerate(names)]
    by_name = {column.name: column for column in model.inputs.columns}  # every one named
    own = []
    for name, track in zip(names, tracks):
        column = by_name[name]
        passed = track.kind == "value" and not track.ops and not track.filled
        if isinstance(column, OneHotColumn) and not (track.kind == "code" or passed):
            raise UnsupportedModelError(
                f"the pipeline's {kind} splits {name!r} as categories after "
                f"{_what(track)}; treeleaks reads a booster's categories on a column passed "
                "through unchanged or coded by an OrdinalEncoder")
        own.append(column)
    return own


def _gaps_never_given(own: list[InputColumn], tracks: list[Track]) -> set[int]:
    """The model's gap features of tracks its steps never leave missing (a filled value, a
    0/1 indicator, a code the encoder gives every training row)."""
    never = set()
    for column, track in zip(own, tracks):
        if isinstance(column, NumberColumn) and column.gap is not None and not _may_miss(track):
            never.add(column.gap)
    return never


def _may_miss(track: Track) -> bool:
    """Whether the steps may hand the model a gap on ``track``: a value no imputer filled,
    or a code given to a gap (or to an unseen category) as NaN."""
    if track.kind == "value":
        return not track.filled
    encoding = track.encoding
    return track.kind == "code" and encoding is not None and (
        _nan(encoding.missing) or _nan(encoding.unknown))


def _renumbered(column: InputColumn, renumber: np.ndarray) -> InputColumn:
    """``column`` over the features left once some gap features went (-1: gone)."""
    if isinstance(column, OneHotColumn):
        return dataclasses.replace(column, features=tuple(int(renumber[f])
                                                          for f in column.features))
    assert isinstance(column, NumberColumn)
    gap = None if column.gap is None or renumber[column.gap] < 0 else int(renumber[column.gap])
    return dataclasses.replace(column, feature=int(renumber[column.feature]), gap=gap)


def _category_names(model: ReleasedModel, columns: tuple[InputColumn, ...]) -> list[str]:
    """The model's feature names, a booster's category features named by the custodian's
    categories (``educ=high school``, not the code ``educ=2.0``)."""
    names = list(model.feature_names)
    for column in columns:
        if isinstance(column, OneHotColumn):
            for f, category in zip(column.features, column.categories):
                if not _nan(category) and names[f].startswith(f"{column.name}="):
                    names[f] = f"{column.name}={category}"
    return names


def _nan(value: Any) -> bool:
    return isinstance(value, float | np.floating) and bool(np.isnan(value))


def _what(track: Track) -> str:
    """What the steps did to a track, for a refusal."""
    if track.kind == "hot":
        return "a OneHotEncoder spread it over 0/1 features"
    if track.kind == "gap":
        return "a SimpleImputer made it a missing indicator"
    return "a SimpleImputer filled it" if track.filled else "a scaler changed it"


def _carried_back(model: ReleasedModel, tracks: list[Track], float32: bool,
                  position: np.ndarray) -> ReleasedModel:
    """The model with every threshold in the column's own units, as doubles compare: a
    scaled feature's carried back through its scaler, a tree's float32 reading undone
    (``position``: each track's feature among the model's)."""
    trees = [dataclasses.replace(tree, threshold=_thresholds_back(tree, tracks, float32,
                                                                  position))
             for tree in model.trees]
    # training values the file gives (a booster's bin edges) stay only where no step moved
    # them: a scaled column's are in the scaler's units
    moved = {int(position[j]) for j, track in enumerate(tracks) if track.ops}
    revealed = {f: v for f, v in model.revealed.items() if f not in moved}
    carried = dataclasses.replace(model, trees=trees, revealed=revealed)
    carried.validate()
    return carried


def _thresholds_back(tree: Tree, tracks: list[Track], float32: bool, position: np.ndarray
                     ) -> np.ndarray:
    """One tree's thresholds in the columns' own units (see `_carried_back`)."""
    threshold = np.array(tree.threshold, dtype=np.float64)
    for j, track in enumerate(tracks):
        if position[j] < 0:  # a booster's categories: no thresholds
            continue
        at = np.flatnonzero(tree.feature == position[j])
        if (track.ops or float32) and at.size:
            threshold[at] = thresholds_back(threshold[at], track.ops, float32)
    return threshold


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


def _columns(tracks: list[Track], own: list[InputColumn]) -> tuple[InputColumn, ...]:
    """The input map's columns: each custodian's column and the model features it feeds,
    the steps' map composed with the model's own (``own``: how it reads each track)."""
    fed: dict[str, list[int]] = {}
    for j, track in enumerate(tracks):
        fed.setdefault(track.column, []).append(j)
    return tuple(_column(name, features, tracks, own) for name, features in fed.items())


def _column(name: str, features: list[int], tracks: list[Track], own: list[InputColumn]
            ) -> InputColumn:
    """One custodian's column as the map reads it (its ``features``, the tracks it
    feeds): one-hot features, a value with its gap indicator, or an ordinal code; refused
    when several branches feed it."""
    gaps = [f for f in features if tracks[f].kind == "gap"]
    rest = [f for f in features if tracks[f].kind != "gap"]
    indicator = None if not gaps else _feature(own[gaps[0]])
    shape = _shape([tracks[f] for f in rest], len(gaps))
    if shape == "hot":
        return _one_hot_column(name, [tracks[f] for f in rest], [own[f] for f in rest])
    if shape == "value":
        return _value_column(name, tracks[rest[0]], own[rest[0]], indicator)
    if shape == "code":
        return _code_column(name, tracks[rest[0]], own[rest[0]])
    raise UnsupportedModelError(
        f"the pipeline feeds the column {name!r} to the tree through several branches "
        f"({len(features)} features); treeleaks maps each column through one branch")


def _shape(rest: list[Track], n_gaps: int) -> str:
    """How one branch feeds a column, from its tracks other than missing indicators
    (``rest``) and the number of those: "hot" (one OneHotEncoder's features), "value" (one
    value, at most one indicator), "code" (one OrdinalEncoder code), or "" (none of
    these: several branches)."""
    kinds = {track.kind for track in rest}
    if kinds == {"hot"} and len({id(track.encoding) for track in rest}) == 1 and not n_gaps:
        return "hot"
    if len(rest) == 1 and kinds == {"value"} and n_gaps <= 1:
        return "value"
    if len(rest) == 1 and kinds == {"code"} and not n_gaps:
        return "code"
    return ""


def _one_hot_column(name: str, tracks: list[Track], own: list[InputColumn]) -> InputColumn:
    """A column one OneHotEncoder spread over 0/1 features (``tracks``, one a category)."""
    encoding = tracks[0].encoding
    assert encoding is not None
    return OneHotColumn(name, tuple(_feature(column) for column in own),
                        tuple(encoding.categories[track.index] for track in tracks),
                        exactly_one=encoding.exactly_one, other=encoding.other)


def _value_column(name: str, track: Track, value: InputColumn, indicator: int | None
                  ) -> InputColumn:
    """A column passed as a value (scaled or filled, perhaps), with the feature of its
    imputer's missing indicator if any; a booster's own categories of it renamed."""
    if isinstance(value, OneHotColumn):  # a booster's categories of a passed column
        return dataclasses.replace(value, name=name)
    assert isinstance(value, NumberColumn)
    return NumberColumn(name, value.feature, gap=value.gap if indicator is None
                        else indicator, fill=track.fill)


def _code_column(name: str, track: Track, value: InputColumn) -> InputColumn:
    """A column an OrdinalEncoder coded; a booster's own categories of the codes named by
    the custodian's categories."""
    encoding = track.encoding
    assert encoding is not None
    if isinstance(value, OneHotColumn):  # a booster's categories over the codes
        return dataclasses.replace(value, name=name, categories=tuple(
            _category_of(name, code, encoding) for code in value.categories))
    assert isinstance(value, NumberColumn)
    return CodedColumn(name, value.feature, encoding.categories, unknown=encoding.unknown,
                       missing=encoding.missing, gap=value.gap)


def _feature(column: InputColumn) -> int:
    """The one feature of a 0/1 track as the model reads it (`_own_columns` refused it as
    categories, and its gaps are refused or settled)."""
    assert isinstance(column, NumberColumn) and column.gap is None
    return column.feature


def _category_of(name: str, code: Any, encoding: Encoding) -> Any:
    """The custodian's category behind a code a booster split natively (NaN: a gap)."""
    if code is None or (isinstance(code, float) and np.isnan(code)):
        return np.nan
    if encoding.missing is not None and float(code) == encoding.missing:
        return np.nan
    if float(code).is_integer() and 0 <= int(code) < len(encoding.categories):
        return encoding.categories[int(code)]
    raise UnsupportedModelError(
        f"the pipeline's tree model splits {name!r} on the code {code!r}, which its "
        "OrdinalEncoder never gives a training row: an edited file?")
