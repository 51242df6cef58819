"""Benchmark: exact reconstruction of no-bootstrap random forests (treeleaks.reconstruct).

For every (dataset, N, max_depth, seed): sample N training rows, fit
``RandomForestClassifier(n_estimators=100, bootstrap=False, max_depth=d, random_state=seed)``,
reconstruct its training set from the fitted model alone, verify it, and score it against
the truth. The grid runs as a treeleaks sweep (attack ``forest``, `treeleaks.sweep`): each
run a fresh process (own peak memory; a crash or hang ends only that run) on a Dask
LocalCluster of ``--workers`` processes; ``bench/grids/exact.toml`` is the same grid for
``treeleaks sweep``.

    python bench/exact.py --smoke                      # CI check, < 1 min, exit 1 on failure
    python bench/exact.py --datasets compas --sizes 100 --depths None,5 --seeds 2
    python bench/exact.py                              # full grid (hours)

See bench/README.md for what is measured.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import (
    BENCH_DIR,
    DEFAULT_DATA_DIR,
    dataset_info,
    environment,
    finite,
    fmt,
    mean,
    median,
    run_grids,
    share,
    write_json,
)

from treeleaks.sweep import Grid

DATASETS = ("compas", "adult", "default_credit")
DEPTHS: tuple[int | None, ...] = (None, 10, 5, 3, 2)
SIZES = (100, 1000, 10000)
ADULT_EXTRA_SIZES = (40000,)  # only Adult is large enough for the extra size
N_TREES = 100
SOLVED = ("OPTIMAL", "FEASIBLE")

# Published DRAFT (Ferry et al., ICML'24) mean reconstruction error, bagging=False, T=100,
# N=100, 5 seeds, 5 h CPU on 16 threads, with its run time in seconds. Source:
# /work/shared/anchors.md, "DRAFT (ICML'24)" tables, column T=100 and "time T=100 (s)".
DRAFT_T100: dict[str, dict[int | None, tuple[float, float]]] = {
    "compas": {None: (0.000, 101), 10: (0.000, 111), 5: (0.000, 70), 3: (0.002, 36),
               2: (0.031, 10)},
    "adult": {None: (0.000, 196), 10: (0.001, 346), 5: (0.006, 1291), 3: (0.050, 81),
              2: (0.097, 20)},
    "default_credit": {None: (0.000, 165), 10: (0.000, 383), 5: (0.000, 1359),
                       3: (0.052, 301), 2: (0.126, 36)},
}
DRAFT_BASELINE = {"compas": 0.204, "adult": 0.253, "default_credit": 0.268}
ANCHOR_N = 100

SMOKE = {"datasets": ["compas"], "sizes": [100], "depths": [None, 5], "seeds": 1,
         "time_limit": 30.0, "max_reconstruct_s": 20.0}


# --- grid and parent side ------------------------------------------------------------------


def parse_depth(text: str) -> int | None:
    return None if text.strip().lower() in ("none", "full", "") else int(text)


def depth_label(depth: int | None) -> str:
    return "None" if depth is None else str(depth)


def grids(
    datasets: Sequence[str], sizes: Sequence[int] | None, depths: Sequence[int | None],
    n_seeds: int, rows: dict[str, int], oversize: str, options: dict[str, Any],
) -> list[Grid]:
    """One sweep grid per dataset over (N, depth, seed). Sizes above a dataset's rows are
    capped to its size (``oversize="cap"``, once) or dropped (``"skip"``). Default sizes:
    100, 1000, 10000, plus 40000 for Adult."""
    out = []
    for name in datasets:
        wanted = list(sizes) if sizes else [*SIZES, *(ADULT_EXTRA_SIZES if name == "adult" else ())]
        ns: list[int] = []
        for n in wanted:
            if n > rows[name]:
                if oversize == "skip":
                    print(f"skip {name} N={n}: the dataset has {rows[name]} rows", file=sys.stderr)
                    continue
                print(f"{name} N={n} capped to the dataset size {rows[name]}", file=sys.stderr)
                n = rows[name]
            if n not in ns:
                ns.append(n)
        if ns:
            axes = {"dataset": [name], "n": ns, "depth": list(depths),
                    "seed": list(range(n_seeds)), "trees": [N_TREES], "bootstrap": [False],
                    **{k: [v] for k, v in options.items() if k in ("time_limit", "threads",
                                                                   "solver")}}
            out.append(Grid("forest", axes, options["guard"], None, options["data_dir"]))
    return out


def aggregate(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (dataset, N, depth): medians of time and memory, means and medians of errors."""
    groups: dict[tuple[str, int, int | None], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["dataset"], r["n"], r["depth"]), []).append(r)
    out = []
    for (dataset, n, depth), rs in groups.items():
        phases = sorted({p for r in rs for p in r.get("timings") or {}})
        anchor = DRAFT_T100.get(dataset, {}).get(depth) if n == ANCHOR_N else None
        out.append({
            "dataset": dataset, "N": n, "depth": depth, "runs": len(rs),
            "share_solved": share([r["status"] in SOLVED and r.get("n_rows") == n for r in rs]),
            "share_optimal": share([r["status"] == "OPTIMAL" for r in rs]),
            "share_verified": share([r.get("verified") for r in rs]),
            "n_scored": sum(r.get("error") is not None for r in rs),
            "time_s_median": median(r.get("time_s") for r in rs),
            "time_s_max": max(finite(r.get("time_s") for r in rs), default=None),
            "fit_s_median": median(r.get("fit_s") for r in rs),
            "phase_s_median": {p: median((r.get("timings") or {}).get(p) for r in rs)
                               for p in phases},
            "peak_mem_mb_median": median(r.get("peak_mem_mb") for r in rs),
            "mem_reconstruct_mb_median": median(r.get("mem_reconstruct_mb") for r in rs),
            "error_mean": mean(r.get("error") for r in rs),
            "error_median": median(r.get("error") for r in rs),
            "error_max": max(finite(r.get("error") for r in rs), default=None),
            "exact_share_mean": mean(r.get("exact_share") for r in rs),
            "label_agreement_mean": mean(r.get("label_agreement") for r in rs),
            "proven_share_mean": mean(r.get("proven_share") for r in rs),
            "baseline_error_mean": mean(r.get("baseline_error") for r in rs),
            "n_cells_median": median(r.get("n_cells") for r in rs),
            "statuses": sorted({str(r["status"]) for r in rs}),
            "draft_error_T100": None if anchor is None else anchor[0],
            "draft_time_s_T100": None if anchor is None else anchor[1],
            "draft_baseline": DRAFT_BASELINE.get(dataset) if n == ANCHOR_N else None,
        })
    return out


