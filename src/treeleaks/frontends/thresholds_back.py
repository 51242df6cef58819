"""A tree's thresholds carried back through a scaler into the custodian's units, exactly.

A tree fitted after a scaler compares ``float32(f(x)) <= t``, where ``f`` is the scaler's
floating-point arithmetic (``(x - mean) / scale``, ...). Each operation rounds, but
monotonically, so the values of ``x`` sent left are all the doubles up to one, ``x*``: the
threshold in the column's own units is ``x*`` itself, found by bisection over the ordered
doubles, so a value exactly at a threshold routes as the pipeline routes it. Without a
scaler the float32 rounding alone moves it: a tree may cut at ``t = float32(4.64)``, just
below the double 4.64 that it sends left.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_SIGN = np.uint64(1 << 63)
_STEPS = 64  # bisection steps over the ordered doubles: one per bit


def apply_ops(values: np.ndarray, ops: tuple[tuple[str, Any], ...]) -> np.ndarray:
    """``values`` through ``ops``, in float64 as scikit-learn computes them."""
    out = np.asarray(values, dtype=np.float64).copy()
    with np.errstate(over="ignore", invalid="ignore"):
        for op, arg in ops:
            if op == "sub":
                out -= arg
            elif op == "div":
                out /= arg
            elif op == "mul":
                out *= arg
            elif op == "add":
                out += arg
            else:  # clip
                out = np.clip(out, arg[0], arg[1])
    return out


def thresholds_back(thresholds: np.ndarray, ops: tuple[tuple[str, Any], ...],
                    float32: bool = True) -> np.ndarray:
    """For each threshold ``t``, the largest double ``x`` with ``float32(f(x)) <= t``.

    ``f`` is ``ops`` applied in order; without ``float32`` (a histogram booster, which
    compares doubles) ``f(x) <= t``. A threshold no double reaches (every value goes one
    way) becomes the largest or the smallest double.
    """
    t = np.asarray(thresholds, dtype=np.float64)
    if (not ops and not float32) or t.size == 0:
        return t.copy()
    lo = np.full(t.shape, _key(np.array(-np.finfo(np.float64).max)), dtype=np.uint64)
    hi = np.full(t.shape, _key(np.array(np.finfo(np.float64).max)), dtype=np.uint64)
    left_of_all = _left(_value(hi), t, ops, float32)
    for _ in range(_STEPS):
        mid = lo + (hi - lo) // np.uint64(2)
        go = _left(_value(mid), t, ops, float32)
        lo = np.where(go, mid, lo)
        hi = np.where(go, hi, mid)
    out = np.where(_left(_value(lo), t, ops, float32), _value(lo), -np.finfo(np.float64).max)
    return np.where(left_of_all, np.finfo(np.float64).max, out)


def _left(x: np.ndarray, t: np.ndarray, ops: tuple[tuple[str, Any], ...],
          float32: bool) -> np.ndarray:
    """Whether each ``x`` goes left of its threshold, as the tree compares them."""
    out = apply_ops(x, ops)
    with np.errstate(over="ignore"):
        return (out.astype(np.float32) if float32 else out) <= t


def _key(x: np.ndarray) -> np.ndarray:
    """Doubles as unsigned integers in the doubles' order."""
    bits = np.asarray(x, dtype=np.float64).view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def _value(key: np.ndarray) -> np.ndarray:
    """The doubles `_key` numbered."""
    bits = np.where(key & _SIGN, key & ~_SIGN, ~key)
    return np.asarray(bits, dtype=np.uint64).view(np.float64)
