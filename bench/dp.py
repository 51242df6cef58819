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

Runs are independent processes; ``--workers K`` runs K at once. On this 2-core machine
more than one worker slows each run down, so the timings quoted come from one worker.
See bench/README.md for what is measured.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from itertools import product
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
    write_json,
)

DATASETS = ("compas", "adult", "default_credit")
TREES = (1, 5, 10, 20, 30)
DEPTHS = (3, 5, 7)
EPSILONS = (0.1, 1.0, 5.0, 10.0, 20.0, 30.0)
TEST_ROWS = 5000  # held-out rows for the test accuracy (fewer if the dataset is small)
PRESETS: dict[str, dict[str, Any]] = {
    "smoke": {"datasets": ("compas",), "n": (100,), "trees": (5,), "depths": (3,),
              "epsilons": (5.0,), "seeds": 1, "time_limit": 20.0},
    "quick": {"datasets": DATASETS, "n": (100,), "trees": (10,), "depths": (5,),
              "epsilons": (1.0, 5.0, 10.0, 30.0), "seeds": 5, "time_limit": 120.0},
    "sizes": {"datasets": DATASETS, "n": (100, 200, 500), "trees": (10,), "depths": (5,),
              "epsilons": (5.0,), "seeds": 5, "time_limit": 600.0},
}


def worker(config_path: str) -> int:
    """Train, attack and score one configuration. Child side."""
    cfg = json.loads(Path(config_path).read_text())
    out: dict[str, Any] = {}
    try:
        import numpy as np

        from treeleaks import (
            DPRandomForestClassifier,
            FeatureSchema,
            Knowledge,
            from_dp_forest,
            reconstruct,
        )
        from treeleaks.evaluation.metrics import evaluate

        data = load_dataset(cfg["dataset"], Path(cfg["data_dir"]))
        rng = np.random.default_rng(cfg["seed"])
        order = rng.permutation(len(data.frame))
        train = data.frame.iloc[np.sort(order[: cfg["n"]])].reset_index(drop=True)
        rest = data.frame.iloc[order[cfg["n"]:]].reset_index(drop=True)
        test = rest.iloc[:TEST_ROWS]
        schema = FeatureSchema.from_frame(data.features, data.one_hot_groups or None,
                                          data.at_most_one_groups or None)
        X, y = train.drop(columns=[data.label]), train[data.label]
        forest = DPRandomForestClassifier(
            n_estimators=cfg["trees"], max_depth=cfg["depth"], epsilon=cfg["epsilon"],
            schema=schema, random_state=cfg["seed"]).fit(X, y)
        model = from_dp_forest(forest, label_name=data.label)
        out["train_accuracy"] = float((forest.predict(X) == y.to_numpy()).mean())
        out["test_accuracy"] = float((forest.predict(test.drop(columns=[data.label]))
                                      == test[data.label].to_numpy()).mean())
        tick = time.perf_counter()
        rec = reconstruct(model, schema, time_limit=cfg["time_limit"])
        out.update(status=rec.status, time_s=time.perf_counter() - tick,
                   first_solution_s=rec.first_solution_s, n_cells=rec.n_cells,
                   log_likelihood=rec.log_likelihood, bound=rec.log_likelihood_bound,
                   likelihood_checked=rec.likelihood_checked, message=rec.message)
        if rec.n_rows:
            score = evaluate(train, rec.rows, schema, label=data.label, n_baseline_draws=5,
                             seed=cfg["seed"])
            out.update(error=score.error, perfect_share=score.exact_share,
                       worst_row_error=score.worst_row_error, baseline=score.baseline_error)
        if cfg.get("n_unknown"):
            unknown = reconstruct(model, schema, n_unknown=True, time_limit=cfg["time_limit"])
            out.update(n_unknown_status=unknown.status, n_unknown_rows=unknown.n_rows,
                       n_unknown_interval=unknown.n_rows_interval)
            if unknown.n_rows:
                out["n_unknown_error"] = evaluate(train, unknown.rows, schema,
                                                  label=data.label, n_baseline_draws=0).error
        if cfg.get("informed"):
            out.update(_informed(model, schema, train, data.label, cfg, Knowledge, reconstruct))
        if cfg.get("leak_test") and rec.n_rows:
            from treeleaks.evaluation.leak_test import leak_test

            test_result = leak_test(rec.rows, train, rest, schema, label=data.label,
                                    seed=cfg["seed"])
            out["leak_test"] = test_result.to_dict()
            out["leak_p_value"] = test_result.p_value
    except Exception as exc:  # reported as status ERROR by the parent
        traceback.print_exc()
        out["exception"] = f"{type(exc).__name__}: {exc}"
    Path(cfg["result_path"]).write_text(json.dumps(out, default=float))
    return 0


