"""Benchmark: regression models reconstructed with their targets (issue 39).

For every (dataset, model, seed): fit the scikit-learn regressor with every default but
``random_state=seed`` (``--leaf 5`` adds ``min_samples_leaf=5``), read it with
`treeleaks.from_sklearn`, reconstruct, and score against the training rows:

- ``rf``: ``RandomForestRegressor`` (bootstrap, draws in the model): rows in training order,
  scored position by position;
- ``et``: ``ExtraTreesRegressor`` (every tree saw every row once): rows in no order, each
  paired with a true row of the same target (the pairing of least error within each target).

Scores: verified, the share of rows whose target is the true one (as placed or paired), the
share of true values inside their rows' boxes, and the features' error (mean absolute
difference over the columns' ranges) beside the true rows' own boxes filled at their middle
(`default_forest.truth_boxes`: the error a perfect reconstruction of the leaves reaches) and
random guessing (uniform in each column's range, paired the same way). Datasets:
``diabetes`` (442 x 10, integer targets with ties) and ``friedman1:N`` (``make_friedman1``,
10 columns, continuous targets).

    python bench/regression.py                       # diabetes, rf and et, seeds 0-2
    python bench/regression.py --datasets friedman1:1000,friedman1:5000 --models et
    python bench/regression.py --smoke               # 20 trees, one seed: well under 60 s
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np
from boosted_regression import interval_scores
from default_forest import truth_boxes
from scipy.optimize import linear_sum_assignment
from sklearn.datasets import load_diabetes, make_friedman1
from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor

from treeleaks import from_sklearn, reconstruct

RESULTS = Path(__file__).parent / "results"
MODELS = {"rf": RandomForestRegressor, "et": ExtraTreesRegressor}


def dataset(spec: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The training rows and targets a spec names."""
    if spec == "diabetes":
        return load_diabetes(return_X_y=True, scaled=False)
    name, _, n = spec.partition(":")
    if name == "friedman1" and n.isdigit():
        X, y = make_friedman1(int(n), random_state=seed)
        return X, np.round(y, 6)
    raise SystemExit(f"unknown dataset {spec!r}: diabetes or friedman1:N")


def paired(X: np.ndarray, y: np.ndarray, got_X: np.ndarray, got_y: np.ndarray,
           span: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows in no order: within each target, the pairing of returned and true rows of
    least error; (returned index, true index) for every pair."""
    mine, theirs = [], []
    for target in np.unique(got_y):
        a, b = np.flatnonzero(got_y == target), np.flatnonzero(y == target)
        cost = np.abs(got_X[a][:, None] - X[b][None]).__truediv__(span).mean(axis=2)
        i, j = linear_sum_assignment(cost)
        mine.extend(a[i]), theirs.extend(b[j])
    return np.array(mine, dtype=np.int64), np.array(theirs, dtype=np.int64)


def run_one(spec: str, kind: str, seed: int, n_trees: int, leaf: int,
            time_limit: float) -> dict[str, Any]:
    """One model: fit, read, reconstruct, score against the training rows."""
    X, y = dataset(spec, seed)
    params = {"n_estimators": n_trees, "random_state": seed}
    if leaf > 1:
        params["min_samples_leaf"] = leaf
    model = from_sklearn(MODELS[kind](**params).fit(X, y), allow_regression=True)
    start = time.perf_counter()
    rec = reconstruct(model, time_limit=time_limit, seed=seed)
    took = time.perf_counter() - start
    row: dict[str, Any] = {
        "dataset": spec, "model": kind, "seed": seed, "trees": n_trees, "leaf": leaf,
        "status": str(rec.status), "verified": rec.verified, "time_s": round(took, 2),
        "rows": rec.n_rows, "n": len(y), "proven": rec.proven_rows,
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    if not rec.n_rows:
        return row
    # targets within intervals: scored as the boosters'
    if rec.regression is not None and rec.regression.target_bounds is not None:
        row.update(interval_scores(rec, model, X, y, seed))
        return row
    names = list(model.feature_names)
    got_X, got_y = rec.rows[names].to_numpy(float), rec.rows[model.label_name].to_numpy(float)
    low, high = rec.lower[names].to_numpy(), rec.upper[names].to_numpy()
    span = np.maximum(X.max(axis=0) - X.min(axis=0), 1e-12)
    if kind == "rf":  # training order: row k is training row k
        mine = theirs = np.arange(rec.n_rows)
    else:
        mine, theirs = paired(X, y, got_X, got_y, span)
    guess = np.random.default_rng(seed).uniform(X.min(axis=0), X.max(axis=0),
                                                size=got_X.shape)
    _, guess_theirs = (mine, theirs) if kind == "rf" else paired(X, y, guess, got_y, span)
    _, _, ideal = truth_boxes(model, X, np.zeros(X.shape[1], dtype=bool))
    row.update(
        truth_box_error=float(np.mean(np.abs(ideal - X) / span)),
        targets_right=float(np.sum(got_y[mine] == y[theirs]) / len(y)),
        inside=float(np.mean((low[mine] <= X[theirs]) & (X[theirs] <= high[mine]))),
        error=float(np.mean(np.abs(got_X[mine] - X[theirs]) / span)),
        random_error=float(np.mean(np.abs(guess[mine] - X[guess_theirs]) / span)))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="diabetes")
    parser.add_argument("--models", default="rf,et")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--leaf", type=int, default=1, help="min_samples_leaf")
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "regression.json")
    parser.add_argument("--smoke", action="store_true", help="20 trees, one seed")
    args = parser.parse_args()
    seeds, trees = (1, 20) if args.smoke else (args.seeds, args.trees)
    out = RESULTS / "regression_smoke.json" if args.smoke else args.out
    rows = []
    print(f"{'dataset':>15} {'model':>5} {'seed':>4} {'status':>10} {'verified':>8} "
          f"{'time s':>7} {'rows':>7} {'targets':>8} {'inside':>7} {'error':>6} "
          f"{'truth':>6} {'random':>6} {'y err':>6} {'random':>6} {'MB':>5}")
    for spec in args.datasets.split(","):
        for kind in args.models.split(","):
            for seed in range(seeds):
                try:
                    row = run_one(spec, kind, seed, trees, args.leaf, args.time_limit)
                except Exception as exc:  # a benchmark reports and goes on
                    row = {"dataset": spec, "model": kind, "seed": seed,
                           "error_message": f"{type(exc).__name__}: {exc}"}
                    print(f"{spec:>15} {kind:>5} {seed:>4} {row['error_message']}")
                    rows.append(row)
                    continue
                rows.append(row)
                print(f"{spec:>15} {kind:>5} {seed:>4} {row['status']:>10} "
                      f"{row['verified']!s:>8} {row['time_s']:>7.2f} "
                      f"{row['rows']:>7} {row.get('targets_right', 0):>8.1%} "
                      f"{row.get('inside', 0):>7.1%} {row.get('error', 0):>6.3f} "
                      f"{row.get('truth_box_error', 0):>6.3f} "
                      f"{row.get('random_error', 0):>6.3f} "
                      f"{row.get('target_error', 0):>6.3f} "
                      f"{row.get('random_target_error', 0):>6.3f} {row['peak_mb']:>5}")
    RESULTS.mkdir(exist_ok=True)
    out.write_text(json.dumps({"arguments": {**vars(args), "out": str(out)}, "rows": rows},
                              indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
