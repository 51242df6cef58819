"""XGBoost squared-error regressors (``reg:squarederror``): every tree's row counts and
every leaf's sum of residuals, read from the JSON model file.

With squared error every row's hessian is 1, so a leaf's cover is its row count n, in
every tree. A leaf stores w = η·ω, where ω = -G/(n + λ) is its unscaled weight (kept in
``base_weights``) and G = Σ(score - y) over its rows: the ratio of the two gives the
learning rate η. Every row starts at the base score b, which XGBoost estimates as the mean
target, so the first tree's G add up to 0: λ = -Σ ω·n / Σ ω. A first-tree leaf's mean
target is then b + ω(n + λ)/n (see `_rate_and_penalty` for a base score that is not the
mean), and every tree's leaf says ``G + (w/η)·n = -w·λ/η``
(`treeleaks.frontends.boosting.squared_error_gradients`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treeleaks.frontends.boosting import squared_error_gradients
from treeleaks.frontends.stored import xgboost_fields
from treeleaks.ir.description import describe
from treeleaks.ir.model import ReleasedModel, Tree
from treeleaks.runtime.errors import UnsupportedModelError

FILE = "XGBoost model file"
COUNT_TOLERANCE = 1e-3  # of a row, for a cover read as a count
ROW_PRECISION = 2e-6  # of a leaf's gradient sum per row: float32 gradients and scores
EARLY_TREES = 10  # the trees after the first that give η
SNAP = 1e-4  # relative: how close a fitted η or λ must be to a short decimal to become it
RATE_FIT = 1e-4  # of the trees' sums' scale: how well one η and λ must fit them all


def regression_model(trees: list[dict[str, Any]], parsed: list[tuple[Any, np.ndarray,
                     np.ndarray]], base: float, names: list[str], label_name: str,
                     objective: str) -> ReleasedModel:
    """The IR of a squared-error XGBoost regressor from its parsed trees (nodes, covers
    and leaf values per tree; see the module doc)."""
    rows = [_counts(cover, t) for t, (_, cover, _) in enumerate(parsed)]
    totals = {int(count.sum()) for count in rows}
    if len(totals) != 1:
        raise UnsupportedModelError(
            "this XGBoost regressor's trees count different rows (covers adding up to "
            f"{sorted(totals)}): its trees were fit on subsamples, or with sample weights, "
            "which treeleaks does not model; it audits boosters trained on every row")
    values = [value for _, _, value in parsed]
    eta, l2 = _rate_and_penalty(values, rows)
    means = base + values[0] * (rows[0] + l2) / (eta * rows[0])
    out = [Tree(*nodes, count[:, None].copy(), n_samples=count.copy(),
                values=means if t == 0 else None)
           for t, ((nodes, _, _), count) in enumerate(zip(parsed, rows))]
    gradients = squared_error_gradients(base, values, rows, eta, l2, ROW_PRECISION)
    model = ReleasedModel(out, [], list(names), label_name=label_name, source="XGBoost",
                          task="regression", gradients=gradients,
                          facts={"objective": objective, "trees in file": len(trees),
                                 "learning rate (recovered)": float(f"{eta:.6g}"),
                                 "L2 penalty (recovered)": float(f"{l2:.6g}")})
    model.validate()
    model.description = describe(model, "XGBoost", f"objective {objective}",
                                 xgboost_fields(True))
    return model


def _counts(cover: np.ndarray, index: int) -> np.ndarray:
    """A tree's covers as whole row counts (a hessian of 1 a row), or a refusal."""
    rows = np.rint(cover)
    off = (np.abs(cover - rows) > COUNT_TOLERANCE) | (rows < 1)
    if off.any():
        leaf = int(np.argmax(off))
        raise UnsupportedModelError(
            f"XGBoost tree {index} leaf {leaf} has cover {cover[leaf]:g}, not a whole row "
            "count: a squared-error regressor's covers are its rows unless it was trained "
            "with sample weights (which the file does not record) or the file was edited")
    return rows.astype(np.int64)


def _rate_and_penalty(values: list[np.ndarray], rows: list[np.ndarray]
                      ) -> tuple[float, float]:
    """η and λ from the trees' leaf values and counts, refused when they do not fit.

    A tree t's leaves add up to ``Σ w(n + λ) = -η·(R_t + δ)``: R_t + δ = Σ_i (F(x_i) - y_i)
    over every row before tree t, R_t the earlier trees' ``Σ n·w`` and δ = N(b - ȳ) what
    the base score b misses the mean target by (float32 rounding, or a base score of the
    user's own). The first tree (R = 0) gives λ once η·δ is known; the early trees, whose
    R_t vary most and carry the least float32 drift of XGBoost's per-row scores, give η
    and η·δ by least squares; two rounds settle both."""
    if len(values) < 3 or not float(np.abs(values[0]).sum()) > 0.0:
        raise UnsupportedModelError(
            "this XGBoost regressor's trees do not tell its learning rate and L2 penalty "
            "apart (fewer than three trees, or a first tree of zero values), which its leaf "
            "means need; treeleaks refuses to guess them")
    weighted = np.array([float(v @ n) for v, n in zip(values, rows)])
    totals = np.array([float(v.sum()) for v in values])
    before = np.concatenate([[0.0], np.cumsum(weighted)[:-1]])
    early = slice(1, min(len(values), EARLY_TREES + 1))
    design = np.column_stack([before[early], np.ones(early.stop - 1)])
    shift = 0.0  # η·δ
    for _ in range(2):
        l2 = -(weighted[0] + shift) / totals[0] if totals[0] else 1.0
        (eta, shift), *_ = np.linalg.lstsq(design, -(weighted + l2 * totals)[early],
                                           rcond=None)
    eta, l2 = _snapped(float(eta)), _snapped(float(l2))
    miss = np.abs(weighted + l2 * totals + eta * before + shift).max()
    scale = float(np.abs(weighted).max() + np.abs(before).max() + 1.0)
    if not (0.0 < eta <= 1.0 and l2 > -1e-3 and miss <= RATE_FIT * scale):
        raise UnsupportedModelError(
            "this XGBoost regressor's leaf values fit no one learning rate and L2 penalty "
            f"(best η = {eta:.3g}, λ = {l2:.3g}): it was trained with a base score of its own, "
            "sample weights or alpha, which the file does not record, or the file was "
            "edited; treeleaks refuses to guess its targets (ask whoever trained it which; "
            "a file trained unweighted with the default base score is read)")
    return eta, max(l2, 0.0)


def _snapped(value: float) -> float:
    """``value`` at 4 significant digits when it is that within the fit's precision (a
    learning rate of 0.3 read as 0.29999), else as fitted."""
    short = float(f"{value:.4g}")
    return short if abs(short - value) <= SNAP * max(abs(value), 1e-12) else value
