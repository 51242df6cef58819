"""Benchmark: reconstruction from differentially private forests (issue 8).

For every (dataset, N, trees T, depth d, epsilon, seed): sample N training rows, train
treeleaks' DP random forest on them with the dataset's public schema, and reconstruct the
most likely training set from the noisy counts. Reported per run: time to the first
complete dataset, the final error against the training set (rows matched, as the SaTML
2026 study scores it), the share of rows reconstructed perfectly, the random baseline,
and the forest's train and test accuracy. Options add the same run with N unknown, the
informed adversary (all rows but one known) against the per-column majority, and the
leak-vs-distribution test.

    python bench/dp.py --smoke        # CI check, < 1 min
    python bench/dp.py --quick        # the target table: T=10, d=5, eps 1/5/10/30, 5 seeds
    python bench/dp.py --sizes        # N = 100, 200, 500 at T=10, d=5, eps=5
    python bench/dp.py                # the full grid (long: spread it with --workers)

The grid runs as a treeleaks sweep (attack ``dp-forest``): every run an independent
process on a Dask LocalCluster of ``--workers K`` processes (``bench/grids/dp_quick.toml``
is the quick preset for ``treeleaks sweep``). On this 2-core machine more than one worker
slows each run down, so the timings quoted come from one worker.
See bench/README.md for what is measured.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import (
    BENCH_DIR,
    DEFAULT_DATA_DIR,
    environment,
    fmt,
    mean,
    median,
    run_grids,
    write_json,
)

from treeleaks.sweep import Grid

DATASETS = ("compas", "adult", "default_credit")
TREES = (1, 5, 10, 20, 30)
DEPTHS = (3, 5, 7)
EPSILONS = (0.1, 1.0, 5.0, 10.0, 20.0, 30.0)
PRESETS: dict[str, dict[str, Any]] = {
    "smoke": {"datasets": ("compas",), "n": (100,), "trees": (5,), "depths": (3,),
              "epsilons": (5.0,), "seeds": 1, "time_limit": 20.0},
    "quick": {"datasets": DATASETS, "n": (100,), "trees": (10,), "depths": (5,),
              "epsilons": (1.0, 5.0, 10.0, 30.0), "seeds": 5, "time_limit": 120.0},
    "sizes": {"datasets": DATASETS, "n": (100, 200, 500), "trees": (10,), "depths": (5,),
              "epsilons": (5.0,), "seeds": 5, "time_limit": 600.0},
}


def aggregate(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (dataset, N, T, d, ε): the runs with N known, and the error of those with N
    inferred (``n_unknown``) beside them."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    unknown: dict[tuple, list[dict[str, Any]]] = {}
    for run in runs:
        key = (run["dataset"], run["n"], run["trees"], run["depth"], run["epsilon"])
        (unknown if run["n_unknown"] else groups).setdefault(key, []).append(run)
    return [{
        "dataset": dataset, "n": n, "trees": trees, "depth": depth, "epsilon": epsilon,
        "runs": len(members),
        "first_solution_s_max": max((r.get("first_solution_s") or float("inf")
                                     for r in members), default=None),
        "time_s_median": median(r.get("time_s") for r in members),
        "error_mean": mean(r.get("error") for r in members),
        "perfect_share_mean": mean(r.get("exact_share") for r in members),
        "baseline_mean": mean(r.get("baseline_error") for r in members),
        "train_accuracy_mean": mean(r.get("train_accuracy") for r in members),
        "test_accuracy_mean": mean(r.get("test_accuracy") for r in members),
        "n_unknown_error_mean": mean(r.get("error") for r in unknown.get(
            (dataset, n, trees, depth, epsilon), [])),
        "informed_error_mean": mean(r.get("informed_error") for r in members),
        "informed_majority_mean": mean(r.get("informed_majority_error") for r in members),
        "informed_allowed_mean": mean(r.get("informed_allowed_constant_error")
                                      for r in members),
        "leak_p_value_median": median(r.get("leak_p_value") for r in members),
        "statuses": sorted({r["status"] for r in members}),
    } for (dataset, n, trees, depth, epsilon), members in groups.items()]


def print_table(rows: list[dict[str, Any]]) -> None:
    head = ("dataset", "N", "T", "d", "eps", "runs", "first sol s (max)", "time s", "error",
            "perfect", "baseline", "train acc", "test acc", "error N unknown", "informed",
            "majority", "best allowed constant", "leak p", "statuses")
    print(" | ".join(head))
    for r in rows:
        print(" | ".join(str(v) for v in (
            r["dataset"], r["n"], r["trees"], r["depth"], fmt(r["epsilon"], 1), r["runs"],
            fmt(r["first_solution_s_max"], 2), fmt(r["time_s_median"], 1),
            fmt(r["error_mean"]), fmt(r["perfect_share_mean"], 2), fmt(r["baseline_mean"]),
            fmt(r["train_accuracy_mean"], 2), fmt(r["test_accuracy_mean"], 2),
            fmt(r["n_unknown_error_mean"]), fmt(r["informed_error_mean"]),
            fmt(r["informed_majority_mean"]), fmt(r["informed_allowed_mean"]),
            fmt(r["leak_p_value_median"]),
            ",".join(r["statuses"]))))


def _numbers(text: str, kind: type) -> tuple:
    return tuple(kind(v) for v in text.split(","))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--n", default="100", help="training-set sizes")
    p.add_argument("--trees", default=",".join(map(str, TREES)))
    p.add_argument("--depths", default=",".join(map(str, DEPTHS)))
    p.add_argument("--epsilons", default=",".join(map(str, EPSILONS)))
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--time-limit", type=float, default=120.0)
    p.add_argument("--workers", type=int, default=1, help="runs at once (one process each)")
    p.add_argument("--n-unknown", action="store_true", help="also attack with N unknown")
    p.add_argument("--informed", type=int, default=0,
                   help="also run the informed adversary on this many rows per forest")
    p.add_argument("--leak-test", action="store_true",
                   help="also test the reconstruction against the rest of the dataset")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--out", type=Path, default=None)
    for name in PRESETS:
        p.add_argument(f"--{name}", action="store_true", help=f"the {name} preset")
    args = p.parse_args(argv)
    preset = next((name for name in PRESETS if getattr(args, name)), None)
    grid = PRESETS[preset] if preset else {
        "datasets": tuple(args.datasets.split(",")), "n": _numbers(args.n, int),
        "trees": _numbers(args.trees, int), "depths": _numbers(args.depths, int),
        "epsilons": _numbers(args.epsilons, float), "seeds": args.seeds,
        "time_limit": args.time_limit}
    if not (args.data_dir / "datasets.json").exists():
        print(f"no datasets in {args.data_dir}; nothing to run", file=sys.stderr)
        return 0
    out = args.out or BENCH_DIR / "results" / f"dp_{preset or 'grid'}.json"
    meta = {"benchmark": "dp", "started": datetime.now(UTC).isoformat(), "argv": sys.argv,
            "grid": grid, "workers": args.workers, "environment": environment()}
    sweep = Grid("dp-forest", {
        "dataset": list(grid["datasets"]), "n": list(grid["n"]), "trees": list(grid["trees"]),
        "depth": list(grid["depths"]), "epsilon": list(grid["epsilons"]),
        "seed": list(range(grid["seeds"])), "time_limit": [grid["time_limit"]],
        "n_unknown": [False, True] if args.n_unknown else [False],
        "informed": [args.informed], "leak_test": [args.leak_test]},
        point_time_limit=grid["time_limit"] * (1 + bool(args.informed)) + 120,
        data_dir=args.data_dir.resolve())

    def progress(run: dict[str, Any]) -> None:
        print(f"{run['dataset']} N={run['n']} T={run['trees']} d={run['depth']} "
              f"eps={run['epsilon']} seed={run['seed']}: {run['status']} "
              f"error={fmt(run.get('error'))} first={fmt(run.get('first_solution_s'), 2)} s",
              file=sys.stderr, flush=True)

    runs = run_grids(sweep, out, args.workers, on_record=progress)
    write_json(out, {"meta": meta, "aggregates": aggregate(runs), "runs": runs})
    print_table(aggregate(sorted(runs, key=lambda r: [r[k] for k in (
        "dataset", "n", "trees", "depth", "epsilon", "seed")])))
    if preset == "smoke":
        bad = [r for r in runs if r["status"] not in ("OPTIMAL", "FEASIBLE")
               or not r.get("verified") or r.get("error") is None
               or r["error"] >= r["baseline_error"]]
        print("smoke: FAILED" if bad else "smoke: ok", file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
