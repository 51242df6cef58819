"""What a pipeline's steps store from the training rows, field by field, and what each gives
away: the pipeline reader adds these to its model's `ModelDescription` beside the tree
model's own fields (`treeleaks.frontends.stored`), so ``inspect`` and the audit list them.

Prediction needs most of them (an encoder's categories, a scaler's centre and scale, an
imputer's fills): ``strip`` keeps those and neutralises the rest
(`treeleaks.defences.strip_pipeline`), and a field it set to 0 is listed as removed."""

from __future__ import annotations

from typing import Any

from treeleaks.ir.description import StoredField
from treeleaks.sklearn_compat import pipeline_steps

_ROWS = "the number of training rows, N"
# Per step class: (field, what it gives away), in the order inspect lists them.
_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "OneHotEncoder": (("categories_", "every category seen in training, column by column"),),
    "OrdinalEncoder": (("categories_", "every category seen in training, column by column"),),
    "StandardScaler": (
        ("mean_", "each column's training mean"),
        ("scale_", "each column's training standard deviation"),
        ("var_", "each column's training variance (also scale_ squared)"),
        ("n_samples_seen_", _ROWS)),
    "MinMaxScaler": (
        ("data_min_", "each column's training minimum: one training value exactly"),
        ("data_max_", "each column's training maximum: one training value exactly"),
        ("data_range_", "each column's training range"),
        ("scale_", "each column's 1/range: with min_, the minimum and maximum again"),
        ("min_", "each column's offset: with scale_, the training minimum"),
        ("n_samples_seen_", _ROWS)),
    "RobustScaler": (
        ("center_", "each column's training median"),
        ("scale_", "each column's training interquartile range"),),
    "MaxAbsScaler": (
        ("max_abs_", "each column's largest absolute training value: one training value "
                     "exactly, up to its sign"),
        ("scale_", "the same largest absolute value"),
        ("n_samples_seen_", _ROWS)),
    "SimpleImputer": (
        ("statistics_", "each column's fill: its training mean, median or most frequent "
                        "value"),
        ("indicator_", "which columns had gaps in training"),),
}
def step_fields(pipeline: Any) -> list[StoredField]:
    """The stored fields of every step before the tree model, named ``step.field``."""
    out = []
    for name, step in pipeline.steps[:-1]:
        for path, inner in pipeline_steps(step, name):
            kind = type(inner).__name__
            columns = [str(c) for c in getattr(inner, "feature_names_in_", [])]
            for field, exposes in _FIELDS.get(kind, ()):
                value = getattr(inner, field, None)
                if value is None:
                    continue
                removed = _neutralised(value)
                shown = "" if removed else _shown(field, value, columns)
                out.append(StoredField(f"{path}.{field}", f"{kind}: {exposes}{shown}",
                                       removed=removed))
    return out


def _shown(field: str, value: Any, columns: list[str]) -> str:
    """The field's values, briefly, by column (``: island: Biscoe, Dream; ...``)."""
    import numpy as np

    if field == "indicator_":
        features = [int(f) for f in getattr(value, "features_", [])]
        return ": " + (", ".join(_column(columns, f) for f in features) or "none")
    if field == "n_samples_seen_":
        seen = np.unique(np.asarray(value, dtype=np.float64)).tolist()
        return f": {', '.join(_number(v) for v in seen[:3])}"
    if field == "categories_":
        parts = [f"{_column(columns, i)}: " + _first(list(c), 6, ", ")
                 for i, c in enumerate(value)]
    else:
        parts = [f"{_column(columns, i)} {_number(v)}" for i, v in enumerate(np.ravel(value))]
    return ": " + _first(parts, 6, "; ")


def _column(columns: list[str], i: int) -> str:
    """Column ``i``'s name, or its position when the step keeps no names."""
    return columns[i] if i < len(columns) else str(i)


def _first(items: list[Any], n: int, sep: str) -> str:
    """The first ``n`` items joined by ``sep``, with ``...`` when there are more."""
    return sep.join(map(str, items[:n])) + (f"{sep}..." if len(items) > n else "")


def _number(value: Any) -> str:
    try:
        return f"{float(value):.6g}"
    except (TypeError, ValueError):
        return str(value)


def step_list(pipeline: Any) -> str:
    """The steps before the tree model, each with the columns it reads (for ``inspect``)."""
    parts = []
    for name, step in pipeline.steps[:-1]:
        for path, inner in pipeline_steps(step, name):
            columns = [str(c) for c in getattr(inner, "feature_names_in_", [])]
            kind = type(inner).__name__
            if kind == "FunctionTransformer" and inner.func is None:
                kind = "passthrough"
            parts.append(f"{path}: {kind}"
                         + (f" ({', '.join(columns[:6])}{', ...' if len(columns) > 6 else ''})"
                            if columns else ""))
    return "; ".join(parts) or "none"



def _neutralised(value: Any) -> bool:
    """Whether ``strip`` neutralised a field (it sets what prediction ignores to 0)."""
    try:
        import numpy as np

        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return bool(array.size) and not array.any()
