"""Benchmark: reconstruction at real-world width (many one-hot or raw numerical columns).

For every (dataset, N, max_depth, seed): sample N training rows, fit
``RandomForestClassifier(n_estimators=100, bootstrap=False, max_depth=d, random_state=seed)``,
reconstruct its training set with ``treeleaks.reconstruct(strategy="auto")`` from the fitted
model alone, and score it. Each run is an isolated process (see ``common.run_isolated``), so
peak memory is its own and a crash or hang ends that run only.

Datasets (offline): scikit-learn's breast cancer (30 numerical), wine (13 numerical) and
digits (64 ordinal, 0-16), raw values; synthetic one-hot data with 50, 100 and 150 binary
columns (``onehot50`` ...). The adversary's schema holds each column's kind and range over
the whole dataset, and the one-hot groups.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    BENCH_DIR,
    environment,
    fmt,
    maxrss_mb,
    mean,
    median,
    run_isolated,
    share,
    write_json,
)

DATASETS = ("onehot50", "onehot100", "onehot150", "wine", "cancer", "digits")
SIZES = (100, 500)
DEPTHS = (None, 5, 3)
N_TREES = 100
SOLVED = ("OPTIMAL", "FEASIBLE")
SMOKE = {"runs": [("wine", 40, 3), ("onehot50", 40, None)], "time_limit": 60.0}
TARGETS = {
    "onehot": "N=100 depth None: <= 30 s, <= 2 GB, error <= baseline / 5",
    "numerical": "cancer N=569, wine, digits N=500, depth None: <= 60 s, <= 4 GB",
}


def one_hot_pool(width: int, n_rows: int = 5000, seed: int = 0) -> tuple[pd.DataFrame, list]:
    """Categorical attributes driven by three latent factors, one-hot encoded to about
    ``width`` binary columns (names ``a3:7``); the label is a noisy function of the factors."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n_rows, 3))
    columns: dict[str, np.ndarray] = {}
    groups: list[list[str]] = []
    attribute = 0
    while len(columns) < width:
        k = int(min(rng.integers(3, 13), max(width - len(columns), 2)))
        logits = latent @ (rng.normal(size=(3, k)) * 1.5)
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        values = (probs.cumsum(axis=1) > rng.random((n_rows, 1))).argmax(axis=1)
        names = [f"a{attribute}:{j}" for j in range(k)]
        for j, name in enumerate(names):
            columns[name] = (values == j).astype(np.int64)
        groups.append(names)
        attribute += 1
    frame = pd.DataFrame(columns)
    frame["label"] = (latent[:, 0] + 0.5 * rng.normal(size=n_rows) > 0).astype(np.int64)
    return frame, groups


def load(name: str) -> tuple[pd.DataFrame, list]:
    """The whole dataset as one frame with a ``label`` column, and its one-hot groups."""
    if name.startswith("onehot"):
        return one_hot_pool(int(name.removeprefix("onehot")))
    from sklearn.datasets import load_breast_cancer, load_digits, load_wine

    loader = {"cancer": load_breast_cancer, "wine": load_wine, "digits": load_digits}[name]
    data = loader(as_frame=True)
    return data.data.assign(label=data.target.to_numpy()), []


