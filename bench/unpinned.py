"""Benchmark: how far the released counts pin the training rows (issue 50).

For every (table, model kind, seed): fit the model with every default but the seed on the
table of `real_tables.py`, then walk from the *true* rows by count-neutral crossovers
(`treeleaks.counts.crossover`: two rows of one class trade some columns' values; every
tree's leaves get the same draws of each class and the same distinct rows) for the time
given. The walked dataset is

- checked against the model as a complete dataset (`counts.verify.verify`: every count
  equal, draws and distinct rows included);
- scored against the truth by rows recovered (`evaluation.recovered.rows_recovered`): the
  share of true rows it gives back, as any reconstruction is scored. A verified dataset
  that recovers r% of the true rows shows the counts alone cannot tell the truth from a
  dataset sharing r% of its rows: an attack working from the counts and the trees' boxes
  cannot be sure of more;
- refitted: the same estimator with the same seed trained on the walked rows, compared
  tree by tree with the released one (features, thresholds, counts). A refit equal to the
  release shows that nothing in the file tells the two datasets apart; a refit that differs
  leaves the split rules (thresholds at midpoints of the node's values, the best split) as
  evidence an attack could still use.

    python bench/unpinned.py --smoke      # wine, ExtraTrees, 5 s of walk (< 1 min); exit 1
                                          # when the walked dataset fails its check
    python bench/unpinned.py --tables wine,breast_cancer --models rf,et --seeds 1 --walk-s 30
    nohup nice timeout 3600 python bench/unpinned.py --seeds 3 --walk-s 30 &
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from common import BENCH_DIR, DEFAULT_DATA_DIR, environment, fmt, median, write_json
from real_tables import REGRESSORS, fit_estimator, fit_model, load_table

from treeleaks.counts.crossover import column_units, crossover_walk, position_draws
from treeleaks.counts.verify import verify, verify_regression
from treeleaks.evaluation.recovered import References, rows_recovered
from treeleaks.ir.schema import FeatureSchema

TABLES = ("wine", "star98", "breast_cancer", "anes96", "classif:1000")
MODELS = ("rf", "rf-leaf5", "et", "rf-nobootstrap", "rf-reg", "et-reg")
OUT = BENCH_DIR / "results" / "unpinned.json"
SMOKE_OUT = BENCH_DIR / "results" / "unpinned_smoke.json"


def run(spec: str, kind: str, seed: int, walk_s: float, data_dir: Path) -> dict[str, Any]:
    """One walk from the truth: its moves, its certificate, its score and its refit."""
    regression = kind in REGRESSORS
    table = load_table(spec, seed, data_dir)
    X, y, groups = table.for_model(regression)
    model = fit_model(kind, X, y, seed, y.name)
    names = list(model.feature_names)
    units = column_units(len(names), [[names.index(c) for c in g] for g in groups])
    classes = y.to_numpy() if regression else model.class_index(y.to_numpy())
    start = time.perf_counter()
    draws = position_draws(model, np.arange(len(X)))
    walk = crossover_walk(model, X[names].to_numpy(dtype=np.float64), classes, draws,
                          units=units, deadline=start + walk_s, seed=seed)
    walked = pd.DataFrame(walk.X, columns=names).assign(**{y.name: y.to_numpy()})
    truth = X[names].assign(**{y.name: y.to_numpy()})
    certificate = (verify_regression if regression else verify)(model, walked)
    score = rows_recovered(model, truth, walked, FeatureSchema.infer(model), label=y.name,
                           draws=draws if model.bootstrap else None,
                           references=References(n_random=0, true_boxes=False))
    same_trees, same_nodes = refit_agreement(kind, X, y, walked[names], seed)
    return {"table": spec, "model": kind, "seed": seed, "walk_s": walk_s, "n": len(X),
            "n_trees": model.n_trees, "moves": walk.moves, "tried": walk.tried,
            "verified": certificate.verified, "counts_wrong": certificate.n_counts_wrong,
            "far_rows": walk.far, "recovered": score.rows_recovered,
            "recovered_share": score.recovered_share, "matched_error": score.matched_error,
            "refit_same_trees": same_trees, "refit_same_nodes": same_nodes}


def refit_agreement(kind: str, X: pd.DataFrame, y: pd.Series, walked: pd.DataFrame,
                    seed: int) -> tuple[float, float]:
    """The shares of trees and of nodes the same estimator, refitted with the same seed on
    the walked rows, grows exactly as released (feature, threshold, counts)."""
    trees = [_trees(fit_estimator(kind, frame, y, seed)) for frame in (X, walked)]
    same_trees = same_nodes = total_nodes = 0
    for old, new in zip(*trees, strict=True):
        total_nodes += old.node_count
        if old.node_count != new.node_count:
            continue
        same = ((old.feature == new.feature) & np.isclose(old.threshold, new.threshold)
                & (old.n_node_samples == new.n_node_samples)
                & np.isclose(old.weighted_n_node_samples, new.weighted_n_node_samples))
        same_nodes += int(same.sum())
        same_trees += bool(same.all())
    return same_trees / len(trees[0]), same_nodes / max(total_nodes, 1)


def _trees(fitted: Any) -> list[Any]:
    """The fitted scikit-learn trees' arrays."""
    estimators = getattr(fitted, "estimators_", [fitted])
    return [estimator.tree_ for estimator in estimators]


