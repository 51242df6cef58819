"""Benchmark: how side knowledge sharpens a reconstruction (the known-columns curve).

For every (dataset, forest, k, seed): sample N training rows, fit a 100-tree forest, give
the attack k of the columns (chosen at random per seed, linked row by row, without the
label) and reconstruct the rest. The error is measured on the columns *not* given, after
matching the rows on all columns, against the random baseline on those columns. Forests:
``exact`` (bootstrap=False) and ``bootstrap`` (scikit-learn's default, draws read
from the model), at depths where the model alone leaves rows ambiguous.

    python bench/knowledge.py --smoke       # CI check, < 1 min
    python bench/knowledge.py               # the grid below
    python bench/knowledge.py --datasets adult --forests exact --depths 3 --known 0,4,8

See bench/README.md for what is measured.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import (
    BENCH_DIR,
    DEFAULT_DATA_DIR,
    environment,
    fmt,
    isolated_record,
    load_dataset,
    mean,
    median,
    share,
    write_json,
)

DATASETS = ("compas", "adult", "default_credit")
FORESTS = ("exact", "bootstrap")
DEPTHS: tuple[int, ...] = (3, 5)
KNOWN = (0, 2, 4, 8, 12)
N_ROWS, N_TREES = 100, 100
SMOKE = {"datasets": ("compas",), "forests": ("exact",), "depths": (3,), "known": (0, 4),
         "seeds": 1, "time_limit": 30.0}


def worker(config_path: str) -> int:
    """Fit, reconstruct with k known columns and score one configuration. Child side."""
    cfg = json.loads(Path(config_path).read_text())
    out: dict[str, Any] = {}
    try:
        import numpy as np
        from sklearn.ensemble import RandomForestClassifier

        from treeleaks import FeatureSchema, Knowledge, from_sklearn, reconstruct
        from treeleaks.evaluation.metrics import evaluate

        data = load_dataset(cfg["dataset"], Path(cfg["data_dir"]))
        train = data.sample(cfg["n"], cfg["seed"]).reset_index(drop=True)
        X, y = train.drop(columns=[data.label]), train[data.label]
        schema = FeatureSchema.from_frame(data.features, data.one_hot_groups or None,
                                          data.at_most_one_groups or None)
        forest = RandomForestClassifier(n_estimators=N_TREES, max_depth=cfg["depth"],
                                        bootstrap=cfg["forest"] == "bootstrap",
                                        random_state=cfg["seed"]).fit(X, y)
        model = from_sklearn(forest, label_name=data.label)
        order = np.random.default_rng(cfg["seed"]).permutation(list(X.columns))
        known, rest = list(order[: cfg["k"]]), list(order[cfg["k"]:])
        knowledge = Knowledge(columns=train[known]) if known else None
        tick = time.perf_counter()
        rec = reconstruct(model, schema, time_limit=cfg["time_limit"],
                          certainty_time_limit=min(10.0, cfg["time_limit"] / 4),
                          knowledge=knowledge)
        out.update(status=rec.status, verified=rec.verified, time_s=time.perf_counter() - tick,
                   message=rec.message, known=known)
        if rec.n_rows == len(train):
            score = evaluate(train, rec.rows, schema, label=data.label, n_baseline_draws=3,
                             seed=cfg["seed"], error_columns=rest)
            out.update(error_rest=score.error, baseline_rest=score.baseline_error,
                       proven_share=float(np.mean(rec.proven)),
                       known_respected=bool((rec.rows[known].to_numpy() == train[known]
                                             .to_numpy()).all()) if cfg["forest"] ==
                       "bootstrap" else None)
    except Exception as exc:  # reported as status ERROR by the parent
        traceback.print_exc()
        out["exception"] = f"{type(exc).__name__}: {exc}"
    Path(cfg["result_path"]).write_text(json.dumps(out, default=float))
    return 0


def aggregate(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["dataset"], run["forest"], run["depth"], run["k"]), []).append(run)
    return [{
        "dataset": dataset, "forest": forest, "depth": depth, "known_columns": k,
        "runs": len(members),
        "share_verified": share([bool(r.get("verified")) for r in members]),
        "time_s_median": median(r.get("time_s") for r in members),
        "error_rest_mean": mean(r.get("error_rest") for r in members),
        "baseline_rest_mean": mean(r.get("baseline_rest") for r in members),
        "proven_share_mean": mean(r.get("proven_share") for r in members),
        "statuses": sorted({r["status"] for r in members}),
    } for (dataset, forest, depth, k), members in groups.items()]


def print_table(rows: list[dict[str, Any]]) -> None:
    head = ("dataset", "forest", "depth", "known", "runs", "verified", "time s",
            "error (rest)", "baseline (rest)", "proven", "statuses")
    print(" | ".join(head))
    for r in rows:
        print(" | ".join(str(v) for v in (
            r["dataset"], r["forest"], r["depth"], r["known_columns"], r["runs"],
            fmt(r["share_verified"], 2), fmt(r["time_s_median"], 2), fmt(r["error_rest_mean"]),
            fmt(r["baseline_rest_mean"]), fmt(r["proven_share_mean"], 2),
            ",".join(r["statuses"]))))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--forests", default=",".join(FORESTS))
    p.add_argument("--depths", default=",".join(map(str, DEPTHS)))
    p.add_argument("--known", default=",".join(map(str, KNOWN)),
                   help="numbers of known columns")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--smoke", action="store_true", help="the CI check (two small runs)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if args.smoke:
        datasets, forests, depths = SMOKE["datasets"], SMOKE["forests"], SMOKE["depths"]
        known, seeds, time_limit = SMOKE["known"], SMOKE["seeds"], SMOKE["time_limit"]
    else:
        datasets, forests = args.datasets.split(","), args.forests.split(",")
        depths = [int(d) for d in args.depths.split(",")]
        known = [int(k) for k in args.known.split(",")]
        seeds, time_limit = args.seeds, args.time_limit
    if not (args.data_dir / "datasets.json").exists():
        print(f"no datasets in {args.data_dir}; nothing to run", file=sys.stderr)
        return 0
    out = args.out or BENCH_DIR / "results" / (
        "knowledge_smoke.json" if args.smoke else "knowledge.json")
    meta = {"benchmark": "knowledge", "started": datetime.now(UTC).isoformat(),
            "argv": sys.argv, "n_rows": N_ROWS, "n_trees": N_TREES, "time_limit": time_limit,
            "environment": environment()}
    runs = []
    for dataset in datasets:
        for forest in forests:
            for depth in depths:
                for k in known:
                    for seed in range(seeds):
                        config = {"dataset": dataset, "forest": forest, "depth": depth,
                                  "k": k, "seed": seed, "n": N_ROWS, "time_limit": time_limit,
                                  "data_dir": str(args.data_dir)}
                        run = isolated_record(Path(__file__), config, time_limit + 120)
                        runs.append(run)
                        print(f"{dataset} {forest} depth={depth} k={k} seed={seed}: "
                              f"{run['status']} verified={run.get('verified')} "
                              f"error(rest)={fmt(run.get('error_rest'))}", file=sys.stderr,
                              flush=True)
                        write_json(out, {"meta": meta, "aggregates": aggregate(runs),
                                         "runs": runs})
    print_table(aggregate(runs))
    if args.smoke:
        bad = [r for r in runs if not r.get("verified")]
        print("smoke: FAILED" if bad else "smoke: ok", file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
