"""Benchmark: regression models reconstructed with their targets (issue 39).

For every (dataset, model, seed): fit the scikit-learn regressor with every default but
``random_state=seed`` (``--leaf 5`` adds ``min_samples_leaf=5``), read it with
`treeleaks.from_sklearn`, reconstruct, and score against the training rows as a multiset
(``rf``: ``RandomForestRegressor``, bootstrap, draws in the model; ``et``:
``ExtraTreesRegressor``, every tree saw every row once):

Scores: verified; rows recovered (`treeleaks.evaluation.recovered`: true rows matched one to
one with returned rows of their exact target sharing their leaf in 90% of the trees that
drew them); the share of true targets returned (as a multiset); and the matched error (mean
absolute difference over the columns' ranges) beside the true rows' own boxes filled as the
engine fills a box (the error a perfect reconstruction of the leaves reaches) and random
rows. Datasets:
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
import pandas as pd
from boosted_regression import interval_scores
from sklearn.datasets import load_diabetes, make_friedman1
from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor

from treeleaks import FeatureSchema, from_sklearn, reconstruct
from treeleaks.evaluation.recovered import References, rows_recovered

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


def targets_returned(y: np.ndarray, got_y: np.ndarray) -> float:
    """The share of true targets the returned rows hold, as multisets."""
    true_values, true_counts = np.unique(y, return_counts=True)
    got_values, got_counts = np.unique(got_y, return_counts=True)
    _, i, j = np.intersect1d(true_values, got_values, return_indices=True)
    return float(np.minimum(true_counts[i], got_counts[j]).sum() / len(y))


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
    truth = pd.DataFrame(X, columns=names).assign(**{model.label_name: y})
    score = rows_recovered(model, truth, rec.rows, FeatureSchema.from_frame(truth[names]),
                           references=References(seed=seed))
    row.update(
        recovered=score.rows_recovered, recovered_share=score.recovered_share,
        targets_right=targets_returned(y, rec.rows[model.label_name].to_numpy(float)),
        error=score.matched_error, truth_box_error=score.true_box_error,
        random_error=score.random_error)
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
          f"{'time s':>7} {'rows':>7} {'recovered':>9} {'targets':>8} {'error':>6} "
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
                      f"{row['rows']:>7} {row.get('recovered_share', 0):>9.1%} "
                      f"{row.get('targets_right', 0):>8.1%} {row.get('error', 0):>6.3f} "
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
