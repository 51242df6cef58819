"""Benchmark: reconstruction of bootstrap random forests, with known or unknown draws.

For every (dataset, N, max_depth, seed): sample N training rows, fit scikit-learn's default
``RandomForestClassifier(n_estimators=100, max_depth=d, random_state=seed)`` (bootstrap),
reconstruct its training set from the fitted model alone (the draws recomputed from its
random states), verify it, and score it against the truth: rows recovered
(`treeleaks.evaluation.recovered`: true rows matched one to one with returned rows of their
label sharing their leaf in 90% of the trees that drew them) and the matched error (as
published). The grid runs as a treeleaks sweep (attack ``forest`` with ``bootstrap =
true``): each run a fresh process (own peak memory; a crash or hang ends only that run);
``bench/grids/bootstrap_n100.toml`` is the N=100 grid for ``treeleaks sweep``.

    python bench/bootstrap.py --smoke                  # CI check, < 1 min, exit 1 on failure
    python bench/bootstrap.py --datasets compas --sizes 100,500 --depths None --seeds 3
    python bench/bootstrap.py                          # the grid below (about an hour)

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
    share,
    write_json,
)

from treeleaks.sweep import Grid

DATASETS = ("compas", "adult", "default_credit")
DEPTHS: tuple[int | None, ...] = (None, 10, 5)
SIZES = (100,)
N_TREES = 100
SMOKE = {"datasets": ("compas",), "sizes": (100,), "depths": (None,), "seeds": 1,
         "time_limit": 30.0, "max_reconstruct_s": 10.0}

# Published DRAFT (Ferry et al., ICML'24) mean error with bagging, T=100, N=100, 5 seeds, and
# its run time in s (5 h on 16 threads): /work/shared/anchors.md, "DRAFT (ICML'24)". DRAFT
# treats the draws as unknown; these runs read them from the model.
DRAFT_BAGGING_T100: dict[str, dict[int | None, tuple[float | None, float | None]]] = {
    "compas": {None: (0.047, 6721), 10: (0.042, 8150), 5: (0.063, 3713)},
    "adult": {None: (0.083, 12814), 10: (0.084, 12822), 5: (0.116, 10905)},
    "default_credit": {None: (0.096, 7443), 10: (None, None), 5: (0.145, 7334)},
}


def aggregate(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["dataset"], run["n"], run["depth"]), []).append(run)
    rows = []
    for (dataset, n, depth), members in groups.items():
        draft = DRAFT_BAGGING_T100.get(dataset, {}).get(depth, (None, None)) if n == 100 else (
            None, None)
        rows.append({
            "dataset": dataset, "N": n, "depth": depth, "runs": len(members),
            "share_verified": share([bool(r.get("verified")) for r in members]),
            "time_s_median": median(r.get("time_s") for r in members),
            "peak_mem_mb_median": median(r.get("peak_mem_mb") for r in members),
            "error_mean": mean(r.get("error") for r in members),
            "recovered_share_mean": mean(r.get("recovered_share") for r in members),
            "baseline_error_mean": mean(r.get("baseline_error") for r in members),
            "exact_share_mean": mean(r.get("exact_share") for r in members),
            "proven_share_mean": mean(r.get("proven_share") for r in members),
            "n_cells_median": median(r.get("n_cells") for r in members),
            "statuses": sorted({r["status"] for r in members}),
            "worst_recovery_min": min((r["worst_recovery"] for r in members
                                       if r.get("worst_recovery") is not None), default=None),
            "worst_mean_bound_mean": mean(r.get("worst_mean_bound") for r in members),
            "worst_time_s_median": median(r.get("worst_time_s") for r in members),
            "draft_error_T100": draft[0], "draft_time_s_T100": draft[1],
        })
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    head = ("dataset", "N", "depth", "runs", "verified", "time s", "MB", "error", "recovered",
            "baseline", "exact", "proven", "cells", "DRAFT err", "statuses")
    print(" | ".join(head))
    for r in rows:
        if r["worst_time_s_median"] is not None:
            print(f"  worst case {r['dataset']} N={r['N']} depth={r['depth']}: every run "
                  f"recovers at least {fmt(r['worst_recovery_min'])} of every row; mean-error "
                  f"bound {fmt(r['worst_mean_bound_mean'])}; "
                  f"{fmt(r['worst_time_s_median'], 2)} s")
        print(" | ".join(str(v) for v in (
            r["dataset"], r["N"], r["depth"], r["runs"], fmt(r["share_verified"], 2),
            fmt(r["time_s_median"], 2), fmt(r["peak_mem_mb_median"], 0), fmt(r["error_mean"]),
            fmt(r["recovered_share_mean"], 2), fmt(r["baseline_error_mean"]),
            fmt(r["exact_share_mean"], 2), fmt(r["proven_share_mean"], 2),
            fmt(r["n_cells_median"], 0),
            fmt(r["draft_error_T100"]), ",".join(r["statuses"]))))


def parse_depth(text: str) -> int | None:
    return None if text == "None" else int(text)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--sizes", default=",".join(map(str, SIZES)))
    p.add_argument("--depths", default=",".join(map(str, DEPTHS)))
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--unknown", action="store_true",
                   help="treat the draws as unknown (formulation bootstrap-unknown)")
    p.add_argument("--worst-case", action="store_true",
                   help="also bound every row's error over all consistent datasets")
    p.add_argument("--threads", type=int, default=2, help="solver threads per run")
    p.add_argument("--workers", type=int, default=1, help="runs at a time")
    p.add_argument("--smoke", action="store_true", help="the CI check (one small run)")
    args = p.parse_args(argv)
    if args.smoke:
        datasets, sizes, depths = SMOKE["datasets"], SMOKE["sizes"], SMOKE["depths"]
        seeds, time_limit = SMOKE["seeds"], SMOKE["time_limit"]
    else:
        datasets, sizes = args.datasets.split(","), [int(s) for s in args.sizes.split(",")]
        depths = [parse_depth(d) for d in args.depths.split(",")]
        seeds, time_limit = args.seeds, args.time_limit
    if not (args.data_dir / "datasets.json").exists():
        print(f"no datasets in {args.data_dir}; nothing to run", file=sys.stderr)
        return 0
    out = args.out or BENCH_DIR / "results" / (
        "bootstrap_smoke.json" if args.smoke else "bootstrap.json")
    meta = {"benchmark": "bootstrap", "started": datetime.now(UTC).isoformat(),
            "argv": sys.argv, "n_trees": N_TREES, "time_limit": time_limit,
            "threads": args.threads, "workers": args.workers,
            "environment": environment()}
    grid = Grid("forest", {
        "dataset": list(datasets), "n": list(sizes), "depth": list(depths),
        "seed": list(range(seeds)), "trees": [N_TREES], "bootstrap": [True],
        "ignore_draws": [args.unknown], "worst_case": [args.worst_case],
        "time_limit": [time_limit], "threads": [args.threads]},
        point_time_limit=(2 if args.worst_case else 1) * time_limit + 120,
        data_dir=args.data_dir.resolve())

    def progress(run: dict[str, Any]) -> None:
        print(f"{run['dataset']} N={run['n']} depth={run['depth']} seed={run['seed']}: "
              f"{run['status']} verified={run.get('verified')} "
              f"time={fmt(run.get('time_s'), 2)} s error={fmt(run.get('error'))}",
              file=sys.stderr, flush=True)

    runs = run_grids(grid, out, args.workers, on_record=progress)
    rows = aggregate(runs)
    write_json(out, {"meta": meta, "aggregates": rows, "runs": runs})
    print_table(rows)
    if args.smoke:
        bad = [r for r in runs if not r.get("verified")
               or r.get("time_s", 1e9) > SMOKE["max_reconstruct_s"]]
        print("smoke: FAILED" if bad else "smoke: ok", file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
