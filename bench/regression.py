"""Benchmark: bootstrap regression forests with their draws reconstructed (issue 39, step 1).

For every seed: fit scikit-learn's ``RandomForestRegressor(random_state=seed)`` (every
default) on diabetes (442 x 10, raw values, integer targets), read it with
`treeleaks.from_sklearn`, reconstruct, and score: verified, the share of rows whose target
equals the true row's at the same training position, the share proven exact, and the
share of true feature values inside their rows' boxes.

    python bench/regression.py            # diabetes, seeds 0-2
    python bench/regression.py --smoke    # 20 trees, one seed: well under 60 s
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

from treeleaks import from_sklearn, reconstruct

RESULTS = Path(__file__).parent / "results"


def run_one(seed: int, n_trees: int, time_limit: float) -> dict[str, Any]:
    """One forest: fit, read, reconstruct, score against the training rows."""
    X, y = load_diabetes(return_X_y=True, scaled=False)
    forest = RandomForestRegressor(n_estimators=n_trees, random_state=seed).fit(X, y)
    model = from_sklearn(forest, allow_regression=True)
    start = time.perf_counter()
    rec = reconstruct(model, time_limit=time_limit, seed=seed)
    took = time.perf_counter() - start
    row = {"seed": seed, "trees": n_trees, "status": str(rec.status),
           "verified": rec.verified, "time_s": round(took, 2), "rows": rec.n_rows}
    if rec.n_rows == len(y):
        names = list(model.feature_names)
        low, high = rec.lower[names].to_numpy(), rec.upper[names].to_numpy()
        row.update(
            targets_equal=float(np.mean(rec.rows[model.label_name].to_numpy(float) == y)),
            targets_proven=(rec.targets_exact or 0) / len(y),
            features_inside=float(np.mean((low <= X) & (high >= X))))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--smoke", action="store_true", help="20 trees, one seed")
    args = parser.parse_args()
    seeds, trees = (1, 20) if args.smoke else (args.seeds, args.trees)
    rows = []
    print(f"{'seed':>4} {'trees':>5} {'status':>10} {'verified':>8} {'time s':>7} "
          f"{'targets =':>9} {'proven':>7} {'inside':>7}")
    for seed in range(seeds):
        try:
            row = run_one(seed, trees, args.time_limit)
        except Exception as exc:  # a benchmark reports and goes on
            row = {"seed": seed, "trees": trees, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{seed:>4} {trees:>5} error: {row['error']}")
            rows.append(row)
            continue
        rows.append(row)
        print(f"{seed:>4} {trees:>5} {row['status']:>10} {row['verified']!s:>8} "
              f"{row['time_s']:>7.2f} {row.get('targets_equal', 0):>9.1%} "
              f"{row.get('targets_proven', 0):>7.1%} {row.get('features_inside', 0):>7.1%}")
    RESULTS.mkdir(exist_ok=True)
    name = "regression_smoke.json" if args.smoke else "regression.json"
    (RESULTS / name).write_text(json.dumps({"dataset": "diabetes", "rows": rows}, indent=2)
                                + "\n")
    print(f"wrote {RESULTS / name}")


if __name__ == "__main__":
    main()
