"""Benchmark: does every default XGBoost binary classifier read (issue 50, item 3)?

For seeds 0..K-1: a random table (30-1,000 rows; 1-4 rounded numerical columns, 0-3 small
integer ones; a label of any share from 5% to 95%), ``XGBClassifier(random_state=0)`` with
``--rounds`` rounds, its learning rate ``--rate`` and L2 penalty ``--penalty`` (the reader
reads the first two trees' counts; later rounds change nothing it derives), read by
`treeleaks.frontends.xgboost.read_xgboost`. Counted: files refused (by message), and files
whose first-tree counts differ from the training rows' (routed by XGBoost's own
``pred_leaf``). Then ``--edits`` files with one first-tree leaf
value scaled by ``1 + --edit``: how many are still read, and whether their counts are true.

    python bench/xgboost_binary_files.py --tables 1000            # 0 of 1,000 refused
    python bench/xgboost_binary_files.py --tables 0 --edits 300   # edited files
    python bench/xgboost_binary_files.py --tables 300 --rate 0.05 --penalty 4   # other options
"""

from __future__ import annotations

import argparse
import collections
import json
import time

import numpy as np
import xgboost as xgb

from treeleaks.frontends.xgboost import read_xgboost
from treeleaks.runtime.errors import TreeleaksError


def table(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The seed's random table (see the module doc)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 1001))
    columns = [rng.normal(size=n).round(int(rng.integers(1, 4)))
               for _ in range(int(rng.integers(1, 5)))]
    columns += [rng.integers(0, int(rng.integers(2, 12)), n).astype(float)
                for _ in range(int(rng.integers(0, 4)))]
    X = np.column_stack(columns)
    score = X[:, 0] + rng.normal(scale=rng.uniform(0.2, 2.0), size=n)
    y = (score > np.quantile(score, 1.0 - rng.uniform(0.05, 0.95))).astype(int)
    if y.min() == y.max():
        y[0] = 1 - y[0]
    return X, y


def true_counts(fitted: xgb.XGBClassifier, model, X: np.ndarray, y: np.ndarray) -> bool:
    """Whether the model's first-tree counts are the training rows'."""
    tree = model.trees[0]
    nodes = fitted.get_booster().predict(xgb.DMatrix(X), pred_leaf=True)[:, 0].astype(int)
    true = np.zeros((tree.n_leaves, 2), dtype=np.int64)
    np.add.at(true, (tree.leaf_of_node[nodes], y), 1)
    return bool((tree.counts == true).all())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--edits", type=int, default=0)
    parser.add_argument("--edit", type=float, default=0.05)
    parser.add_argument("--rate", type=float, default=0.3, help="learning_rate")
    parser.add_argument("--penalty", type=float, default=1.0, help="reg_lambda")
    args = parser.parse_args()
    refused: collections.Counter[str] = collections.Counter()
    wrong, start = 0, time.perf_counter()
    for seed in range(args.tables):
        X, y = table(seed)
        fitted = xgb.XGBClassifier(n_estimators=args.rounds, random_state=0,
                                   learning_rate=args.rate, reg_lambda=args.penalty).fit(X, y)
        try:
            wrong += not true_counts(fitted, read_xgboost(fitted), X, y)
        except TreeleaksError as exc:
            refused[str(exc).split(":")[0]] += 1
    if args.tables:
        print(f"{args.tables} files (rate {args.rate:g}, penalty {args.penalty:g}): "
              f"{sum(refused.values())} refused, {wrong} with counts other than the training "
              f"rows' ({time.perf_counter() - start:.0f} s)")
        print(json.dumps(refused, indent=1))
    read, read_true, reasons = 0, 0, collections.Counter()
    for seed in range(args.edits):
        X, y = table(seed)
        fitted = xgb.XGBClassifier(n_estimators=3, random_state=0).fit(X, y)
        data = json.loads(bytes(fitted.get_booster().save_raw(raw_format="json")))
        tree = data["learner"]["gradient_booster"]["model"]["trees"][0]
        leaves = [k for k, left in enumerate(tree["left_children"]) if left < 0]
        tree["split_conditions"][leaves[np.random.default_rng(seed).integers(len(leaves))]] \
            *= 1.0 + args.edit
        try:
            model = read_xgboost(data)
        except TreeleaksError as exc:
            reasons[str(exc)[:60]] += 1
            continue
        read += 1
        read_true += true_counts(fitted, model, X, y)
    if args.edits:
        print(f"{args.edits} files with a leaf value x {1 + args.edit:g}: {read} read "
              f"({read_true} of them with the true counts), "
              f"{sum(reasons.values())} refused")
        print(json.dumps(reasons, indent=1))


if __name__ == "__main__":
    main()
