"""Benchmark: boosted regressors reconstructed with their targets (issue 39, boosters).

For every (dataset, framework, model, seed): fit the booster (``default``: each
framework's defaults; ``fine``: leaves of one row allowed, see MODELS) with
``random_state=seed``, read it as its users save it (scikit-learn objects, LightGBM's
model text, XGBoost's JSON), check every derived count and sum against the training rows,
reconstruct, and score against them. Rows come in no order: each returned row is paired
with a true row (the assignment of least feature error, `scipy.optimize
linear_sum_assignment`, a true row inside the returned row's bounds first), and scored on
its features (mean absolute difference over the columns' ranges) and its target (over the
target's range), beside random guessing (uniform in each range, paired the same way).
``inside``: the share of returned rows whose target interval holds their paired row's target.

Datasets: ``diabetes`` (442 x 10 raw) and ``diabetes-binned:B`` (each column cut at its B-1
inner quantiles, the values 0..B-1: a table whose cells can be listed),
``friedman1:N`` (``make_friedman1``, 10 raw columns).

    python bench/boosted_regression.py                  # diabetes and diabetes-binned:3
    python bench/boosted_regression.py --smoke          # 20 trees, one seed
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.datasets import load_diabetes, make_friedman1
from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor

from treeleaks import from_sklearn, reconstruct
from treeleaks.counts.gradient_rows import largest_gradient_miss
from treeleaks.ir.model import ReleasedModel
from treeleaks.result import Reconstruction

RESULTS = Path(__file__).parent / "results"
# of the target's range: a target exact to the file's float32 precision is inside
PRECISION = 1e-6
OUTSIDE = 10.0  # the pairing's cost of a true row outside a returned row's bounds
FRAMEWORKS = ("gb", "hgb", "lightgbm", "xgboost")
MODELS = {  # "fine": leaves of one row allowed; "default": each framework's defaults
    "gb": {"fine": {"max_depth": None, "max_leaf_nodes": 31}, "default": {}},
    "hgb": {"fine": {"min_samples_leaf": 1}, "default": {}},
    "lightgbm": {"fine": {"min_child_samples": 1, "min_child_weight": 0}, "default": {}},
    "xgboost": {"fine": {"min_child_weight": 0}, "default": {}},
}


def dataset(spec: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The training rows and targets a spec names."""
    name, _, size = spec.partition(":")
    if name in ("diabetes", "diabetes-binned"):
        X, y = load_diabetes(return_X_y=True, scaled=False)
        if name == "diabetes-binned":
            bins = int(size or 3)
            cuts = np.quantile(X, np.linspace(0, 1, bins + 1)[1:-1], axis=0)
            X = np.column_stack([np.searchsorted(cuts[:, j], X[:, j], side="right")
                                 for j in range(X.shape[1])]).astype(float)
        return X, y
    if name == "friedman1" and size.isdigit():
        X, y = make_friedman1(int(size), random_state=seed)
        return X, np.round(y, 6)
    raise SystemExit(f"unknown dataset {spec!r}: diabetes, diabetes-binned:B, friedman1:N")


def fit_and_read(framework: str, model: str, X: np.ndarray, y: np.ndarray, trees: int,
                 seed: int) -> ReleasedModel:
    """Fit the booster and read it back the way its users save it."""
    params = MODELS[framework][model]
    if framework == "gb":
        return from_sklearn(GradientBoostingRegressor(n_estimators=trees, random_state=seed,
                                                      **params).fit(X, y),
                            allow_regression=True)
    if framework == "hgb":
        return from_sklearn(HistGradientBoostingRegressor(max_iter=trees, random_state=seed,
                                                          **params).fit(X, y),
                            allow_regression=True)
    if framework == "lightgbm":
        import lightgbm

        from treeleaks.frontends.lightgbm import read_lightgbm

        booster = lightgbm.LGBMRegressor(n_estimators=trees, random_state=seed, verbose=-1,
                                         **params).fit(X, y)
        return read_lightgbm(booster.booster_.model_to_string())
    import xgboost

    from treeleaks.frontends.xgboost import read_xgboost

    return read_xgboost(xgboost.XGBRegressor(n_estimators=trees, random_state=seed,
                                             **params).fit(X, y).get_booster())


def derived_right(model: ReleasedModel, X: np.ndarray, y: np.ndarray) -> bool:
    """Whether every count and every sum of residuals the file gives holds for the truth."""
    leaves = model.apply(X)
    counts = all((np.bincount(leaves[:, t], minlength=tree.n_leaves) == tree.counts[:, 0])
                 .all() for t, tree in enumerate(model.trees))
    return counts and largest_gradient_miss(model, leaves, y)[0] <= 1.0


def run_one(spec: str, framework: str, kind: str, seed: int, trees: int,
            time_limit: float) -> dict[str, Any]:
    """One booster: fit, read, check, reconstruct, score."""
    X, y = dataset(spec, seed)
    model = fit_and_read(framework, kind, X, y, trees, seed)
    start = time.perf_counter()
    rec = reconstruct(model, time_limit=time_limit, seed=seed)
    took = time.perf_counter() - start
    row: dict[str, Any] = {
        "dataset": spec, "framework": framework, "model": kind, "seed": seed,
        "trees": trees, "derived_right": derived_right(model, X, y),
        "status": str(rec.status), "verified": rec.verified, "partial": rec.partial,
        "time_s": round(took, 2), "rows": rec.n_rows, "n": len(y),
        "targets_exact": None if rec.regression is None else rec.regression.targets_exact}
    if rec.n_rows:
        row.update(interval_scores(rec, model, X, y, seed))
    return row


