"""Benchmark: the reconstruction engine at real-world width (issue 5).

For every (dataset, N, max_depth, seed): sample N training rows, fit
``RandomForestClassifier(n_estimators=100, bootstrap=False, max_depth=d, random_state=seed)``,
reconstruct its training set from the fitted model alone with ``treeleaks.reconstruct``,
and score it, in a fresh process per run (``common.run_isolated``: own peak memory; a
crash, an out-of-memory kill or a hang ends that run only).

Datasets (all offline): scikit-learn's breast cancer (``cancer``, 30 numerical columns),
``wine`` (13 numerical) and ``digits`` (64 pixel counts 0-16) with raw values; synthetic
one-hot data ``onehot50``, ``onehot100``, ``onehot150`` (any ``onehot<W>``); and, as the
``credit`` preset, the shallow Default Credit grid from the shared data, comparable with
the published DRAFT errors.

    python bench/wide.py --smoke                 # CI check, < 1 min, exit 1 on failure
    python bench/wide.py --datasets wine,onehot50 --sizes 100 --depths None --seeds 1
    python bench/wide.py                         # full grid (hours)
    python bench/wide.py --preset credit --time-limit 300 --seeds 5

See bench/README.md for what is measured.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import sys
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from common import (
    BENCH_DIR,
    DEFAULT_DATA_DIR,
    SKLEARN_DATASETS,
    ChildOutcome,
    Dataset,
    dataset_info,
    environment,
    fmt,
    jsonable,
    load_dataset,
    maxrss_mb,
    mean,
    median,
    one_hot_dataset,
    run_isolated,
    run_status,
    share,
    sklearn_dataset,
    write_json,
)
from exact import ANCHOR_N, DRAFT_BASELINE, DRAFT_T100

WIDE_DATASETS = ("onehot50", "onehot100", "onehot150", "wine", "cancer", "digits")
SIZES = (100, 500)
EXTRA_SIZES = {"cancer": (569,)}  # breast cancer also at N = all 569 rows
DEPTHS: tuple[int | None, ...] = (None, 5, 3)
N_TREES = 100
SOLVED = ("OPTIMAL", "FEASIBLE")
ONE_HOT_POOL = {"n_rows": 5000, "seed": 0, "n_factors": 4}  # one pool per width
SKLEARN_ROWS = {"cancer": 569, "wine": 178, "digits": 1797}

# Shallow Default Credit, where the shared-data refinements are largest: (N, depth) pairs.
CREDIT_GRID: list[tuple[int, int | None]] = [(100, 3), (100, 2), (1000, 5), (1000, 3), (1000, 2)]
PRESETS: dict[str, tuple[str, ...]] = {
    "wide": WIDE_DATASETS, "credit": ("default_credit",), "all": (*WIDE_DATASETS, "default_credit"),
}
PRESET_GRIDS = {"default_credit": CREDIT_GRID}

SMOKE = {"runs": [("wine", 60, 3), ("onehot50", 60, None)], "seed": 0, "time_limit": 30.0,
         "certainty_time_limit": 10.0}

GIB = 1024.0  # peak memory is in MiB


def target_for(dataset: str, n: int, depth: int | None, n_features: int | None) -> dict | None:
    """The issue's target for this configuration, or None: one-hot data up to 120 columns
    at N=100, full depth: <= 30 s, <= 2 GiB, error <= baseline / 5; raw numerical data
    (breast cancer N=569, wine, digits N=500) at full depth: <= 60 s, <= 4 GiB."""
    if depth is not None:
        return None
    if dataset.startswith("onehot") and n == 100 and (n_features or 10**9) <= 120:
        return {"time_s": 30.0, "peak_mem_mb": 2 * GIB, "error_vs_baseline": 0.2,
                "text": "<=30 s, <=2 GB, err <= base/5"}
    if (dataset, n) in (("cancer", 569), ("digits", 500)) or dataset == "wine":
        return {"time_s": 60.0, "peak_mem_mb": 4 * GIB, "error_vs_baseline": None,
                "text": "<=60 s, <=4 GB"}
    return None


# --- datasets ------------------------------------------------------------------------------


def load(name: str, data_dir: Path) -> Dataset:
    """A dataset by name: ``onehot<W>``, a scikit-learn one, or one of the shared files."""
    match = re.fullmatch(r"onehot(\d+)", name)
    if match:
        return one_hot_dataset(int(match.group(1)), **ONE_HOT_POOL)
    if name in SKLEARN_DATASETS:
        return sklearn_dataset(name)
    return load_dataset(name, data_dir)


def dataset_rows(name: str, data_dir: Path) -> int:
    """How many rows a dataset has, without generating or reading it."""
    if re.fullmatch(r"onehot(\d+)", name):
        return ONE_HOT_POOL["n_rows"]
    if name in SKLEARN_ROWS:
        return SKLEARN_ROWS[name]
    info = dataset_info(data_dir)
    if name not in info:
        known = [*WIDE_DATASETS, *sorted(info)]
        raise KeyError(f"unknown dataset {name!r}; have {', '.join(known)} or onehot<W>")
    return int(info[name]["rows"])


# --- worker (runs in the child process) ----------------------------------------------------


def worker(config_path: str) -> int:
    """Fit, reconstruct and score one configuration; write the result JSON. Child side."""
    cfg = json.loads(Path(config_path).read_text())
    out: dict[str, Any] = {"stage": "start"}

    def stage(name: str) -> None:
        out["stage"] = name
        print(f"[{time.strftime('%H:%M:%S')}] {name}", file=sys.stderr, flush=True)

    def save() -> None:  # (over)written at each step, so a later crash keeps what was measured
        Path(cfg["result_path"]).write_text(json.dumps(jsonable(out)))

    try:
        from sklearn.ensemble import RandomForestClassifier

        from treeleaks import FeatureSchema, from_sklearn, reconstruct

        stage("load")
        data = load(cfg["dataset"], Path(cfg["data_dir"]))
        train = data.sample(cfg["n"], cfg["seed"])
        X, y = train.drop(columns=[data.label]), train[data.label]
        # The adversary's domain knowledge: kinds and ranges over the whole dataset, groups.
        schema = FeatureSchema.from_frame(data.features, data.one_hot_groups or None,
                                          data.at_most_one_groups or None)
        out["n_features"] = int(X.shape[1])
        out["kinds"] = dict(Counter(spec.kind for spec in schema.features.values()))
        save()

        stage("fit")
        tick = time.perf_counter()
        forest = RandomForestClassifier(
            n_estimators=N_TREES, bootstrap=False, max_depth=cfg["depth"],
            random_state=cfg["seed"], n_jobs=cfg["threads"],
        ).fit(X, y)
        out["fit_s"] = time.perf_counter() - tick
        model = from_sklearn(forest, label_name=data.label)
        out["mem_before_mb"] = maxrss_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)

        stage("reconstruct")
        options = {"time_limit": cfg["time_limit"], "threads": cfg["threads"],
                   "seed": cfg["seed"], "solver": cfg["solver"],
                   "certainty_time_limit": cfg["certainty_time_limit"]}
        save()
        tick = time.perf_counter()
        rec = reconstruct(model, schema, **options)
        out["wall_reconstruct_s"] = time.perf_counter() - tick
        out["mem_reconstruct_mb"] = maxrss_mb(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        n_rows = len(rec.rows)
        width = getattr(rec, "width", None)
        out.update(
            status=str(rec.status), verified=bool(getattr(rec, "verified", False)),
            n_rows=n_rows, time_s=float(rec.time_s),
            timings={k: float(v) for k, v in (getattr(rec, "timings", None) or {}).items()
                     if isinstance(v, int | float)},
            strategy=getattr(rec, "strategy", "enumerate"), proof=getattr(rec, "proof", ""),
            n_cells=getattr(rec, "n_cells", None),
            proven_rows=int(np.sum(rec.proven)), proven_share=float(np.sum(rec.proven)) / cfg["n"],
            free_values=int(rec.free.to_numpy().sum()),
            certainty_complete=getattr(rec, "certainty_complete", None),
            message=str(getattr(rec, "message", "")),
            engine_width_mean=None if width is None or width.isna().all().all()
            else float(np.nanmean(width.to_numpy(dtype=float))),
        )
        save()

        stage("evaluate")
        tick = time.perf_counter()
        if n_rows != cfg["n"]:
            # A partial reconstruction (only the rows propagation proved) is not comparable:
            # its matched error would flatter the means, so the run stays unscored.
            out["metrics_failure"] = f"not scored: {n_rows} of {cfg['n']} rows reconstructed"
        else:
            score_run(out, train, rec, schema, data.label, cfg["seed"])
        out["eval_s"] = time.perf_counter() - tick
        stage("done")
    except Exception as exc:  # reported as status ERROR by the parent
        traceback.print_exc()
        out["exception"] = f"{type(exc).__name__}: {exc}"
        save()
        return 1
    save()
    return 0


def score_run(out: dict[str, Any], train: pd.DataFrame, rec: Any, schema: Any, label: str,
              seed: int) -> None:
    """Error against the truth (``treeleaks.evaluation.metrics.evaluate``) and the interval figures;
    each part fails on its own (``metrics_failure`` / ``interval_failure``)."""
    from treeleaks.evaluation.metrics import evaluate

    try:
        score = evaluate(train, rec.rows, schema, label=label, n_baseline_draws=3, seed=seed)
        for key in ("error", "baseline_error", "exact_share", "worst_row_error",
                    "label_agreement", "n_matched"):
            value = getattr(score, key, None)
            out[key] = None if value is None else float(value)
    except Exception as exc:  # a scoring bug must not lose the run
        out["metrics_failure"] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    try:
        out.update(interval_figures(train, rec, schema, label))
    except Exception as exc:
        out["interval_failure"] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()


def match_rows(train: pd.DataFrame, rows: pd.DataFrame, schema: Any,
               label: str) -> tuple[np.ndarray, np.ndarray]:
    """A minimum-cost one-to-one matching of true rows to reconstructed rows (indices).

    The cost is ``treeleaks.evaluation.metrics.row_distances`` (mean over the schema's
    features of the range-normalised absolute difference, capped at 1; the scale is each
    column's schema range, or its observed range where that is infinite, as ``evaluate``
    uses) plus 1 when the labels differ, so rows pair within their class whenever the class
    counts allow.
    """
    from scipy.optimize import linear_sum_assignment

    from treeleaks.evaluation.metrics import row_distances

    names = [n for n in schema.names if n != label]
    true_X = train[names].to_numpy(dtype=float)
    recon_X = rows[names].to_numpy(dtype=float)
    low, high = (np.array([getattr(schema.features[n], b) for n in names], dtype=float)
                 for b in ("low", "high"))
    seen = true_X.max(axis=0) - true_X.min(axis=0)
    width = high - low
    scale = np.where(np.isfinite(width) & (width > 0), width, np.where(seen > 0, seen, 1.0))
    cost = row_distances(true_X, recon_X, scale)
    if label in train.columns and label in rows.columns:
        cost = cost + (train[label].to_numpy()[:, None] != rows[label].to_numpy()[None, :])
    return linear_sum_assignment(cost)


def interval_figures(train: pd.DataFrame, rec: Any, schema: Any, label: str) -> dict[str, Any]:
    """How well the intervals the model implies hold the true numerical/ordinal values.

    - ``inside_share``: over matched (true row, reconstructed row) pairs and the numerical
      and ordinal columns, the share of true values with ``lower <= value <= upper`` of the
      matched reconstructed row. The model's interval is ``lower < x <= upper``, but where
      no threshold bounds it ``lower`` is the schema's minimum, which a real value can equal,
      so the lower bound is taken as closed (``on_lower_share``: values equal to it).
    - ``inside_rows_share``: matched true rows with every such value inside.
    - ``mean_width``: over every reconstructed row and numerical/ordinal column,
      ``(upper - lower) / (high - low)`` with both bounds clipped to the schema range.
    - ``box_coverage``: true rows inside the box (all columns) of *some* reconstructed row
      of their class, matching or not (as reported in docs/engine.md).
    """
    specs = schema.features
    cont = [n for n in schema.names if n != label and specs[n].kind in ("numerical", "ordinal")]
    lower_all, upper_all = rec.lower, rec.upper
    names = [n for n in schema.names if n != label and n in lower_all.columns]
    out: dict[str, Any] = {"n_interval_columns": len(cont)}
    true_all = train[names].to_numpy(dtype=float)
    lo_all = lower_all[names].to_numpy(dtype=float)
    up_all = upper_all[names].to_numpy(dtype=float)
    y_true, y_rec = train[label].to_numpy(), rec.rows[label].to_numpy()
    covered = [bool((((lo_all <= v) & (v <= up_all)) | np.isnan(lo_all + up_all)).all(axis=1)
                    [y_rec == c].any()) for v, c in zip(true_all, y_true, strict=True)]
    out["box_coverage"] = float(np.mean(covered))
    if not cont:
        return {**out, "inside_share": None, "inside_rows_share": None, "on_lower_share": None,
                "mean_width": None}

    low = np.array([specs[n].low for n in cont], dtype=float)
    high = np.array([specs[n].high for n in cont], dtype=float)
    lo = lower_all[cont].to_numpy(dtype=float)
    up = upper_all[cont].to_numpy(dtype=float)
    # A NaN bound is a bound the engine does not state: no constraint on that side.
    lo = np.where(np.isnan(lo), -np.inf, lo)
    up = np.where(np.isnan(up), np.inf, up)
    span = high - low
    ok = np.isfinite(span) & (span > 0)
    widths = (np.clip(up, low, high) - np.clip(lo, low, high))[:, ok] / span[ok]
    out["mean_width"] = float(widths.mean()) if widths.size else None

    ti, ri = match_rows(train, rec.rows, schema, label)
    value = train[cont].to_numpy(dtype=float)[ti]
    inside = (lo[ri] <= value) & (value <= up[ri])
    out["inside_share"] = float(inside.mean())
    out["inside_rows_share"] = float(inside.all(axis=1).mean())
    out["on_lower_share"] = float((value == lo[ri]).mean())
    return out


# --- grid and parent side ------------------------------------------------------------------


def parse_depth(text: str) -> int | None:
    return None if text.strip().lower() in ("none", "full", "") else int(text)


def depth_label(depth: int | None) -> str:
    return "None" if depth is None else str(depth)


def plan(
    datasets: Sequence[str], sizes: Sequence[int] | None, depths: Sequence[int | None] | None,
    n_seeds: int, rows: dict[str, int],
) -> list[tuple[str, int, int | None, int]]:
    """All (dataset, N, depth, seed) runs. A dataset with a preset grid (Default Credit)
    runs its (N, depth) pairs unless sizes or depths are given. Sizes above a dataset's
    rows are capped to its size, once."""
    runs = []
    for name in datasets:
        if name in PRESET_GRIDS and sizes is None and depths is None:
            pairs = list(PRESET_GRIDS[name])
        else:
            ns: list[int] = []
            for n in sizes or (*SIZES, *EXTRA_SIZES.get(name, ())):
                if n > rows[name]:
                    print(f"{name} N={n} capped to the dataset size {rows[name]}",
                          file=sys.stderr)
                    n = rows[name]
                if n not in ns:
                    ns.append(n)
            pairs = [(n, d) for n in ns for d in (DEPTHS if depths is None else depths)]
        runs += [(name, n, d, s) for n, d in pairs for s in range(n_seeds)]
    return runs


def record(dataset: str, n: int, depth: int | None, seed: int,
           outcome: ChildOutcome) -> dict[str, Any]:
    """One row of the results file from the child's outcome."""
    res = dict(outcome.result or {})
    status = run_status(outcome)
    if outcome.timed_out and res.get("status") is not None:
        res["reconstruct_status"] = res["status"]  # finished, then hung in scoring
    res.pop("status", None)
    keys = ("n_features", "verified", "n_rows", "time_s", "timings", "strategy", "proof",
            "n_cells", "mem_reconstruct_mb", "error", "baseline_error", "exact_share",
            "proven_share", "free_values", "inside_share", "mean_width")
    row: dict[str, Any] = {"dataset": dataset, "N": n, "depth": depth, "seed": seed,
                           "status": status, **{k: res.pop(k, None) for k in keys}}
    row["verified"] = bool(row["verified"])
    row["timings"] = row["timings"] or {}
    row.update(peak_mem_mb=outcome.peak_mem_mb, wall_s=outcome.wall_s,
               returncode=outcome.returncode, **res)
    if status not in SOLVED or outcome.returncode:
        row["log_tail"] = outcome.log_tail
    return row


