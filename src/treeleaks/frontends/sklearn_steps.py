"""The scikit-learn steps treeleaks reads before a tree model, each as what it does to every
column it is given.

A step's output is described feature by feature as a `Track`: the custodian's column it
comes from, what it holds (the column's value, a 0/1 "is this category", a category's code,
a 0/1 "was missing") and the floating-point operations applied to it since (a scaler's
subtraction and division, exactly as scikit-learn computes them, so that the tree's
thresholds can be carried back into the column's own units). Every step read here works
column by column; a step that mixes columns (PCA, polynomial features) or runs code (a
FunctionTransformer) is refused, naming the step, its class and why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from treeleaks.runtime.errors import UnsupportedModelError

READ_STEPS = ("OneHotEncoder", "OrdinalEncoder", "StandardScaler", "MinMaxScaler",
              "RobustScaler", "MaxAbsScaler", "SimpleImputer", "'passthrough'", "'drop'")
# Why a step treeleaks does not read cannot be carried back to the custodian's columns.
_WHY = {
    "PCA": "it mixes columns, so a split on its output is no split on one of yours",
    "TruncatedSVD": "it mixes columns, so a split on its output is no split on one of yours",
    "PolynomialFeatures": "it multiplies columns together",
    "FunctionTransformer": "it runs code of its own, which treeleaks will not run or invert",
    "KBinsDiscretizer": "its bins would have to be read as a coded column (not done yet)",
    "TargetEncoder": "it encodes categories by their training targets (itself a leak, not "
                     "read yet)",
    "QuantileTransformer": "its monotone map would have to be inverted by interpolation "
                           "(not done yet)",
    "PowerTransformer": "its monotone map would have to be inverted (not done yet)",
    "KNNImputer": "it fills a gap from other columns",
    "IterativeImputer": "it fills a gap from other columns",
    "FeatureUnion": "it feeds one column to several branches (use a ColumnTransformer)",
}


@dataclass(frozen=True)
class Encoding:
    """How an encoder codes one column: its ``categories`` (one-hot: those kept), the
    category an all-zero row means (``other``: the dropped one, None: an unseen one),
    whether exactly one feature is 1 (one-hot), an unseen value's code and a gap's, when
    the column held gaps in training (ordinal; NaN: passed on as a gap)."""

    categories: tuple[Any, ...]
    exactly_one: bool = True
    other: Any = None
    unknown: float | None = None
    missing: float | None = None


@dataclass(frozen=True)
class Track:
    """One feature on its way through the steps.

    ``kind``: ``value`` the column's value (``fill`` where it was missing, when an imputer
    filled it), ``gap`` 1 where the column was missing, ``hot`` 1 where the column is
    ``encoding.categories[index]``, ``code`` the code of its category. ``ops`` are the
    floating-point operations applied since, in order (``sub``, ``div``, ``mul``, ``add``,
    ``clip``), as scikit-learn applies them.
    """

    column: str
    kind: str = "value"
    ops: tuple[tuple[str, Any], ...] = ()
    fill: Any = None
    filled: bool = False
    encoding: Encoding | None = None
    index: int = 0


def refuse(name: str, step: Any, why: str | None = None) -> UnsupportedModelError:
    """The refusal of a step: its name, its class, and what reading it would take."""
    kind = type(step).__name__
    reason = why or _WHY.get(kind, "treeleaks has no way back through it to your columns "
                             "(it would need its transform inverted column by column)")
    return UnsupportedModelError(
        f"the pipeline's step {name!r} is a {kind}, which treeleaks does not read: {reason}; "
        f"treeleaks reads {', '.join(READ_STEPS)} before a tree model")


def apply_step(name: str, step: Any, tracks: list[Track], sparse: bool
               ) -> tuple[list[Track], bool]:
    """The tracks after ``step`` (named ``name``), and whether its output is sparse."""
    kind = type(step).__name__
    if isinstance(step, str):
        return _string_step(name, step, tracks), sparse
    if step is None or _identity(step):
        return tracks, sparse
    if kind == "Pipeline":
        for inner, inner_step in step.steps:
            tracks, sparse = apply_step(f"{name}/{inner}", inner_step, tracks, sparse)
        return tracks, sparse
    if kind == "ColumnTransformer":
        return _column_transformer(name, step, tracks)
    if kind == "OneHotEncoder":
        return _one_hot(name, step, tracks), bool(step.sparse_output)
    if kind == "OrdinalEncoder":
        return _ordinal(name, step, tracks), False
    if kind in ("StandardScaler", "MinMaxScaler", "RobustScaler", "MaxAbsScaler"):
        return _scaled(name, step, tracks, sparse), sparse
    if kind == "SimpleImputer":
        return _imputed(name, step, tracks), sparse
    raise refuse(name, step)


def _string_step(name: str, step: str, tracks: list[Track]) -> list[Track]:
    """The tracks after a step given as a string: 'passthrough' keeps them, 'drop' none."""
    if step == "passthrough":
        return tracks
    if step == "drop":
        return []
    raise UnsupportedModelError(f"the pipeline's step {name!r} is the string {step!r}; "
                                "scikit-learn knows only 'passthrough' and 'drop'")


def _identity(step: Any) -> bool:
    """A fitted ColumnTransformer's 'passthrough': a FunctionTransformer with no function."""
    return (type(step).__name__ == "FunctionTransformer" and step.func is None
            and step.inverse_func is None)