def interval_scores(rec: Reconstruction, model: ReleasedModel, X: np.ndarray,
                    y: np.ndarray, seed: int) -> dict[str, float]:
    """Rows in no order, with target intervals, scored against the training rows (see the
    module doc)."""
    names = list(model.feature_names)
    got_X = rec.rows[names].to_numpy(float)
    got_y = rec.rows[model.label_name].to_numpy(float)
    span = np.maximum(X.max(axis=0) - X.min(axis=0), 1e-12)
    y_span = max(float(y.max() - y.min()), 1e-12)
    rng = np.random.default_rng(seed)
    guess_X = rng.uniform(X.min(axis=0), X.max(axis=0), size=got_X.shape)
    guess_y = rng.uniform(y.min(), y.max(), size=got_y.shape)
    box_low, box_high = rec.lower[names].to_numpy(float), rec.upper[names].to_numpy(float)
    mine, theirs = _paired(X, got_X, span, box_low, box_high)
    guess_mine, guess_theirs = _paired(X, guess_X, span)
    scores = dict(
        feature_error=float(np.mean(np.abs(got_X[mine] - X[theirs]) / span)),
        random_feature_error=float(np.mean(np.abs(guess_X[guess_mine] - X[guess_theirs])
                                           / span)),
        target_error=float(np.mean(np.abs(got_y[mine] - y[theirs]) / y_span)),
        random_target_error=float(np.mean(np.abs(guess_y[guess_mine] - y[guess_theirs])
                                          / y_span)))
    bounds = None if rec.regression is None else rec.regression.target_bounds
    if bounds is None:  # each row a group's mean: no interval to hold
        return scores
    low, high = bounds
    return {**scores,
            "inside": float(np.mean((low[mine] - PRECISION * y_span <= y[theirs])
                                    & (y[theirs] <= high[mine] + PRECISION * y_span))),
            "interval_width": float(np.median((high - low) / y_span))}


def _cell(value: float | None, spec: str) -> str:
    """A figure for the table in format ``spec``, a dash where there is none."""
    return f"{'-':>6}" if value is None else format(value, spec)


def _paired(X: np.ndarray, got: np.ndarray, span: np.ndarray,
            low: np.ndarray | None = None, high: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """The pairing of returned and true rows of least feature error, a true row inside a
    returned row's bounds (``low``/``high``, when given) before any outside them."""
    cost = (np.abs(got[:, None] - X[None]) / span).mean(axis=2)
    if low is not None and high is not None:
        inside = ((low[:, None] - 1e-9 <= X[None]) & (X[None] <= high[:, None] + 1e-9)
                  ).all(axis=2)
        cost = cost + OUTSIDE * ~inside
    return linear_sum_assignment(cost)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="diabetes,diabetes-binned:3")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--models", default="default,fine")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "boosted_regression.json")
    parser.add_argument("--smoke", action="store_true", help="20 trees, one seed")
    args = parser.parse_args()
    seeds, trees = (1, 20) if args.smoke else (args.seeds, args.trees)
    out = RESULTS / "boosted_regression_smoke.json" if args.smoke else args.out
    rows = []
    print(f"{'dataset':>18} {'framework':>9} {'model':>7} {'seed':>4} {'derived':>7} "
          f"{'status':>8} {'verif':>5} {'time s':>6} {'rows':>5} {'exact':>5} {'inside':>6} "
          f"{'width':>6} {'y err':>6} {'random':>6} {'x err':>6} {'random':>6}")
    for spec in args.datasets.split(","):
        for framework in args.frameworks.split(","):
            for kind in args.models.split(","):
                for seed in range(seeds):
                    try:
                        row = run_one(spec, framework, kind, seed, trees, args.time_limit)
                    except Exception as exc:  # a benchmark reports and goes on
                        row = {"dataset": spec, "framework": framework, "model": kind,
                               "seed": seed, "error_message": f"{type(exc).__name__}: {exc}"}
                        print(f"{spec:>18} {framework:>9} {kind:>7} {seed:>4} "
                              f"{row['error_message'][:90]}")
                        rows.append(row)
                        continue
                    rows.append(row)
                    print(f"{spec:>18} {framework:>9} {kind:>7} {seed:>4} "
                          f"{row['derived_right']!s:>7} {row['status']:>8} "
                          f"{row['verified']!s:>5} {row['time_s']:>6.1f} {row['rows']:>5} "
                          f"{row['targets_exact'] or 0:>5} {_cell(row.get('inside'), '>6.1%')} "
                          f"{_cell(row.get('interval_width'), '>6.3f')} "
                          f"{row.get('target_error', 0):>6.3f} "
                          f"{row.get('random_target_error', 0):>6.3f} "
                          f"{row.get('feature_error', 0):>6.3f} "
                          f"{row.get('random_feature_error', 0):>6.3f}")
    RESULTS.mkdir(exist_ok=True)
    out.write_text(json.dumps({"arguments": {**vars(args), "out": str(out)}, "rows": rows},
                              indent=2, default=str) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
