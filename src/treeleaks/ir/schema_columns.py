"""The schema's feature columns (label excluded) resolved against a frame of true rows:
their kinds, guess ranges, groups and the widths that normalise each column's absolute
difference. The metrics score with them and attacks size their errors by them, so they
live beside the schema, below both."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from treeleaks.ir.schema import FeatureSchema


@dataclass
class FeatureColumns:
    """The schema's feature columns (label excluded) resolved against the true rows."""

    names: list[str]
    kinds: np.ndarray
    low: np.ndarray  # guess range: the schema's, or the observed one where infinite
    high: np.ndarray
    scale: np.ndarray  # width that normalises each column's absolute difference
    groups: list[tuple[np.ndarray, bool]]  # (column indices, exactly_one)
    true_X: np.ndarray


def feature_columns(truth: pd.DataFrame, schema: FeatureSchema,
                    label: str | None) -> FeatureColumns:
    """The schema's columns besides ``label``, checked against ``truth`` (present, complete)."""
    keep = np.array([name != label for name in schema.names], dtype=bool)
    names = [name for name in schema.names if name != label]
    if not names:
        raise ValueError("the schema lists no feature columns besides the label; give a schema "
                         "that describes the features")
    if truth.empty:
        raise ValueError("the true frame has no rows; give the training rows to compare with")
    true_X = frame_matrix(truth, names, "true")
    incomplete = [names[j] for j in np.flatnonzero(np.isnan(true_X).any(axis=0))]
    if incomplete:
        raise ValueError(f"the true frame has missing values in {_listing(incomplete)}; "
                         "the truth must be complete (drop or fill those rows)")
    low, high = (bounds[keep] for bounds in schema.range_arrays())
    seen_low, seen_high = true_X.min(axis=0), true_X.max(axis=0)
    width, seen_width = high - low, seen_high - seen_low
    scale = np.where(
        np.isfinite(width) & (width > 0), width, np.where(seen_width > 0, seen_width, 1.0)
    )
    position = np.cumsum(keep) - 1
    groups = [
        (position[members[keep[members]]], exactly_one)
        for members, exactly_one in schema.group_indices()
        if keep[members].sum() >= 2
    ]
    return FeatureColumns(
        names,
        schema.kind_array()[keep],
        np.where(np.isfinite(low), low, seen_low),
        np.where(np.isfinite(high), high, seen_high),
        scale,
        groups,
        true_X,
    )


def feature_scales(truth: pd.DataFrame, schema: FeatureSchema,
                   label: str | None = None) -> tuple[list[str], np.ndarray]:
    """The feature columns the metrics compare and the width that normalises each one's
    absolute difference (the schema's range, or the observed one where it is infinite)."""
    columns = feature_columns(truth, schema, label)
    return columns.names, columns.scale


def frame_matrix(frame: pd.DataFrame, names: list[str], which: str) -> np.ndarray:
    """The ``names`` columns of ``frame`` as floats; ``which`` names the frame in the error."""
    missing = [name for name in names if name not in frame.columns]
    if missing:
        raise ValueError(
            f"the {which} frame lacks schema column(s) {_listing(missing)}; give it every "
            f"feature column the schema lists ({len(names)}), or a schema for its columns"
        )
    return frame[names].to_numpy(dtype=np.float64)


def _listing(names: list[str]) -> str:
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return ", ".join(map(repr, names[:5])) + more
