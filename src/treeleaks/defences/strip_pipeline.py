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
from typing import TYPE_CHECKING, Any

import numpy as np

from treeleaks.defences.strip_check import probe_inputs
from treeleaks.defences.strip_sklearn import strip_estimator
from treeleaks.ir.inputs import CodedColumn, InputMap, NumberColumn
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.sklearn_compat import pipeline_steps

if TYPE_CHECKING:
    import pandas as pd

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



UNSEEN = "treeleaks-unseen"  # a category no encoder saw, in the random rows
GAPS = 0.1  # share of each column's random values that are gaps


def probe_rows(inputs: InputMap, thresholds: list[np.ndarray], n: int, unseen: bool,
               seed: int = 0) -> pd.DataFrame:
    """``n`` random rows in the custodian's columns: numbers around the model's thresholds
    on their feature (a quarter exactly at one), categories among those the encoder saw
    (and, with ``unseen``, one it never saw, and gaps), and `GAPS` of every number a gap."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for column in inputs.columns:
        if isinstance(column, NumberColumn):
            values = probe_inputs([thresholds[column.feature]], n, seed)[:, 0].astype(object)
        else:
            choices = [*column.categories, *([UNSEEN] if unseen else [])]
            values = np.empty(n, dtype=object)
            values[:] = [choices[i] for i in rng.integers(0, len(choices), n)]
        coded_gaps = isinstance(column, CodedColumn) and column.missing is not None
        if isinstance(column, NumberColumn) or unseen or coded_gaps:  # a gap is a category
            values[rng.random(n) < GAPS] = np.nan  # an encoder saw, or an unseen one
        out[column.name] = values
    for f in inputs.passed:
        out[inputs.feature_names[f]] = probe_inputs([thresholds[f]], n, seed)[:, 0]
    frame = pd.DataFrame(out)
    for column in inputs.columns:
        if isinstance(column, NumberColumn):
            frame[column.name] = frame[column.name].astype(np.float64)
    return frame