def worker(config_path: str) -> int:
    """Fit, reconstruct and score one configuration; write the result JSON. Child side."""
    cfg = json.loads(Path(config_path).read_text())
    out: dict[str, Any] = {"stage": "start"}
    try:
        from sklearn.ensemble import RandomForestClassifier

        from treeleaks import FeatureSchema, from_sklearn, reconstruct
        from treeleaks.metrics import evaluate

        frame, groups = load(cfg["dataset"])
        features = frame.drop(columns=["label"])
        picked = np.random.default_rng(cfg["seed"]).choice(len(frame), cfg["n"], replace=False)
        train = frame.iloc[np.sort(picked)].reset_index(drop=True)
        X, y = train.drop(columns=["label"]), train["label"]
        schema = FeatureSchema.from_frame(features, one_hot_groups=groups)
        forest = RandomForestClassifier(
            n_estimators=N_TREES, bootstrap=False, max_depth=cfg["depth"],
            random_state=cfg["seed"],
        ).fit(X, y)
        model = from_sklearn(forest)
        out["stage"] = "reconstruct"
        rec = reconstruct(model, schema, time_limit=cfg["time_limit"], seed=cfg["seed"],
                          certainty_time_limit=cfg["certainty_time_limit"])
        out.update(
            n_features=int(X.shape[1]), status=rec.status, verified=bool(rec.verified),
            n_rows=int(rec.n_rows), time_s=float(rec.time_s), strategy=rec.strategy,
            proof=rec.proof, n_cells=int(rec.n_cells),
            timings={k: float(v) for k, v in rec.timings.items()},
            proven_share=rec.proven_rows / cfg["n"], free_values=int(rec.free.to_numpy().sum()),
            certainty_complete=bool(rec.certainty_complete), message=rec.message,
            mem_reconstruct_mb=maxrss_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss),
            width_mean=rec.summary()["numerical_width_mean"],
        )
        if rec.n_rows == cfg["n"]:
            out["stage"] = "evaluate"
            score = evaluate(train, rec.rows.rename(columns={model.label_name: "label"}),
                             schema, label="label", n_baseline_draws=3, seed=cfg["seed"])
            out.update(error=float(score.error), baseline_error=float(score.baseline_error),
                       exact_share=float(score.exact_share),
                       box_coverage=box_coverage(rec, X.to_numpy(float), y.to_numpy(),
                                                 model.label_name))
        out["stage"] = "done"
    except Exception as exc:  # reported as status ERROR by the parent
        traceback.print_exc()
        out["exception"] = f"{type(exc).__name__}: {exc}"
    Path(cfg["result_path"]).write_text(json.dumps(out))
    return 0 if "exception" not in out else 1


def box_coverage(rec: Any, X: np.ndarray, y: np.ndarray, label: str) -> float:
    """Share of true rows lying inside the box (lower, upper) of some reconstructed row of
    their class: whether the intervals the model implies hold the real values."""
    lower, upper = rec.lower.to_numpy(float), rec.upper.to_numpy(float)
    labels = rec.rows[label].to_numpy()
    inside = np.zeros(len(X), dtype=bool)
    for i in range(len(X)):
        fits = ((lower <= X[i]) & (X[i] <= upper)).all(axis=1) & (labels == y[i])
        inside[i] = fits.any()
    return float(inside.mean())


def record(cfg: dict[str, Any], outcome: Any) -> dict[str, Any]:
    """One row of the results: the child's figures, or how it failed."""
    result = outcome.result or {}
    status = result.get("status")
    if outcome.timed_out:
        status = "timeout"
    elif status is None:
        status = "ERROR" if outcome.returncode == 1 else f"CRASH(rc={outcome.returncode})"
    keys = ("n_features", "verified", "n_rows", "time_s", "strategy", "proof", "n_cells",
            "timings", "proven_share", "free_values", "certainty_complete", "message",
            "error", "baseline_error", "exact_share", "box_coverage", "width_mean",
            "exception", "stage")
    return {**{k: cfg[k] for k in ("dataset", "n", "depth", "seed")}, "status": status,
            "peak_mem_mb": outcome.peak_mem_mb, "wall_s": outcome.wall_s,
            **{k: result.get(k) for k in keys}}


