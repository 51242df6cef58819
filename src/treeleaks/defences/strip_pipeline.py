"""Stripping a scikit-learn pipeline: its tree model stripped as alone
(`treeleaks.defences.strip_sklearn`), its steps kept with the statistics prediction reads,
and those it does not read neutralised (set to 0).

What a step keeps still gives away what it is (an encoder's categories, a scaler's centre and
scale, an imputer's fills); ``strip`` names those fields as kept. Some neutralised fields are
derived from kept ones (a StandardScaler's ``var_`` is its ``scale_`` squared, a
MinMaxScaler's ``data_min_`` follows from ``min_`` and ``scale_``): removing them hides
nothing more, and the summary says so."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from treeleaks.defences.strip_inputs import Categories, InputColumn, Numbers
from treeleaks.defences.strip_sklearn import strip_estimator
from treeleaks.ir.inputs import InputMap, NumberColumn
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.sklearn_compat import pipeline_steps

# Per step class: the fields prediction reads (kept), and those it does not (set to 0),
# with what each neutralised field still follows from.
KEPT: dict[str, tuple[str, ...]] = {
    "OneHotEncoder": ("categories_",),
    "OrdinalEncoder": ("categories_",),
    "StandardScaler": ("mean_", "scale_"),
    "MinMaxScaler": ("min_", "scale_"),
    "RobustScaler": ("center_", "scale_"),
    "MaxAbsScaler": ("scale_",),
    "SimpleImputer": ("statistics_", "indicator_"),
}
NEUTRALISED: dict[str, dict[str, str]] = {
    "StandardScaler": {"var_": "still scale_ squared", "n_samples_seen_": "N, gone"},
    "MinMaxScaler": {"data_min_": "still follows from min_ and scale_",
                     "data_max_": "still follows from min_ and scale_",
                     "data_range_": "still 1/scale_ times the feature range",
                     "n_samples_seen_": "N, gone"},
    "MaxAbsScaler": {"max_abs_": "still scale_ (where not 0)", "n_samples_seen_": "N, gone"},
}
_STEPS = ("OneHotEncoder", "OrdinalEncoder", "StandardScaler", "MinMaxScaler", "RobustScaler",
          "MaxAbsScaler", "SimpleImputer", "FunctionTransformer", "ColumnTransformer",
          "Pipeline")


def strip_pipeline(pipeline: Any) -> tuple[Any, list[str], list[str]]:
    """A stripped copy of a fitted pipeline (the input is left untouched): what was removed
    or neutralised, and the steps' fields kept because prediction reads them."""
    stripped = copy.deepcopy(pipeline)
    name, final = stripped.steps[-1]
    tree, removed = strip_estimator(final)
    stripped.steps[-1] = (name, tree)
    kept: list[str] = []
    for step_name, step in stripped.steps[:-1]:
        for path, inner in pipeline_steps(step, step_name):
            kind = type(inner).__name__
            if kind not in _STEPS:
                raise UnsupportedModelError(f"cannot strip the pipeline's step {path!r}, a "
                                            f"{kind}; treeleaks strips the steps it reads")
            for field, still in NEUTRALISED.get(kind, {}).items():
                value = getattr(inner, field, None)
                if value is not None:
                    setattr(inner, field, np.zeros_like(np.asarray(value)))
                    removed.append(f"{path}.{field} (set to 0; {still})")
            kept += [f"{path}.{field}" for field in KEPT.get(kind, ())
                     if getattr(inner, field, None) is not None]
    return stripped, removed, kept



def pipeline_columns(inputs: InputMap, thresholds: list[np.ndarray], unseen: bool
                     ) -> list[InputColumn]:
    """A pipeline's input columns, for its random rows: each number around the thresholds
    of the feature it feeds, with gaps; each categorical column its encoder's categories
    (with ``unseen``, one it never saw, and gaps); the columns passed through as they are."""
    columns: list[InputColumn] = [
        Numbers(column.name, thresholds[column.feature], gaps=True)
        if isinstance(column, NumberColumn)
        else Categories(column.name, tuple(column.categories), unseen=unseen, gaps=unseen)
        for column in inputs.columns]
    return columns + [Numbers(inputs.feature_names[f], thresholds[f]) for f in inputs.passed]