def _column_transformer(name: str, step: Any, tracks: list[Track]) -> tuple[list[Track], bool]:
    """Each transformer on its columns, their outputs side by side (the remainder last)."""
    out: list[Track] = []
    for inner, transformer, columns in step.transformers_:
        chosen = _columns(step, inner, columns, len(tracks))
        if not chosen or (isinstance(transformer, str) and transformer == "drop"):
            continue
        where = "remainder" if inner == "remainder" else f"{name}/{inner}"
        got, _ = apply_step(where, transformer, [tracks[i] for i in chosen], False)
        out += got
    return out, bool(getattr(step, "sparse_output_", False))


def _columns(step: Any, inner: str, columns: Any, n: int) -> list[int]:
    """The input positions a ColumnTransformer's transformer reads."""
    fitted = getattr(step, "_transformer_to_input_indices", None)
    if isinstance(fitted, dict) and inner in fitted:
        return [int(i) for i in fitted[inner]]
    return _selected(columns, [str(c) for c in getattr(step, "feature_names_in_", [])], n)


def _selected(columns: Any, names: list[str], n: int) -> list[int]:
    """The input positions a column selector names: a slice, a mask, names or positions
    (``names``: the step's input columns, ``n`` of them)."""
    if isinstance(columns, slice):
        return list(range(n))[columns]
    items = [columns] if isinstance(columns, str | int) else list(columns)
    if items and all(isinstance(c, bool | np.bool_) for c in items):
        return [i for i, keep in enumerate(items) if keep]
    return [names.index(c) if isinstance(c, str) else int(c) for c in items]


def _categorical(name: str, step: Any, track: Track) -> None:
    """Refuse an encoder fed what it cannot code back: a scaled number or a filled text."""
    if track.kind != "value" or track.ops:
        raise refuse(name, step, f"it encodes {track.column!r} after another step changed "
                     "it (a scaled number or an indicator), which treeleaks cannot carry back")
    if track.filled:
        raise refuse(name, step, f"it encodes {track.column!r} after a SimpleImputer filled "
                     "it (not read yet; an encoder codes a gap as its own category)")
    if getattr(step, "infrequent_categories_", None) is not None and any(
            c is not None for c in step.infrequent_categories_):
        raise refuse(name, step, "it groups infrequent categories (min_frequency or "
                     "max_categories), not read yet")


def _one_hot(name: str, step: Any, tracks: list[Track]) -> list[Track]:
    """One 0/1 track per category kept, column by column."""
    out: list[Track] = []
    drops = getattr(step, "drop_idx_", None)
    for i, track in enumerate(tracks):
        _categorical(name, step, track)
        categories = list(step.categories_[i])
        drop = None if drops is None or drops[i] is None else int(drops[i])
        kept = tuple(c for j, c in enumerate(categories) if j != drop)
        # Every training row held a category seen in training: without a dropped one,
        # exactly one feature is 1 (an unseen value's all-zero row comes after training).
        encoding = Encoding(kept, exactly_one=drop is None,
                            other=None if drop is None else categories[drop])
        out += [Track(track.column, "hot", encoding=encoding, index=j)
                for j in range(len(kept))]
    return out


def _ordinal(name: str, step: Any, tracks: list[Track]) -> list[Track]:
    """One code track per column; a column that held gaps codes them
    ``encoded_missing_value`` (NaN by default: passed on as a gap, for the model to route)."""
    unknown = step.unknown_value if step.handle_unknown == "use_encoded_value" else None
    out = []
    for i, track in enumerate(tracks):
        _categorical(name, step, track)
        # scikit-learn codes a NaN (listed last) apart; None is a category like any other
        listed = list(step.categories_[i])
        gaps = bool(listed) and isinstance(listed[-1], float | np.floating) and bool(
            np.isnan(listed[-1]))
        categories = tuple(listed[:-1] if gaps else listed)
        missing = float(getattr(step, "encoded_missing_value", np.nan)) if gaps else None
        out.append(Track(track.column, "code", encoding=Encoding(
            categories, unknown=None if unknown is None else float(unknown),
            missing=missing)))
    return out