def _informed(model, schema, train, label, cfg, knowledge_type, reconstruct) -> dict:
    """The informed adversary of the study: every row known but one, reconstructed, for
    the first ``cfg["informed"]`` rows in turn. Set against two constant guesses from the
    training set: the per-column majority (the study's baseline, the best constant guess
    for this error; it may break one-hot groups, setting none of a group's columns) and the
    best constant row the schema allows (each group's most common member)."""
    import numpy as np

    features = [c for c in train.columns if c != label]
    majority = (train[features].mean() > 0.5).to_numpy(dtype=float)
    allowed = majority.copy()
    for cols, exactly_one in schema.group_indices():
        share = train[features].to_numpy(dtype=float)[:, cols].mean(axis=0)
        pick = np.arange(cols.size) == np.argmax(share)
        allowed[cols] = pick if exactly_one or share.max() >= 1 - share.sum() else 0.0
    errors, baseline, constant = [], [], []
    for target in range(min(int(cfg["informed"]), len(train))):
        known = knowledge_type(rows=train.drop(index=target).reset_index(drop=True))
        rec = reconstruct(model, schema, knowledge=known, time_limit=cfg["time_limit"] / 4)
        truth = train.iloc[target][features].to_numpy(dtype=float)
        errors.append(float(np.abs(rec.rows.iloc[0][features].to_numpy(dtype=float)
                                   - truth).mean()))
        baseline.append(float(np.abs(majority - truth).mean()))
        constant.append(float(np.abs(allowed - truth).mean()))
    return {"informed_error": float(np.mean(errors)),
            "informed_majority_error": float(np.mean(baseline)),
            "informed_allowed_constant_error": float(np.mean(constant)),
            "informed_wins": float(np.mean(np.array(errors) < np.array(baseline)))}


def aggregate(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for run in runs:
        key = (run["dataset"], run["n"], run["trees"], run["depth"], run["epsilon"])
        groups.setdefault(key, []).append(run)
    return [{
        "dataset": dataset, "n": n, "trees": trees, "depth": depth, "epsilon": epsilon,
        "runs": len(members),
        "first_solution_s_max": max((r.get("first_solution_s") or float("inf")
                                     for r in members), default=None),
        "time_s_median": median(r.get("time_s") for r in members),
        "error_mean": mean(r.get("error") for r in members),
        "perfect_share_mean": mean(r.get("perfect_share") for r in members),
        "baseline_mean": mean(r.get("baseline") for r in members),
        "train_accuracy_mean": mean(r.get("train_accuracy") for r in members),
        "test_accuracy_mean": mean(r.get("test_accuracy") for r in members),
        "n_unknown_error_mean": mean(r.get("n_unknown_error") for r in members),
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
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker)
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
    configs = [{"dataset": dataset, "n": n, "trees": trees, "depth": depth,
                "epsilon": epsilon, "seed": seed, "time_limit": grid["time_limit"],
                "n_unknown": args.n_unknown, "informed": args.informed,
                "leak_test": args.leak_test, "data_dir": str(args.data_dir)}
               for dataset, n, trees, depth, epsilon, seed in product(
                   grid["datasets"], grid["n"], grid["trees"], grid["depths"],
                   grid["epsilons"], range(grid["seeds"]))]
    extra = grid["time_limit"] * (1 + bool(args.n_unknown) + bool(args.informed)) + 120
    runs: list[dict[str, Any]] = []

    def one(config: dict[str, Any]) -> None:
        run = isolated_record(Path(__file__), config, extra)
        runs.append(run)
        print(f"{config['dataset']} N={config['n']} T={config['trees']} d={config['depth']} "
              f"eps={config['epsilon']} seed={config['seed']}: {run['status']} "
              f"error={fmt(run.get('error'))} first={fmt(run.get('first_solution_s'), 2)} s",
              file=sys.stderr, flush=True)
        write_json(out, {"meta": meta, "aggregates": aggregate(runs), "runs": runs})

    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        list(pool.map(one, configs))
    print_table(aggregate(sorted(runs, key=lambda r: [r[k] for k in (
        "dataset", "n", "trees", "depth", "epsilon", "seed")])))
    if preset == "smoke":
        bad = [r for r in runs if r["status"] not in ("OPTIMAL", "FEASIBLE")
               or not r.get("likelihood_checked") or r.get("error") is None
               or r["error"] >= r["baseline"]]
        print("smoke: FAILED" if bad else "smoke: ok", file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
