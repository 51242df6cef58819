"""Every number a booster file holds, checked before use: finite, whole where it counts or
indexes, in its range. An edited or truncated file gets one line naming the field and the
entry, never a rounded count, a NaN carried into the arithmetic or a traceback."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from treeleaks.ir.model import ModelFormatError

MAX_WHOLE = 2.0**53  # the largest count or index a float64 (and JSON) holds exactly


def checked(values: Any, where: str, field: str, *, whole: bool = False,
            low: float = -math.inf, high: float = math.inf) -> np.ndarray:
    """``values`` (numbers, or numeric strings) as a float64 array, or as int64 when
    ``whole``; each must be finite, whole when ``whole`` and within ``[low, high]``."""
    array = _floats(values, where, field)
    bad = ~np.isfinite(array)
    if bad.any():
        raise _error(where, field, array, bad, "not a finite number: an edited or truncated "
                     "file?")
    if whole:
        bad = (array != np.round(array)) | (np.abs(array) > MAX_WHOLE)
        if bad.any():
            raise _error(where, field, array, bad, "not a whole number within ±2^53: an "
                         "edited file (treeleaks never rounds a count or an index)")
    bad = (array < low) | (array > high)
    if bad.any():
        span = f"at least {low:g}" if high == math.inf else f"within [{low:g}, {high:g}]"
        raise _error(where, field, array, bad, f"it must be {span}: an edited file?")
    return array.astype(np.int64) if whole else array


def checked_one(value: Any, where: str, field: str, **bounds: Any) -> float:
    """One number (`checked` on a scalar; XGBoost keeps some as ``"[5E-1]"``)."""
    if isinstance(value, str):
        value = value.strip().strip("[]")
    try:
        return float(checked([value], where, field, **bounds)[0])
    except ModelFormatError as exc:
        raise ModelFormatError(str(exc).replace(" at entry 0,", ",", 1)) from None


def _floats(values: Any, where: str, field: str) -> np.ndarray:
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise ModelFormatError(f"{where}: field {field!r} is not a list of numbers")
    out = np.empty(len(values), dtype=np.float64)
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, float, str, np.number)):
            raise _entry(where, field, index, repr(value), "not a number")
        try:
            out[index] = float(value)
        except (ValueError, OverflowError):
            raise _entry(where, field, index, repr(value), "not a number") from None
    return out


def _error(where: str, field: str, array: np.ndarray, bad: np.ndarray, why: str
           ) -> ModelFormatError:
    index = int(np.argmax(bad))
    return _entry(where, field, index, f"{array[index]:g}", why)


def _entry(where: str, field: str, index: int, shown: str, why: str) -> ModelFormatError:
    return ModelFormatError(f"{where}: field {field!r} holds {shown} at entry {index}, {why}")
