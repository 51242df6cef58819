"""The proof that a stripped file still predicts: the inputs to compare on (the custodian's
rows, and random inputs drawn around the model's thresholds, a quarter of their values
exactly at a threshold, where a changed split would show), and the comparison itself."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from treeleaks.errors import TreeleaksError

N_RANDOM = 10_000
AT_THRESHOLD = 0.25  # share of the random inputs' values set exactly at a threshold
MARGIN = 0.1  # drawn this share of the thresholds' range beyond them, on each side
Predictions = dict[str, np.ndarray]  # output name (predict, predict_proba, ...) → values


class StripCheckError(TreeleaksError):
    """The stripped file did not load back, or predicts differently from the original."""


def probe_inputs(thresholds: list[np.ndarray], n: int = N_RANDOM, seed: int = 0) -> np.ndarray:
    """``n`` random inputs, each feature uniform from below its least threshold to above
    its greatest (-1 to 1 for a feature no split reads), with `AT_THRESHOLD` of the values
    exactly at one of the feature's thresholds."""
    rng = np.random.default_rng(seed)
    columns = []
    for cuts in thresholds:
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
    return np.column_stack(columns)


def compare(original: Predictions, stripped: Predictions, where: str) -> None:
    """Raise `StripCheckError` naming the first output that differs on ``where``."""
    for name, expected in original.items():
        got = stripped.get(name)
        if got is None or got.shape != expected.shape:
            raise StripCheckError(f"{name} of the stripped file has another shape than the "
                                  f"original's on {where}; nothing was written")
        differ = ~((got == expected) | (np.isnan(got) & np.isnan(expected)))
        if differ.any():
            rows = int(differ.reshape(len(differ), -1).any(axis=1).sum())
            raise StripCheckError(f"{name} of the stripped file differs from the original's "
                                  f"on {rows:,} of {len(differ):,} {where}; nothing was "
                                  "written")


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