def markdown(runs: list[dict[str, Any]]) -> str:
    """Medians over seeds per table x model x walk time."""
    lines = ["| table | model | walk s | seeds | moves | verified | rows recovered by the "
             "other dataset | far rows | refit: same trees | same nodes |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["table"], r["model"], r["walk_s"]) for r in runs},
                  key=lambda k: (TABLES.index(k[0]) if k[0] in TABLES else 99, k[1], k[2]))
    for table, kind, walk_s in keys:
        group = [r for r in runs if (r["table"], r["model"], r["walk_s"]) == (table, kind,
                                                                             walk_s)]
        lines.append(
            f"| {table} | {kind} | {walk_s:g} | {len(group)} | "
            f"{int(median(r['moves'] for r in group))} | "
            f"{sum(r['verified'] for r in group)}/{len(group)} | "
            f"{fmt(median(r['recovered_share'] for r in group))} | "
            f"{fmt(median(r['far_rows'] / r['n'] for r in group))} | "
            f"{fmt(median(r['refit_same_trees'] for r in group))} | "
            f"{fmt(median(r['refit_same_nodes'] for r in group))} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", default=",".join(TABLES))
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--seeds", type=int, default=3, help="seeds 0..n-1")
    p.add_argument("--walk-s", type=float, default=30.0, help="seconds of walk per run")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--out", type=Path, default=None,
                   help="results JSON (default bench/results/unpinned.json; smoke: "
                        "unpinned_smoke.json)")
    p.add_argument("--smoke", action="store_true", help="wine, ExtraTrees, one seed, 5 s")
    args = p.parse_args(argv)
    if args.smoke:
        args.tables, args.models, args.seeds, args.walk_s = "wine", "et", 1, 5.0
    args.out = args.out or (SMOKE_OUT if args.smoke else OUT)
    runs = []
    for spec in args.tables.split(","):
        for kind in args.models.split(","):
            for seed in range(args.seeds):
                record = run(spec, kind, seed, args.walk_s, args.data_dir)
                runs.append(record)
                print(f"{spec} {kind} seed {seed}: {record['moves']} moves, verified "
                      f"{record['verified']}, recovered {fmt(record['recovered_share'])}, "
                      f"refit same trees {fmt(record['refit_same_trees'])}", flush=True)
                write_json(args.out, {"environment": environment(), "runs": runs})
    print(markdown(runs))
    return 0 if all(r["verified"] for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