def print_table(runs: list[dict[str, Any]], title: str) -> None:
    """Medians (time, memory) and means (error) per configuration, printed with rich."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name in ("dataset", "cols", "N", "depth", "runs", "solved", "verified", "strategy",
                 "time s (med)", "peak MB (med)", "error", "baseline", "exact", "proven",
                 "in box", "width"):
        table.add_column(name)
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["dataset"], r["n"], r["depth"]), []).append(r)
    for (dataset, n, depth), rs in groups.items():
        table.add_row(
            dataset, fmt(rs[0]["n_features"]), str(n), str(depth), str(len(rs)),
            fmt(share([r["status"] in SOLVED for r in rs]), 2),
            fmt(share([bool(r["verified"]) for r in rs]), 2),
            "/".join(sorted({str(r["strategy"]) for r in rs})),
            fmt(median(r["time_s"] for r in rs), 1), fmt(median(r["peak_mem_mb"] for r in rs), 0),
            fmt(mean(r["error"] for r in rs), 4), fmt(mean(r["baseline_error"] for r in rs), 4),
            fmt(mean(r["exact_share"] for r in rs), 3), fmt(mean(r["proven_share"] for r in rs), 3),
            fmt(mean(r["box_coverage"] for r in rs), 3), fmt(mean(r["width_mean"] for r in rs), 3),
        )
    console = Console(width=max(Console().width, 160))
    console.print(table)
    for kind, text in TARGETS.items():
        console.print(f"target ({kind}): {text}")


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point (also dispatches ``--worker`` to the child side)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--sizes", default=",".join(map(str, SIZES)),
                   help="comma-separated N; capped to the dataset's rows")
    p.add_argument("--depths", default="None,5,3", help="comma-separated; 'None' = unlimited")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--certainty-time-limit", type=float, default=30.0)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--smoke", action="store_true",
                   help="tiny CI grid; exit 1 unless every run is solved and verified")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if args.smoke:
        todo = [(d, n, depth, 0) for d, n, depth in SMOKE["runs"]]
        time_limit = SMOKE["time_limit"]
    else:
        depths = [None if d == "None" else int(d) for d in args.depths.split(",")]
        sizes = [int(s) for s in args.sizes.split(",")]
        rows = {"wine": 178, "cancer": 569, "digits": 1797}
        todo = sorted({(d, min(n, rows.get(d, 5000)), depth, seed)
                       for d in args.datasets.split(",") for n in sizes for depth in depths
                       for seed in range(args.seeds)}, key=lambda t: (t[0], t[1], str(t[2]), t[3]))
        time_limit = args.time_limit
    out = args.out or BENCH_DIR / "results" / ("wide_smoke.json" if args.smoke else "wide.json")
    meta = {"benchmark": "wide", "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "argv": sys.argv, "n_trees": N_TREES, "time_limit": time_limit,
            "certainty_time_limit": args.certainty_time_limit, "environment": environment()}
    runs: list[dict[str, Any]] = []
    for i, (dataset, n, depth, seed) in enumerate(todo, 1):
        cfg = {"dataset": dataset, "n": n, "depth": depth, "seed": seed,
               "time_limit": time_limit, "certainty_time_limit": args.certainty_time_limit}
        tick = time.perf_counter()
        outcome = run_isolated(Path(__file__).resolve(), cfg,
                               3 * (time_limit + args.certainty_time_limit) + 120)
        runs.append(record(cfg, outcome))
        r = runs[-1]
        print(f"[{i}/{len(todo)}] {dataset} N={n} depth={depth} seed={seed}: {r['status']} "
              f"{r['strategy']} verified={r['verified']} time={fmt(r['time_s'], 1)}s "
              f"mem={fmt(r['peak_mem_mb'], 0)}MB error={fmt(r['error'], 4)} "
              f"({time.perf_counter() - tick:.0f} s wall)", file=sys.stderr, flush=True)
        write_json(out, {"meta": meta, "runs": runs})
    print_table(runs, f"treeleaks at width, T={N_TREES}, bootstrap=False, time limit "
                      f"{time_limit:g} s  →  {out}")
    if args.smoke:
        bad = [r for r in runs if not (r["verified"] and r["status"] in SOLVED)]
        for r in bad:
            print(f"SMOKE FAIL: {r['dataset']} N={r['n']} depth={r['depth']}: {r['status']} "
                  f"{r.get('message') or r.get('exception') or ''}", file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
