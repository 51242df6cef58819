"""The proof that a stripped file still predicts: the inputs to compare on (the custodian's
rows, and random inputs drawn around the model's thresholds, a quarter of their values
exactly at a threshold, where a changed split would show; for a booster, gaps in every
column and, in a categorical one, every code it knows, a negative one and one it never
saw), and the comparison itself.

With the options that change predictions, the comparison says what may differ: after
``--thresholds simplest`` the random inputs' values that lay between a threshold's old and
new place are moved to the lower end of that span, where both split them alike
(`outside_moves`), and everything else must match exactly; after ``--round-values`` the
outputs may differ by the rounding's bound (``tolerance``) and no more."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from treeleaks.runtime.errors import TreeleaksError

N_RANDOM = 10_000
AT_THRESHOLD = 0.25  # share of the random inputs' values set exactly at a threshold
MARGIN = 0.1  # drawn this share of the thresholds' range beyond them, on each side
Predictions = dict[str, np.ndarray]  # output name (predict, predict_proba, ...) → values


class StripCheckError(TreeleaksError):
    """The stripped file did not load back, or predicts differently from the original."""


def probe_inputs(thresholds: list[np.ndarray], n: int = N_RANDOM, seed: int = 0,
                 categories: dict[int, int] | None = None, gaps: float = 0.0) -> np.ndarray:
    """``n`` random inputs, each feature uniform from below its least threshold to above
    its greatest (-1 to 1 for a feature no split reads), with `AT_THRESHOLD` of the values
    exactly at one of the feature's thresholds; a categorical feature of K codes
    (``categories``) takes every whole code from -1 (invalid) to K (never seen); a share
    ``gaps`` of every feature's values is NaN."""
    rng = np.random.default_rng(seed)
    columns = []
    for j, cuts in enumerate(thresholds):
        if categories and j in categories:
            columns.append(rng.integers(-1, categories[j] + 1, n).astype(np.float64))
            continue
        cuts = np.asarray(cuts, dtype=np.float64)
        cuts = cuts[np.isfinite(cuts)]
        if cuts.size == 0:
            columns.append(rng.uniform(-1.0, 1.0, n))
            continue
        low, high = float(cuts.min()), float(cuts.max())
        margin = MARGIN * ((high - low) if high > low else max(1.0, abs(low)))
        column = rng.uniform(low - margin, high + margin, n)
        exact = rng.random(n) < AT_THRESHOLD
        column[exact] = rng.choice(cuts, int(exact.sum()))
        columns.append(column)
    out = np.column_stack(columns)
    out[rng.random(out.shape) < gaps] = np.nan
    return out


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
        message = " ".join(str(exc).split())
        raise StripCheckError(f"the stripped file does not load back in {framework} "
                              f"({type(exc).__name__}: {message}); nothing was written") from exc
