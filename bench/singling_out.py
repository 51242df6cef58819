"""Benchmark: predicate singling out on decision trees, and the pruning defence (the
protocol of Sedlmeyr 2024, section 5.2).

Per dataset, N trees: each on a random subset of 1,000-10,000 rows, chosen by a small
random search (max_depth 5-64, min_samples_split 2-32, min_samples_leaf 1-16; the best of
``--search`` candidates on held-out rows). Per tree: whether it has a vulnerable node,
the tries the no-counts ranking needs (expected, ties broken at random), the attack's time,
accuracy (R² for regression) on train and held-out rows before and after
``prune(min_count=2)``, and that the attack finds nothing after. Then the speed target:
the attack on a depth-30 tree fitted on all of Adult.

    python bench/singling_out.py --smoke     # CI check, < 1 min
    python bench/singling_out.py             # 100 trees per dataset, a few minutes

Regression uses scikit-learn's diabetes data (442 rows, 10 numerical columns): California
housing needs a download and this machine is offline, so subsets there are 200-400 rows.
The trees are a treeleaks sweep (attack ``single-out``, `treeleaks.sweep.single_models`),
run in the workers' own processes on a Dask LocalCluster of ``--workers`` processes.
See bench/README.md for what is measured.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from common import (
    BENCH_DIR,
    DEFAULT_DATA_DIR,
    Dataset,
    environment,
    fmt,
    load_dataset,
    mean,
    median,
    run_grids,
    share,
    write_json,
)

from treeleaks import from_sklearn
from treeleaks.attacks.singling_out import single_out
from treeleaks.sweep import Grid
from treeleaks.sweep.single_models import HELD_OUT

DATASETS = ("adult", "compas", "diabetes")
PAPER = {  # Sedlmeyr 2024, Table 1: % of trees with a vulnerable node, mean tries
    "adult": (97.0, 10.56), "compas": None, "diabetes": None,
    "cardio (paper)": (94.0, 8.28), "house (paper)": (0.0, 6.37),
}
SUBSET = (1000, 10000)
SMALL_SUBSET = (200, 400)  # diabetes has 442 rows
SPEED_DEPTH, SPEED_SEEDS = 30, 5


def synthetic(n_rows: int, seed: int = 0) -> Dataset:
    """Numerical rows with a noisy label: a max_depth=30 tree reaches depth 30 on them
    (Adult's 19 binary columns stop a tree at depth 19)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, 10))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n_rows) > 0).astype(int)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(10)]).assign(label=y)
    return Dataset(f"synthetic{n_rows // 1000}k", frame, "label", [], [])


def speed(data: Dataset, seeds: int) -> dict[str, Any]:
    """The attack on a max_depth=30 tree over all of the data (conversion timed apart)."""
    from sklearn.tree import DecisionTreeClassifier

    X, y = data.features, data.frame[data.label]
    runs = []
    for seed in range(seeds):
        tree = DecisionTreeClassifier(max_depth=SPEED_DEPTH, random_state=seed,
                                      max_features=0.8).fit(X, y)
        start = time.perf_counter()
        model = from_sklearn(tree)
        converted, cpu = time.perf_counter(), time.process_time()
        result = single_out(model)
        done, cpu = time.perf_counter(), time.process_time() - cpu
        runs.append({"seed": seed, "nodes": int(tree.tree_.node_count),
                     "depth": int(tree.get_depth()), "convert_s": converted - start,
                     "attack_s": done - converted, "attack_cpu_s": cpu,
                     "pairs": len(result.predicates)})
    return {"dataset": data.name, "rows": len(X), "runs": runs,
            "median_attack_s": median(r["attack_s"] for r in runs),
            "median_attack_cpu_s": median(r["attack_cpu_s"] for r in runs),
            "median_pairs": median(r["pairs"] for r in runs),
            "median_convert_s": median(r["convert_s"] for r in runs),
            "median_nodes": median(r["nodes"] for r in runs),
            "median_depth": median(r["depth"] for r in runs),
            "attack_us_per_node": median(1e6 * r["attack_s"] / r["nodes"] for r in runs)}


def aggregate(name: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "dataset": name, "trees": len(runs),
        "vulnerable_share": share([r["vulnerable"] for r in runs]),
        "mean_expected_tries": mean(r["expected_tries"] for r in runs),
        "trees_without_a_valid_guess": sum(r["expected_tries"] is None for r in runs),
        "median_attack_s": median(r["attack_s"] for r in runs),
        "mean_train_before": mean(r["train_before"] for r in runs),
        "mean_train_after": mean(r["train_after"] for r in runs),
        "mean_test_before": mean(r["test_before"] for r in runs),
        "mean_test_after": mean(r["test_after"] for r in runs),
        "vulnerable_after_total": sum(r["vulnerable_after"] for r in runs),
        "median_nodes": median(r["nodes"] for r in runs),
        "median_nodes_after": median(r["nodes_after"] for r in runs),
        "paper": PAPER.get(name),
    }


def print_tables(aggregates: list[dict[str, Any]], timings: list[dict[str, Any]]) -> None:
    header = ("dataset", "trees", "vuln %", "paper %", "tries", "paper", "no guess",
              "train b/a", "test b/a", "after", "nodes b/a")
    print(" | ".join(header))
    for a in aggregates:
        paper = a["paper"] or (None, None)
        print(" | ".join([
            a["dataset"], str(a["trees"]), fmt(100 * a["vulnerable_share"], 1), fmt(paper[0], 1),
            fmt(a["mean_expected_tries"], 2), fmt(paper[1], 2),
            str(a["trees_without_a_valid_guess"]),
            f"{fmt(a['mean_train_before'])}/{fmt(a['mean_train_after'])}",
            f"{fmt(a['mean_test_before'])}/{fmt(a['mean_test_after'])}",
            str(a["vulnerable_after_total"]),
            f"{fmt(a['median_nodes'], 0)}/{fmt(a['median_nodes_after'], 0)}"]))
    print()
    for timing in timings:
        print(f"speed: max_depth={SPEED_DEPTH} tree on all {timing['rows']:,} rows of "
              f"{timing['dataset']} (reached depth {fmt(timing['median_depth'], 0)}): median "
              f"{fmt(timing['median_nodes'], 0)} nodes, {fmt(timing['median_pairs'], 0)} "
              f"pairs, attack {1000 * timing['median_attack_s']:.1f} ms wall, "
              f"{1000 * timing['median_attack_cpu_s']:.1f} ms CPU (target <= 100 ms on Adult; "
              f"{timing['attack_us_per_node']:.1f} us per node), conversion "
              f"{1000 * timing['median_convert_s']:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=100, help="trees per dataset")
    parser.add_argument("--search", type=int, default=5, help="random-search candidates")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--smoke", action="store_true", help="a quick CI run")
    parser.add_argument("--workers", type=int, default=2, help="trees at a time")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    trees, search, speed_seeds = (5, 2, 2) if args.smoke else (args.trees, args.search,
                                                                SPEED_SEEDS)
    out = args.out or BENCH_DIR / "results" / (
        "singling_out_smoke.json" if args.smoke else "singling_out.json")
    names = args.datasets.split(",")
    grids = [Grid("single-out", {
        "dataset": [name], "seed": list(range(trees)), "search": [search],
        "min_rows": [SMALL_SUBSET[0] if name == "diabetes" else SUBSET[0]],
        "max_rows": [SMALL_SUBSET[1] if name == "diabetes" else SUBSET[1]]},
        data_dir=args.data_dir.resolve(), isolate=False) for name in names]
    records = run_grids(grids, out, args.workers)
    failed = [r for r in records if r["status"] != "done"]
    if failed:
        raise SystemExit(f"{len(failed)} runs failed, e.g. {failed[0].get('exception')}")
    runs = {name: [r for r in records if r["dataset"] == name] for name in names}
    aggregates = [aggregate(name, runs[name]) for name in names]
    timings = [speed(load_dataset("adult", args.data_dir), speed_seeds),
               speed(synthetic(5000 if args.smoke else 50000), speed_seeds)]
    print_tables(aggregates, timings)
    write_json(out, {"created": datetime.now(UTC).isoformat(), "environment": environment(),
                     "config": {"trees": trees, "search": search, "subset": SUBSET,
                                "regression_subset": SMALL_SUBSET, "held_out": HELD_OUT},
                     "aggregates": aggregates, "speed": timings, "runs": runs})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