def _scaled(name: str, step: Any, tracks: list[Track], sparse: bool) -> list[Track]:
    """Each track with the scaler's operations appended, as scikit-learn computes them."""
    ops_of = _SCALER_OPS.get(type(step).__name__, _min_max_ops)
    return [replace(track, ops=track.ops + tuple(ops_of(name, step, i, track, sparse)))
            for i, track in enumerate(tracks)]


_Ops = list[tuple[str, Any]]


def _standard_ops(name: str, step: Any, i: int, track: Track, sparse: bool) -> _Ops:
    """A StandardScaler's operations on column ``i``: less its mean, over its scale."""
    ops: _Ops = []
    if getattr(step, "mean_", None) is not None and step.with_mean:
        ops.append(("sub", float(step.mean_[i])))
    if getattr(step, "scale_", None) is not None:
        ops.append(_divide(name, step, float(step.scale_[i]), sparse))
    return ops


def _robust_ops(name: str, step: Any, i: int, track: Track, sparse: bool) -> _Ops:
    """A RobustScaler's operations on column ``i``: less its center, over its scale."""
    ops: _Ops = []
    if step.center_ is not None and step.with_centering:
        ops.append(("sub", float(step.center_[i])))
    if step.scale_ is not None and step.with_scaling:
        ops.append(_divide(name, step, float(step.scale_[i]), sparse))
    return ops


def _max_abs_ops(name: str, step: Any, i: int, track: Track, sparse: bool) -> _Ops:
    """A MaxAbsScaler's operations on column ``i``: over its scale, clipped if asked."""
    ops: _Ops = [_divide(name, step, float(step.scale_[i]), sparse)]
    if getattr(step, "clip", False):
        ops.append(("clip", (-1.0, 1.0)))
    return ops


def _min_max_ops(name: str, step: Any, i: int, track: Track, sparse: bool) -> _Ops:
    """A MinMaxScaler's operations on column ``i``: times its scale, plus its minimum,
    clipped if asked."""
    scale = float(step.scale_[i])
    if not scale > 0:
        raise refuse(name, step, f"its scale for {track.column!r} is {scale:g}")
    ops: _Ops = [("mul", scale), ("add", float(step.min_[i]))]
    if step.clip:
        ops.append(("clip", tuple(float(v) for v in step.feature_range)))
    return ops


_SCALER_OPS = {"StandardScaler": _standard_ops, "RobustScaler": _robust_ops,
               "MaxAbsScaler": _max_abs_ops}  # any other scaler read is a MinMaxScaler


def _divide(name: str, step: Any, scale: float, sparse: bool) -> tuple[str, Any]:
    """A division by a column's scale (a sparse input: a multiplication by its inverse)."""
    if not (scale > 0 and math.isfinite(scale)):
        raise refuse(name, step, f"one of its scales is {scale:g}")
    return ("mul", float(np.float64(1.0) / np.float64(scale))) if sparse else ("div", scale)


def _imputed(name: str, step: Any, tracks: list[Track]) -> list[Track]:
    """The columns with gaps filled (those never seen dropped), then their indicators."""
    if not _is_gap(step.missing_values):
        raise refuse(name, step, f"its gaps are the value {step.missing_values!r}, not NaN "
                     "(not read yet)")
    out, kept = [], []
    for i, track in enumerate(tracks):
        fill = step.statistics_[i]
        if _is_gap(fill):
            continue  # a column with no value in training: scikit-learn drops it
        if track.kind != "value" or track.ops:
            raise refuse(name, step, f"it fills {track.column!r} after another step changed "
                         "it (a scaler before the imputer), which treeleaks cannot carry back")
        if not isinstance(fill, int | float | np.number):
            raise refuse(name, step, f"it fills the text column {track.column!r} (not read "
                         "yet; an encoder codes a gap as its own category)")
        kept.append(i)
        out.append(track if track.filled else replace(track, fill=float(fill), filled=True))
    indicator = getattr(step, "indicator_", None)
    if indicator is not None:
        out += [Track(tracks[int(f)].column, "gap") for f in indicator.features_]
    return out


def _is_gap(value: Any) -> bool:
    """Whether a value stands for a gap (NaN or None)."""
    return value is None or (isinstance(value, float | np.floating) and math.isnan(value))