def aggregate(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (dataset, N, depth): medians of time and memory, means of the scores, shares of
    solved and verified runs, the strategies used, and the issue's target when it has one
    (``target_met``: every run solved and verified, medians of time and peak memory and the
    mean error within it) or the published DRAFT error (Default Credit, N=100)."""
    groups: dict[tuple[str, int, int | None], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["dataset"], r["N"], r["depth"]), []).append(r)
    out = []
    for (dataset, n, depth), rs in groups.items():
        n_features = next((r["n_features"] for r in rs if r.get("n_features")), None)
        agg: dict[str, Any] = {
            "dataset": dataset, "n_features": n_features, "N": n, "depth": depth,
            "runs": len(rs),
            "share_solved": share([r["status"] in SOLVED and r["n_rows"] == n for r in rs]),
            "share_verified": share([r["verified"] for r in rs]),
            "strategies": dict(Counter(str(r["strategy"]) for r in rs)),
            "statuses": dict(Counter(str(r["status"]) for r in rs)),
            "time_s_median": median(r["time_s"] for r in rs),
            "time_s_max": max((r["time_s"] for r in rs if r["time_s"] is not None),
                              default=None),
            "wall_s_median": median(r["wall_s"] for r in rs),
            "peak_mem_mb_median": median(r["peak_mem_mb"] for r in rs),
            "mem_reconstruct_mb_median": median(r["mem_reconstruct_mb"] for r in rs),
            "n_scored": sum(r["error"] is not None for r in rs),
            "error_mean": mean(r["error"] for r in rs),
            "baseline_error_mean": mean(r["baseline_error"] for r in rs),
            "exact_share_mean": mean(r["exact_share"] for r in rs),
            "proven_share_mean": mean(r["proven_share"] for r in rs),
            "free_values_median": median(r["free_values"] for r in rs),
            "inside_share_mean": mean(r["inside_share"] for r in rs),
            "mean_width_mean": mean(r["mean_width"] for r in rs),
            "n_cells_median": median(r["n_cells"] for r in rs),
        }
        target = target_for(dataset, n, depth, n_features)
        agg["target"] = None if target is None else target["text"]
        agg["target_met"] = None if target is None else meets(agg, target)
        anchor = DRAFT_T100.get(dataset, {}).get(depth) if n == ANCHOR_N else None
        agg["draft_error_T100"] = None if anchor is None else anchor[0]
        agg["draft_time_s_T100"] = None if anchor is None else anchor[1]
        agg["draft_baseline"] = DRAFT_BASELINE.get(dataset) if anchor is not None else None
        out.append(agg)
    return out


def meets(agg: dict[str, Any], target: dict[str, Any]) -> bool:
    if agg["share_solved"] != 1 or agg["share_verified"] != 1:
        return False
    if agg["time_s_median"] is None or agg["time_s_median"] > target["time_s"]:
        return False
    if agg["peak_mem_mb_median"] is None or agg["peak_mem_mb_median"] > target["peak_mem_mb"]:
        return False
    ratio = target["error_vs_baseline"]
    if ratio is not None:
        err, base = agg["error_mean"], agg["baseline_error_mean"]
        return err is not None and base is not None and err <= ratio * base
    return True


def print_table(aggs: list[dict[str, Any]], title: str) -> None:
    """The aggregates with the issue's targets (or the DRAFT error) beside them."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in ("dataset", "cols", "N", "depth", "runs", "solved", "verified", "strategy",
                "time med s", "mem med MB", "err mean", "baseline", "exact", "proven",
                "inside", "width", "free med", "target / DRAFT err", "met"):
        table.add_column(col, justify="left" if col in ("dataset", "strategy", "target / "
                                                        "DRAFT err") else "right")
    for a in aggs:
        strategies = "/".join(f"{k}" if v == a["runs"] else f"{k}:{v}"
                              for k, v in sorted(a["strategies"].items()))
        if a["target"] is not None:
            target, met = a["target"], "yes" if a["target_met"] else "no"
        elif a["draft_error_T100"] is not None:
            target, met = f"DRAFT {a['draft_error_T100']:.3f}", "-"
        else:
            target, met = "-", "-"
        table.add_row(
            a["dataset"], fmt(a["n_features"]), str(a["N"]), depth_label(a["depth"]),
            str(a["runs"]), fmt(a["share_solved"], 2), fmt(a["share_verified"], 2), strategies,
            fmt(a["time_s_median"], 1), fmt(a["peak_mem_mb_median"], 0), fmt(a["error_mean"], 4),
            fmt(a["baseline_error_mean"], 4), fmt(a["exact_share_mean"], 2),
            fmt(a["proven_share_mean"], 2), fmt(a["inside_share_mean"], 3),
            fmt(a["mean_width_mean"], 3), fmt(a["free_values_median"], 0), target, met,
        )
    console = Console(width=220)
    console.print(table)
    console.print("targets (issue 5): one-hot <=120 columns, N=100, depth None: <=30 s, <=2 GB, "
                  "error <= baseline/5; numerical (cancer N=569, wine, digits N=500), depth "
                  "None: <=60 s, <=4 GB. 'met': every run solved and verified, median time and "
                  "memory (and mean error) within the target.")


