"""Benchmark: gradient-boosted models read and reconstructed (issue 30). LightGBM so far.

For every (dataset, model, trees, seed): fit the booster on the training table, read it
back from its model text file with `treeleaks.frontends.lightgbm.read_lightgbm` (the load
time is measured), check every count it derives against the training rows (the first
tree's class counts, every tree's row counts), reconstruct with the data's schema and
score the rows against the truth beside random guessing.

Models: ``fine`` (``min_child_samples=1, min_child_weight=0``: leaves as fine as a
forest's) and ``default`` (LightGBM's defaults: leaves of 20 rows or more).
Datasets: the shared binarized ``compas``, ``adult``, ``default_credit`` (``name:N``
samples N rows by the seed; skipped with a line when the data is absent) and ``cancer``
(scikit-learn's breast cancer, 569 x 30 raw).

    python bench/boosted.py --smoke      # cancer, 10 trees, one seed; always exits 0
    python bench/boosted.py --datasets compas:100,adult:100,default_credit:100 --seeds 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from common import (
    BENCH_DIR,
    DEFAULT_DATA_DIR,
    environment,
    fmt,
    load_dataset,
    median,
    sklearn_dataset,
    write_json,
)

MODELS = {"fine": {"min_child_samples": 1, "min_child_weight": 0}, "default": {}}
DATASETS = ("compas:100", "adult:100", "default_credit:100", "cancer")


def training_table(spec: str, seed: int, data_dir: Path
                   ) -> tuple[pd.DataFrame, np.ndarray, Any] | None:
    """Features, labels and schema of ``spec`` for ``seed``; None when its data is absent."""
    from treeleaks import FeatureSchema

    name, _, size = spec.partition(":")
    if name == "cancer":
        data = sklearn_dataset("cancer")
    elif not (data_dir / f"{name}.csv").exists():
        return None
    else:
        data = load_dataset(name, data_dir)
    frame = data.frame.sample(int(size), random_state=seed).reset_index(drop=True) \
        if size else data.frame
    X = frame.drop(columns=[data.label])
    schema = FeatureSchema.from_frame(X, one_hot_groups=data.one_hot_groups or None,
                                      at_most_one_groups=data.at_most_one_groups or None)
    return X, frame[data.label].to_numpy(), schema


def run_one(spec: str, model_kind: str, n_trees: int, seed: int, time_limit: float,
            data_dir: Path) -> dict[str, Any] | None:
    import lightgbm as lgb

    from treeleaks import reconstruct
    from treeleaks.evaluation.metrics import evaluate
    from treeleaks.frontends.lightgbm import read_lightgbm

    table = training_table(spec, seed, data_dir)
    if table is None:
        return None
    X, y, schema = table
    y_index = np.unique(y, return_inverse=True)[1]
    booster = lgb.LGBMClassifier(n_estimators=n_trees, random_state=seed, verbose=-1,
                                 **MODELS[model_kind]).fit(X.to_numpy(dtype=float), y_index)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.txt"
        booster.booster_.save_model(path)
        start = time.perf_counter()
        model = read_lightgbm(path, list(X.columns), label_name="label")
        load_s = time.perf_counter() - start
    leaves = booster.booster_.predict(X.to_numpy(dtype=float), pred_leaf=True)
    counts_right = all(
        (tree.counts == (model.leaf_counts_at(leaves, y_index)[t] if not tree.pooled else
                         np.column_stack([np.bincount(leaves[:, t], minlength=tree.n_leaves),
                                          np.zeros(tree.n_leaves, dtype=np.int64)]))).all()
        for t, tree in enumerate(model.trees))
    rec = reconstruct(model, schema, time_limit=time_limit, threads=1, seed=seed)
    record = {"dataset": spec, "model": model_kind, "trees": n_trees, "seed": seed,
              "n_rows": len(y), "load_s": load_s, "derived_counts_right": counts_right,
              "status": rec.status, "verified": rec.verified, "time_s": rec.time_s,
              "rows": rec.n_rows, "proven_rows": rec.proven_rows, "error": None,
              "baseline_error": None, "message": rec.message}
    if rec.n_rows:
        truth = X.assign(label=y_index)
        score = evaluate(truth, rec.rows, schema, label="label")
        record.update(error=score.error, baseline_error=score.baseline_error)
    return record


def aggregate(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["dataset"], run["model"], run["trees"]), []).append(run)
    return [{"dataset": d, "model": m, "trees": t, "seeds": len(rs),
             "verified": sum(bool(r["verified"]) for r in rs),
             "counts_right": sum(bool(r["derived_counts_right"]) for r in rs),
             "time_s": median(r["time_s"] for r in rs),
             "load_s": median(r["load_s"] for r in rs),
             "error": median(r["error"] for r in rs),
             "baseline_error": median(r["baseline_error"] for r in rs),
             "proven_rows": median(r["proven_rows"] for r in rs)}
            for (d, m, t), rs in groups.items()]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--models", default="fine,default")
    p.add_argument("--trees", default="10,100")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "boosted.json")
    p.add_argument("--smoke", action="store_true")
    args = p.parse_args(argv)
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        print("lightgbm is not installed: pip install lightgbm (or the dev extras)")
        return 0
    if args.smoke:
        args.datasets, args.models, args.trees, args.seeds = "cancer", "default", "10", 1
        args.time_limit, args.out = 20.0, Path(tempfile.gettempdir()) / "boosted_smoke.json"
    runs = []
    for spec in args.datasets.split(","):
        for kind in args.models.split(","):
            for n_trees in map(int, args.trees.split(",")):
                for seed in range(args.seeds):
                    record = run_one(spec, kind, n_trees, seed, args.time_limit, args.data_dir)
                    if record is None:
                        print(f"{spec}: data not found under {args.data_dir}; skipped")
                        break
                    runs.append(record)
                    print(f"{spec} {kind} {n_trees} trees seed={seed}: {record['status']} "
                          f"verified={record['verified']} {record['time_s']:.2f} s "
                          f"error={fmt(record['error'])} random={fmt(record['baseline_error'])}"
                          f" counts right={record['derived_counts_right']}", flush=True)
    rows = aggregate(runs)
    print("\n| dataset | model | trees | verified | derived counts right | median time s "
          "| load s | error | random | proven rows |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dataset']} | {r['model']} | {r['trees']} | {r['verified']}/{r['seeds']} "
              f"| {r['counts_right']}/{r['seeds']} | {fmt(r['time_s'])} | {fmt(r['load_s'])} "
              f"| {fmt(r['error'])} | {fmt(r['baseline_error'])} | {fmt(r['proven_rows'])} |")
    write_json(args.out, {"environment": environment(), "args": {
        k: str(v) for k, v in vars(args).items()}, "summary": rows, "runs": runs})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
