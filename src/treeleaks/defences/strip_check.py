"""The proof that a stripped file still predicts: the comparison on the custodian's rows and
on random inputs (`treeleaks.defences.strip_inputs` draws them).

With the options that change predictions, the comparison says what may differ: after
``--thresholds simplest`` the random inputs' values that lay between a threshold's old and
new place are moved to the lower end of that span, where both split them alike
(`outside_moves`), and everything else must match exactly; after ``--round-values`` the
outputs may differ by the rounding's bound (``tolerance``) and no more."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from treeleaks.runtime.errors import TreeleaksError

N_RANDOM = 10_000
Predictions = dict[str, np.ndarray]  # output name (predict, predict_proba, ...) → values
# XGBoost's messages open with "[hh:mm:ss] /path/file.cc:123: "
_LOCATION = re.compile(r"^\[\d\d:\d\d:\d\d\] \S+:\d+: ")


class StripCheckError(TreeleaksError):
    """The stripped file did not load back, or predicts differently from the original."""


def outside_moves(inputs: np.ndarray, moves: dict[int, list[tuple[float, float]]],
                  float32: bool) -> np.ndarray:
    """``inputs`` with every value of feature j inside a span ``[min(old, new), max(old,
    new)]`` of ``moves[j]`` set to the lower end of its (merged) span, where the old and
    the new threshold send it the same way; rounded down to a float32 when the model reads
    float32 (a tree, whose inputs are first read as float32 as it reads them)."""
    out = inputs.astype(np.float32).astype(np.float64) if float32 else inputs.copy()
    for j, pairs in moves.items():
        spans = sorted((min(p), max(p)) for p in pairs)
        starts, ends = [spans[0][0]], [spans[0][1]]
        for low, high in spans[1:]:
            if low <= ends[-1]:
                ends[-1] = max(ends[-1], high)
            else:
                starts.append(low)
                ends.append(high)
        low = np.asarray(starts)
        if float32:
            low32 = low.astype(np.float32)
            low = np.where(low32 > low, np.nextafter(low32, np.float32(-np.inf)),
                           low32).astype(np.float64)
        column = out[:, j]
        span = np.searchsorted(starts, column, side="right") - 1
        inside = (span >= 0) & (column <= np.asarray(ends)[np.maximum(span, 0)])
        column[inside] = low[span[inside]]
    return out


def compare(original: Predictions, stripped: Predictions, where: str,
            tolerance: float = 0.0) -> None:
    """Raise `StripCheckError` naming the first output that differs on ``where`` (by more
    than ``tolerance``, plus a float's rounding, when one is given)."""
    for name, expected in original.items():
        got = stripped.get(name)
        if got is None or got.shape != expected.shape:
            raise StripCheckError(f"{name} of the stripped file has another shape than the "
                                  f"original's on {where}; nothing was written")
        close = (np.abs(got - expected) <= tolerance * (1 + 1e-9) + 1e-12 * np.abs(expected)
                 if tolerance else got == expected)
        floats = got.dtype.kind == "f" and expected.dtype.kind == "f"  # labels may be text
        differ = ~(close | (np.isnan(got) & np.isnan(expected))) if floats else ~close
        if differ.any():
            rows = int(differ.reshape(len(differ), -1).any(axis=1).sum())
            beyond = f" by more than {tolerance:.3g}" if tolerance else ""
            raise StripCheckError(f"{name} of the stripped file differs from the original's"
                                  f"{beyond} on {rows:,} of {len(differ):,} {where}; nothing "
                                  "was written")


def reloaded(load: Callable[[bytes], Callable[[np.ndarray], Predictions]], content: bytes,
             framework: str) -> Callable[[np.ndarray], Predictions]:
    """The stripped file loaded back by ``framework`` from the bytes to be written, or
    `StripCheckError` saying it does not load."""
    try:
        return load(content)
    except Exception as exc:
        raise StripCheckError(f"the stripped file does not load back in {framework} "
                              f"({type(exc).__name__}: {first_line(exc)}); nothing was "
                              "written") from exc


def first_line(exc: BaseException) -> str:
    """An exception's message as one line: its first non-empty line, without XGBoost's
    time and source location (the stack trace it adds is for XGBoost's developers)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return _LOCATION.sub("", lines[0]) if lines else type(exc).__name__