def smoke_failures(runs: list[dict[str, Any]]) -> list[str]:
    """Why the smoke configuration failed (empty when it passed)."""
    problems = []
    for r in runs:
        tag = f"{r['dataset']} N={r['N']} depth={depth_label(r['depth'])} seed={r['seed']}"
        if r["status"] not in SOLVED or r["n_rows"] != r["N"]:
            detail = r.get("exception") or r.get("message") or ""
            problems.append(f"{tag}: not solved (status {r['status']}, {r['n_rows']} rows) "
                            f"{detail}".rstrip())
        elif not r["verified"]:
            problems.append(f"{tag}: not verified")
        elif r["error"] is None:
            problems.append(f"{tag}: not scored ({r.get('metrics_failure', 'unknown')})")
        elif r["baseline_error"] is not None and r["error"] >= r["baseline_error"]:
            problems.append(f"{tag}: error {r['error']:.4f} not below the random baseline "
                            f"{r['baseline_error']:.4f}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point (also dispatches ``--worker`` to the child side)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=sorted(PRESETS), default="wide",
                   help="dataset set when --datasets is not given: wide (default: "
                        f"{', '.join(WIDE_DATASETS)}), credit (shallow Default Credit), all")
    p.add_argument("--datasets", default=None,
                   help="comma-separated, from: " + ", ".join((*WIDE_DATASETS, "onehot<W>",
                                                               "default_credit", "compas",
                                                               "adult")))
    p.add_argument("--sizes", default=None,
                   help="comma-separated N, capped to the dataset's rows (default 100,500 and "
                        "569 for cancer; Default Credit: its preset grid)")
    p.add_argument("--depths", default=None,
                   help="comma-separated max_depth values, 'None' = unlimited (default "
                        "None,5,3; Default Credit: its preset grid)")
    p.add_argument("--seeds", type=int, default=3, help="number of seeds (0..n-1)")
    p.add_argument("--time-limit", type=float, default=None,
                   help="reconstruct's time limit per run in s (default 60; smoke 30)")
    p.add_argument("--certainty-time-limit", type=float, default=None,
                   help="time for tightening the proofs (default 30; smoke 10)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--solver", default="highs", choices=("highs", "cp-sat"))
    p.add_argument("--guard", type=float, default=None,
                   help="wall-clock limit per run in s (default 3 * time limit + 120)")
    p.add_argument("--out", type=Path, default=None,
                   help="results JSON (default bench/results/wide.json; smoke: wide_smoke.json)")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--resume", action="store_true",
                   help="keep runs already in --out and only run the missing ones")
    p.add_argument("--smoke", action="store_true",
                   help="tiny CI grid (wine N=60 depth 3, onehot50 N=60 full depth, seed 0); "
                        "exit 1 unless every run is solved, verified and beats the baseline")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker)

    if args.smoke:
        todo = [(d, n, depth, SMOKE["seed"]) for d, n, depth in SMOKE["runs"]]
    else:
        datasets = ([d.strip() for d in args.datasets.split(",") if d.strip()]
                    if args.datasets else list(PRESETS[args.preset]))
        try:
            rows = {d: dataset_rows(d, args.data_dir) for d in datasets}
        except (KeyError, OSError) as exc:
            p.error(str(exc.args[0]) if isinstance(exc, KeyError) else str(exc))
        sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
        depths = [parse_depth(d) for d in args.depths.split(",")] if args.depths else None
        todo = plan(datasets, sizes, depths, args.seeds, rows)
    time_limit = args.time_limit
    if time_limit is None:
        time_limit = SMOKE["time_limit"] if args.smoke else 60.0
    certainty = args.certainty_time_limit
    if certainty is None:
        certainty = SMOKE["certainty_time_limit"] if args.smoke else 30.0
    guard = args.guard if args.guard is not None else 3 * time_limit + 120
    out = args.out or BENCH_DIR / "results" / ("wide_smoke.json" if args.smoke else "wide.json")

    runs: list[dict[str, Any]] = []
    if args.resume and out.exists():
        runs = json.loads(out.read_text()).get("runs", [])
        done = {(r["dataset"], r["N"], r["depth"], r["seed"]) for r in runs}
        todo = [t for t in todo if t not in done]
        print(f"resume: {len(runs)} runs kept, {len(todo)} to do", file=sys.stderr)
    meta = {
        "benchmark": "wide", "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "argv": sys.argv, "n_trees": N_TREES, "bootstrap": False, "time_limit": time_limit,
        "certainty_time_limit": certainty, "threads": args.threads, "solver": args.solver,
        "guard_s": guard, "smoke": args.smoke, "one_hot_pool": ONE_HOT_POOL,
        "environment": environment(),
    }

    def save() -> list[dict[str, Any]]:
        aggs = aggregate(runs)
        write_json(out, {"meta": meta, "aggregates": aggs, "runs": runs})
        return aggs

    for i, (dataset, n, depth, seed) in enumerate(todo, 1):
        config = {"dataset": dataset, "n": n, "depth": depth, "seed": seed,
                  "time_limit": time_limit, "certainty_time_limit": certainty,
                  "threads": args.threads, "solver": args.solver,
                  "data_dir": str(args.data_dir)}
        outcome = run_isolated(Path(__file__).resolve(), config, guard)
        row = record(dataset, n, depth, seed, outcome)
        runs.append(row)
        print(f"[{i}/{len(todo)}] {dataset} N={n} depth={depth_label(depth)} seed={seed}: "
              f"{row['status']} {row['strategy']} verified={row['verified']} "
              f"time={fmt(row['time_s'], 1)}s mem={fmt(row['peak_mem_mb'], 0)}MB "
              f"error={fmt(row['error'], 4)} inside={fmt(row['inside_share'], 3)} "
              f"({outcome.wall_s:.0f} s wall)", file=sys.stderr, flush=True)
        save()
    meta["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    aggs = save()
    print_table(aggs, f"treeleaks at width, T={N_TREES}, bootstrap=False, time limit "
                      f"{time_limit:g} s, {args.threads} threads  →  {out}")
    if args.smoke:
        problems = smoke_failures(runs)
        for line in problems:
            print(f"SMOKE FAIL: {line}", file=sys.stderr)
        print("smoke: FAILED" if problems else "smoke: ok", file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