def print_table(aggs: list[dict[str, Any]], title: str) -> None:
    """Aggregates beside the published DRAFT figures (N=100 only)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in ("dataset", "N", "depth", "runs", "solved", "verified", "time med s",
                "slowest phase", "mem med MB", "err mean", "err med", "exact", "proven",
                "baseline", "DRAFT err", "DRAFT s"):
        table.add_column(col, justify="left" if col in ("dataset", "slowest phase") else "right")
    for a in aggs:
        phases = {k: v for k, v in a["phase_s_median"].items() if v is not None}
        slow = max(phases, key=phases.__getitem__) if phases else None
        table.add_row(
            a["dataset"], str(a["N"]), depth_label(a["depth"]), str(a["runs"]),
            fmt(a["share_solved"], 2), fmt(a["share_verified"], 2),
            fmt(a["time_s_median"], 2), "-" if slow is None else f"{slow} {phases[slow]:.2f}",
            fmt(a["peak_mem_mb_median"], 0), fmt(a["error_mean"]), fmt(a["error_median"]),
            fmt(a["exact_share_mean"]), fmt(a["proven_share_mean"]),
            fmt(a["baseline_error_mean"]), fmt(a["draft_error_T100"]),
            fmt(a["draft_time_s_T100"], 0),
        )
    Console(width=200).print(table)


def smoke_failures(runs: list[dict[str, Any]], max_s: float) -> list[str]:
    """Why the smoke configuration failed (empty when it passed)."""
    problems = []
    for r in runs:
        tag = f"{r['dataset']} N={r['n']} depth={depth_label(r['depth'])} seed={r['seed']}"
        if not r.get("verified"):
            problems.append(f"{tag}: not verified (status {r['status']})")
        if r["status"] not in SOLVED or r.get("n_rows") != r["n"]:
            problems.append(f"{tag}: not solved (status {r['status']}, {r.get('n_rows')} rows)")
        if r.get("time_s") is not None and r.get("time_s") > max_s:
            problems.append(f"{tag}: reconstruct took {r.get('time_s'):.1f} s > {max_s:g} s")
        if r["depth"] is None and r.get("error") is None:
            problems.append(f"{tag}: no error score ({r.get('metrics_failure', 'unknown')})")
        elif r["depth"] is None and r.get("error") > 0:
            problems.append(f"{tag}: error {r.get('error'):.4f} > 0 at full depth")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", default=",".join(DATASETS),
                   help="comma-separated, from: " + ", ".join(DATASETS))
    p.add_argument("--depths", default=",".join(map(depth_label, DEPTHS)),
                   help="comma-separated max_depth values; 'None' = unlimited")
    p.add_argument("--sizes", default=None,
                   help="comma-separated N (default 100,1000,10000 and 40000 for adult)")
    p.add_argument("--oversize", choices=("cap", "skip"), default="cap",
                   help="N above a dataset's rows: run once on all its rows (cap) or skip")
    p.add_argument("--seeds", type=int, default=5, help="number of seeds (0..n-1)")
    p.add_argument("--time-limit", type=float, default=None,
                   help="solver time limit per run in s (default 300; smoke 30)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--solver", default="highs", choices=("highs", "cp-sat"))
    p.add_argument("--guard", type=float, default=None,
                   help="wall-clock limit per run in s (default 3 * time limit + 120)")
    p.add_argument("--out", type=Path, default=None,
                   help="results JSON (default bench/results/exact.json; smoke: exact_smoke.json)")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--resume", action="store_true",
                   help="keep the runs already recorded beside --out and only run the rest")
    p.add_argument("--workers", type=int, default=1,
                   help="runs at a time (Dask LocalCluster worker processes)")
    p.add_argument("--smoke", action="store_true",
                   help="tiny CI configuration; exit 1 unless every run is solved, verified, "
                        "fast, and exact at full depth")
    args = p.parse_args(argv)

    if args.smoke:
        datasets, sizes = SMOKE["datasets"], SMOKE["sizes"]
        depths, n_seeds = SMOKE["depths"], SMOKE["seeds"]
    else:
        datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
        sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
        depths = [parse_depth(d) for d in args.depths.split(",")]
        n_seeds = args.seeds
    time_limit = args.time_limit
    if time_limit is None:
        time_limit = SMOKE["time_limit"] if args.smoke else 300.0
    guard = args.guard if args.guard is not None else 3 * time_limit + 120
    out = args.out or BENCH_DIR / "results" / ("exact_smoke.json" if args.smoke else "exact.json")
    info = dataset_info(args.data_dir)
    unknown = [d for d in datasets if d not in info]
    if unknown:
        p.error(f"unknown dataset(s) {', '.join(unknown)}; have {', '.join(sorted(info))}")
    todo = grids(datasets, sizes, depths, n_seeds, {k: v["rows"] for k, v in info.items()},
                 args.oversize, {"time_limit": time_limit, "threads": args.threads,
                                 "solver": args.solver, "guard": guard,
                                 "data_dir": args.data_dir.resolve()})
    started = time.perf_counter()

    meta = {
        "benchmark": "exact", "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "argv": sys.argv, "n_trees": N_TREES, "bootstrap": False, "time_limit": time_limit,
        "threads": args.threads, "workers": args.workers, "solver": args.solver,
        "guard_s": guard, "smoke": args.smoke, "environment": environment(),
    }

    def progress(row: dict[str, Any]) -> None:
        print(f"{row['dataset']} N={row['n']} depth={depth_label(row['depth'])} "
              f"seed={row['seed']}: {row['status']} verified={row.get('verified')} "
              f"time={fmt(row.get('time_s'), 2)}s mem={fmt(row['peak_mem_mb'], 0)}MB "
              f"error={fmt(row.get('error'), 4)}", file=sys.stderr, flush=True)

    runs = run_grids(todo, out, args.workers, on_record=progress, resume=args.resume)
    meta["wall_s"] = time.perf_counter() - started
    meta["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    aggs = aggregate(runs)
    write_json(out, {"meta": meta, "aggregates": aggs, "runs": runs})
    print_table(aggs, f"treeleaks exact, T={N_TREES}, bootstrap=False, time limit "
                      f"{time_limit:g} s, {args.threads} threads  →  {out}")
    if args.smoke:
        problems = smoke_failures(runs, SMOKE["max_reconstruct_s"])
        for line in problems:
            print(f"SMOKE FAIL: {line}", file=sys.stderr)
        print("smoke: FAILED" if problems else "smoke: ok", file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
