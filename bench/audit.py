"""Benchmark: what a release audit costs and concludes, by dataset and model kind.

For every (dataset, model kind, seed): sample N training rows and a disjoint population,
fit the model, and run the whole audit (`treeleaks.report.collect.run_audit`) with the
training rows (--data), the population (--population) and the dataset's schema, as a
custodian would; time it and write the JSON report. Model kinds: a no-bootstrap forest
(100 full-depth trees), a bootstrap forest (scikit-learn's default, 10 trees), a DP forest
(10 trees of depth 5, ε = 5) and a depth-10 decision tree.

    python bench/audit.py --smoke      # CI check, < 1 min
    python bench/audit.py              # the grid below (about 15 min on 2 cores)

See bench/README.md for what is measured.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import BENCH_DIR, DEFAULT_DATA_DIR, environment, fmt, load_dataset, median, write_json
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from treeleaks import DPRandomForestClassifier, FeatureSchema, from_dp_forest, from_sklearn
from treeleaks.report.collect import run_audit
from treeleaks.report.evidence import AuditInput
from treeleaks.report.json_report import to_json

DATASETS = ("compas", "adult", "default_credit")
KINDS = ("forest", "bootstrap", "dp", "tree")
FULL = {"n": 100, "population": 500, "seeds": 3, "budget": 60.0, "forest_trees": 100,
        "bootstrap_trees": 10}
SMOKE = {"n": 50, "population": 100, "seeds": 1, "budget": 20.0, "forest_trees": 20,
         "bootstrap_trees": 5}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny grid for CI")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--seeds", type=int, default=FULL["seeds"])
    parser.add_argument("--budget", type=float, default=FULL["budget"],
                        help="seconds per attack (the audit's --budget)")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    grid = dict(SMOKE) if args.smoke else {**FULL, "seeds": args.seeds, "budget": args.budget}
    datasets = ("compas",) if args.smoke else tuple(args.datasets.split(","))
    kinds = tuple(args.kinds.split(","))
    out = args.out or BENCH_DIR / "results" / ("audit_smoke.json" if args.smoke
                                               else "audit.json")
    runs = []
    for name in datasets:
        data = load_dataset(name, args.data_dir)
        for seed in range(grid["seeds"]):
            rows = data.sample(grid["n"] + grid["population"], seed)
            train = rows.iloc[:grid["n"]].reset_index(drop=True)
            population = rows.iloc[grid["n"]:].reset_index(drop=True)
            schema = FeatureSchema.from_frame(train.drop(columns=[data.label]),
                                              data.one_hot_groups, data.at_most_one_groups)
            for kind in kinds:
                run = audit_once(kind, train, population, data.label, schema, grid, seed)
                run.update(dataset=name, seed=seed)
                runs.append(run)
                print(f"{name:14s} {kind:9s} seed={seed} {run['risk']:6s} "
                      f"({run['rule']}) {run['wall_s']:.1f} s", flush=True)
    report = {"environment": environment(), "grid": {**grid, "datasets": datasets,
                                                     "kinds": kinds},
              "runs": runs, "aggregates": aggregate(runs)}
    write_json(out, report)
    print_table(report["aggregates"])
    print(f"\nwrote {out}")
    return 0


def fitted(kind: str, X: Any, y: Any, schema: FeatureSchema, label: str,
           grid: dict[str, Any], seed: int) -> tuple[Any, Any]:
    """The estimator of ``kind`` fitted on (X, y) and its released model."""
    if kind == "dp":
        forest = DPRandomForestClassifier(n_estimators=10, max_depth=5, epsilon=5.0,
                                          schema=schema, random_state=seed).fit(X, y)
        return None, from_dp_forest(forest, label_name=label)
    estimator = {
        "forest": RandomForestClassifier(n_estimators=grid["forest_trees"], bootstrap=False,
                                         random_state=seed),
        "bootstrap": RandomForestClassifier(n_estimators=grid["bootstrap_trees"],
                                            random_state=seed),
        "tree": DecisionTreeClassifier(max_depth=10, random_state=seed),
    }[kind].fit(X, y)
    return estimator, from_sklearn(estimator, label_name=label)


def audit_once(kind: str, train: Any, population: Any, label: str, schema: FeatureSchema,
               grid: dict[str, Any], seed: int) -> dict[str, Any]:
    """Fit one model, audit it as `treeleaks audit` does, and keep the verdict."""
    X, y = train.drop(columns=[label]), train[label]
    estimator, model = fitted(kind, X, y, schema, label, grid, seed)
    start = time.perf_counter()
    audit = run_audit(AuditInput(model, f"{kind}.skops", schema, estimator, train, label,
                                 population, grid["budget"]))
    to_json(audit)  # the report validates against its schema
    wall = time.perf_counter() - start
    return {"kind": kind, "wall_s": wall, "risk": audit.risk["level"],
            "rule": audit.risk["rule"], "partial": audit.partial,
            "attacks": {a.name: {"status": a.status, "time_s": a.time_s}
                        for a in audit.attacks},
            **{k: v for k, v in audit.verdict.items()
               if k not in ("n_rows_given_away", "class_balance_given_away")}}


def aggregate(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (dataset, kind): median wall time and figures, the risk levels and partial runs."""
    out = []
    for key in sorted({(r["dataset"], r["kind"]) for r in runs}):
        group = [r for r in runs if (r["dataset"], r["kind"]) == key]
        out.append({
            "dataset": key[0], "kind": key[1], "runs": len(group),
            "wall_s_median": median(r["wall_s"] for r in group),
            "wall_s_max": max(r["wall_s"] for r in group),
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
