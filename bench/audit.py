"""Benchmark: what a release audit costs and concludes, by dataset and model kind.

For every (dataset, model kind, seed): sample N training rows and a disjoint population,
fit the model, and run the whole audit (`treeleaks.report.collect.run_audit`) with the
training rows (--data), the population (--population) and the dataset's schema, as a
custodian would; time it and write the JSON report. Model kinds: a no-bootstrap forest
(100 full-depth trees), a bootstrap forest (scikit-learn's default, 10 trees), a DP forest
(10 trees of depth 5, ε = 5) and a depth-10 decision tree. Each audit is one point of a
sweep (attack ``audit``, `treeleaks.sweep.audit_points`), in a process of its own.

    python bench/audit.py --smoke      # CI check, < 1 min
    python bench/audit.py              # the grid below (about 15 min on 2 cores)

See bench/README.md for what is measured.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import BENCH_DIR, DEFAULT_DATA_DIR, environment, fmt, median, run_grids, write_json

from treeleaks.sweep import Grid
from treeleaks.sweep.audit_points import FOREST_KINDS

DATASETS = ("compas", "adult", "default_credit")
FULL = {"n": 100, "population": 500, "seeds": 3, "budget": 60.0, "forest_trees": 100,
        "bootstrap_trees": 10}
SMOKE = {"n": 50, "population": 100, "seeds": 1, "budget": 20.0, "forest_trees": 20,
         "bootstrap_trees": 5}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny grid for CI")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--kinds", default=",".join(FOREST_KINDS),
                        help="model kinds; the boosters: lightgbm,xgboost,gb,hgb")
    parser.add_argument("--seeds", type=int, default=FULL["seeds"])
    parser.add_argument("--budget", type=float, default=FULL["budget"],
                        help="seconds per attack (the audit's --attack-budget)")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--workers", type=int, default=1, help="audits at a time")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    grid = dict(SMOKE) if args.smoke else {**FULL, "seeds": args.seeds, "budget": args.budget}
    datasets = ("compas",) if args.smoke else tuple(args.datasets.split(","))
    kinds = tuple(args.kinds.split(","))
    out = args.out or BENCH_DIR / "results" / ("audit_smoke.json" if args.smoke
                                               else "audit.json")
    sweep = Grid("audit", {
        "dataset": list(datasets), "seed": list(range(grid["seeds"])), "kind": list(kinds),
        "n": [grid["n"]], "population": [grid["population"]], "budget": [grid["budget"]],
        "forest_trees": [grid["forest_trees"]], "bootstrap_trees": [grid["bootstrap_trees"]]},
        point_time_limit=4 * grid["budget"] + 120, data_dir=args.data_dir.resolve())

    def progress(run: dict[str, Any]) -> None:
        print(f"{run['dataset']:14s} {run['kind']:9s} seed={run['seed']} "
              f"{run.get('risk', run['status']):6s} ({run.get('rule', run.get('exception'))}) "
              f"{fmt(run.get('audit_s'), 1)} s", flush=True)

    runs = run_grids(sweep, out, args.workers, on_record=progress)
    failed = [r for r in runs if r["status"] != "done"]
    if failed:
        raise SystemExit(f"{len(failed)} audits failed, e.g. {failed[0].get('exception')}")
    report = {"environment": environment(), "grid": {**grid, "datasets": datasets,
                                                     "kinds": kinds},
              "runs": runs, "aggregates": aggregate(runs)}
    write_json(out, report)
    print_table(report["aggregates"])
    print(f"\nwrote {out}")
    return 0


def aggregate(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (dataset, kind): median wall time and figures, the risk levels and partial runs."""
    out = []
    for key in sorted({(r["dataset"], r["kind"]) for r in runs}):
        group = [r for r in runs if (r["dataset"], r["kind"]) == key]
        out.append({
            "dataset": key[0], "kind": key[1], "runs": len(group),
            "wall_s_median": median(r["audit_s"] for r in group),
            "wall_s_max": max(r["audit_s"] for r in group),
            "risk": dict(Counter(r["risk"] for r in group)),
            "partial": sum(r["partial"] for r in group),
            **{f"{k}_median": median(r[k] for r in group) for k in (
                "rows_proven", "rows_reconstructed_exactly", "rows_singled_out", "dist_g",
                "error", "baseline_error", "leak_test_p_value")},
        })
    return out


def print_table(aggregates: list[dict[str, Any]]) -> None:
    print("\n| dataset | model | wall s (median / max) | risk | partial | proven | exact "
          "| singled out | dist_g | error (random) | leak p |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for a in aggregates:
        risk = ", ".join(f"{k} {v}" for k, v in sorted(a["risk"].items()))
        print(f"| {a['dataset']} | {a['kind']} | {fmt(a['wall_s_median'], 1)} / "
              f"{fmt(a['wall_s_max'], 1)} | {risk} | {a['partial']}/{a['runs']} | "
              f"{fmt(a['rows_proven_median'], 0)} | "
              f"{fmt(a['rows_reconstructed_exactly_median'], 0)} | "
              f"{fmt(a['rows_singled_out_median'], 0)} | {fmt(a['dist_g_median'])} | "
              f"{fmt(a['error_median'])} ({fmt(a['baseline_error_median'])}) | "
              f"{fmt(a['leak_test_p_value_median'], 4)} |")


if __name__ == "__main__":
    raise SystemExit(main())
