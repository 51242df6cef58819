"""Benchmark: exact reconstruction of no-bootstrap random forests (treeleaks.reconstruct).

For every (dataset, N, max_depth, seed): sample N training rows, fit
``RandomForestClassifier(n_estimators=100, bootstrap=False, max_depth=d, random_state=seed)``,
reconstruct its training set from the fitted model alone, verify it, and score it against
the truth. Each run is a fresh process (own peak memory; a crash or hang ends only that run).

    python bench/exact.py --smoke                      # CI check, < 1 min, exit 1 on failure
    python bench/exact.py --datasets compas --sizes 100 --depths None,5 --seeds 2
    python bench/exact.py                              # full grid (hours)

See bench/README.md for what is measured.
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

from common import (
    BENCH_DIR,
    DEFAULT_DATA_DIR,
    ChildOutcome,
    dataset_info,
    environment,
    fmt,
    load_dataset,
    maxrss_mb,
    mean,
    median,
    run_isolated,
    share,
    write_json,
)

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


# --- worker (runs in the child process) ----------------------------------------------------


def worker(config_path: str) -> int:
    """Fit, reconstruct and score one configuration; write the result JSON. Child side."""
    cfg = json.loads(Path(config_path).read_text())
    out: dict[str, Any] = {"stage": "start"}

    def stage(name: str) -> None:
        out["stage"] = name
        print(f"[{time.strftime('%H:%M:%S')}] {name}", file=sys.stderr, flush=True)

    try:
        from sklearn.ensemble import RandomForestClassifier

        from treeleaks import FeatureSchema, from_sklearn, reconstruct

        stage("load")
        data = load_dataset(cfg["dataset"], Path(cfg["data_dir"]))
        train = data.sample(cfg["n"], cfg["seed"])
        X, y = train.drop(columns=[data.label]), train[data.label]
        # Column domains are public knowledge: infer them from the whole dataset.
        schema = FeatureSchema.from_frame(data.features, data.one_hot_groups,
                                          data.at_most_one_groups)
        stage("fit")
        tick = time.perf_counter()
        forest = RandomForestClassifier(
            n_estimators=N_TREES, bootstrap=False, max_depth=cfg["depth"],
            random_state=cfg["seed"], n_jobs=cfg["threads"],
        ).fit(X, y)
        out["fit_s"] = time.perf_counter() - tick
        tick = time.perf_counter()
        model = from_sklearn(forest, label_name=data.label)
        out["import_s"] = time.perf_counter() - tick
        out["mem_before_mb"] = maxrss_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)

        stage("reconstruct")
        tick = time.perf_counter()
        rec = reconstruct(model, schema, time_limit=cfg["time_limit"], threads=cfg["threads"],
                          seed=cfg["seed"], solver=cfg["solver"])
        out["wall_reconstruct_s"] = time.perf_counter() - tick
        out["mem_reconstruct_mb"] = maxrss_mb(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        out.update(
            status=rec.status, verified=bool(rec.verified), n_rows=int(rec.n_rows),
            time_s=float(rec.time_s), timings={k: float(v) for k, v in rec.timings.items()},
            n_cells=int(rec.n_cells), proven_rows=int(rec.proven_rows),
            proven_share=rec.proven_rows / cfg["n"],
            proven_pattern_share=int(rec.proven_pattern.sum()) / cfg["n"],
            free_values=int(rec.free.to_numpy().sum()),
            certainty_complete=bool(rec.certainty_complete), message=rec.message,
        )
        write_result(cfg, out)

        stage("evaluate")
        tick = time.perf_counter()
        try:
            from treeleaks.evaluation.metrics import evaluate
        except ImportError as exc:
            out["metrics_failure"] = f"treeleaks.evaluation.metrics unavailable: {exc}"
        if rec.n_rows != cfg["n"]:
            # A partial reconstruction (only the rows propagation proved) is not comparable:
            # its matched error would flatter the means, so the run stays unscored.
            out["metrics_failure"] = f"not scored: {rec.n_rows} of {cfg['n']} rows reconstructed"
        elif "metrics_failure" not in out:
            try:
                score = evaluate(train, rec.rows, schema, label=data.label,
                                 n_baseline_draws=3, seed=cfg["seed"])
                for key in ("error", "exact_share", "baseline_error", "worst_row_error",
                            "label_agreement", "n_matched"):
                    value = getattr(score, key, None)
                    out[key] = None if value is None else float(value)
            except Exception as exc:  # a scoring bug must not lose the run
                out["metrics_failure"] = f"{type(exc).__name__}: {exc}"
                traceback.print_exc()
        out["eval_s"] = time.perf_counter() - tick
        stage("done")
    except Exception as exc:  # reported as status ERROR by the parent
        traceback.print_exc()
        out["exception"] = f"{type(exc).__name__}: {exc}"
        write_result(cfg, out)
        return 1
    write_result(cfg, out)
    return 0


def write_result(cfg: dict[str, Any], out: dict[str, Any]) -> None:
    """Child side: (over)write the result file, so a later crash keeps what was measured."""
    Path(cfg["result_path"]).write_text(json.dumps(out))


# --- grid and parent side ------------------------------------------------------------------


def parse_depth(text: str) -> int | None:
    return None if text.strip().lower() in ("none", "full", "") else int(text)


def depth_label(depth: int | None) -> str:
    return "None" if depth is None else str(depth)


def plan(
    datasets: Sequence[str], sizes: Sequence[int] | None, depths: Sequence[int | None],
    n_seeds: int, rows: dict[str, int], oversize: str,
) -> list[tuple[str, int, int | None, int]]:
    """All (dataset, N, depth, seed) runs. Sizes above a dataset's rows are capped to its
    size (``oversize="cap"``, once) or dropped (``"skip"``). Default sizes: 100, 1000, 10000,
    plus 40000 for Adult."""
    runs = []
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
        runs += [(name, n, d, s) for n in ns for d in depths for s in range(n_seeds)]
    return runs


def record(
    dataset: str, n: int, depth: int | None, seed: int, outcome: ChildOutcome
) -> dict[str, Any]:
    """One row of the results file from the child's outcome."""
    res = dict(outcome.result or {})
    status = res.pop("status", None)
    if outcome.timed_out:
        if status is not None:
            res["reconstruct_status"] = status  # finished, then the run hung in scoring
        status = "timeout"
    elif status is None or "exception" in res:
        status = "ERROR" if "exception" in res else f"CRASH(rc={outcome.returncode})"
    row: dict[str, Any] = {
        "dataset": dataset, "N": n, "depth": depth, "seed": seed, "status": status,
        "verified": bool(res.pop("verified", False)), "n_rows": res.pop("n_rows", None),
        "time_s": res.pop("time_s", None), "fit_s": res.pop("fit_s", None),
        "timings": res.pop("timings", {}), "peak_mem_mb": outcome.peak_mem_mb,
        "error": res.pop("error", None), "exact_share": res.pop("exact_share", None),
        "proven_share": res.pop("proven_share", None),
        "baseline_error": res.pop("baseline_error", None),
        "worst_row_error": res.pop("worst_row_error", None),
        "n_cells": res.pop("n_cells", None), "wall_s": outcome.wall_s,
        "returncode": outcome.returncode,
    }
    row.update(res)
    if status not in SOLVED or outcome.returncode:
        row["log_tail"] = outcome.log_tail
    return row


def aggregate(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (dataset, N, depth): medians of time and memory, means and medians of errors."""
    groups: dict[tuple[str, int, int | None], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["dataset"], r["N"], r["depth"]), []).append(r)
    out = []
    for (dataset, n, depth), rs in groups.items():
        phases = sorted({p for r in rs for p in r.get("timings") or {}})
        anchor = DRAFT_T100.get(dataset, {}).get(depth) if n == ANCHOR_N else None
        out.append({
            "dataset": dataset, "N": n, "depth": depth, "runs": len(rs),
            "share_solved": share([r["status"] in SOLVED and r["n_rows"] == n for r in rs]),
            "share_optimal": share([r["status"] == "OPTIMAL" for r in rs]),
            "share_verified": share([r["verified"] for r in rs]),
            "n_scored": sum(r.get("error") is not None for r in rs),
            "time_s_median": median(r["time_s"] for r in rs),
            "time_s_max": max((r["time_s"] for r in rs if r["time_s"] is not None), default=None),
            "fit_s_median": median(r["fit_s"] for r in rs),
            "phase_s_median": {p: median((r.get("timings") or {}).get(p) for r in rs)
                               for p in phases},
            "peak_mem_mb_median": median(r["peak_mem_mb"] for r in rs),
            "mem_reconstruct_mb_median": median(r.get("mem_reconstruct_mb") for r in rs),
            "error_mean": mean(r["error"] for r in rs),
            "error_median": median(r["error"] for r in rs),
            "error_max": max((r["error"] for r in rs if r["error"] is not None), default=None),
            "exact_share_mean": mean(r["exact_share"] for r in rs),
            "label_agreement_mean": mean(r.get("label_agreement") for r in rs),
            "proven_share_mean": mean(r["proven_share"] for r in rs),
            "baseline_error_mean": mean(r["baseline_error"] for r in rs),
            "n_cells_median": median(r["n_cells"] for r in rs),
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
        tag = f"{r['dataset']} N={r['N']} depth={depth_label(r['depth'])} seed={r['seed']}"
        if not r["verified"]:
            problems.append(f"{tag}: not verified (status {r['status']})")
        if r["status"] not in SOLVED or r["n_rows"] != r["N"]:
            problems.append(f"{tag}: not solved (status {r['status']}, {r['n_rows']} rows)")
        if r["time_s"] is not None and r["time_s"] > max_s:
            problems.append(f"{tag}: reconstruct took {r['time_s']:.1f} s > {max_s:g} s")
        if r["depth"] is None and r["error"] is None:
            problems.append(f"{tag}: no error score ({r.get('metrics_failure', 'unknown')})")
        elif r["depth"] is None and r["error"] > 0:
            problems.append(f"{tag}: error {r['error']:.4f} > 0 at full depth")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point (also dispatches ``--worker`` to the child side)."""
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
                   help="keep runs already in --out and only run the missing ones")
    p.add_argument("--smoke", action="store_true",
                   help="tiny CI configuration; exit 1 unless every run is solved, verified, "
                        "fast, and exact at full depth")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker)

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
    todo = plan(datasets, sizes, depths, n_seeds, {k: v["rows"] for k, v in info.items()},
                args.oversize)

    runs: list[dict[str, Any]] = []
    if args.resume and out.exists():
        runs = json.loads(out.read_text()).get("runs", [])
        done = {(r["dataset"], r["N"], r["depth"], r["seed"]) for r in runs}
        todo = [t for t in todo if t not in done]
        print(f"resume: {len(runs)} runs kept, {len(todo)} to do", file=sys.stderr)
    meta = {
        "benchmark": "exact", "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "argv": sys.argv, "n_trees": N_TREES, "bootstrap": False, "time_limit": time_limit,
        "threads": args.threads, "solver": args.solver, "guard_s": guard,
        "smoke": args.smoke, "environment": environment(),
    }

    def save() -> list[dict[str, Any]]:
        aggs = aggregate(runs)
        write_json(out, {"meta": meta, "aggregates": aggs, "runs": runs})
        return aggs

    for i, (dataset, n, depth, seed) in enumerate(todo, 1):
        config = {"dataset": dataset, "n": n, "depth": depth, "seed": seed,
                  "time_limit": time_limit, "threads": args.threads, "solver": args.solver,
                  "data_dir": str(args.data_dir)}
        outcome = run_isolated(Path(__file__).resolve(), config, guard)
        row = record(dataset, n, depth, seed, outcome)
        runs.append(row)
        print(f"[{i}/{len(todo)}] {dataset} N={n} depth={depth_label(depth)} seed={seed}: "
              f"{row['status']} verified={row['verified']} time={fmt(row['time_s'], 2)}s "
              f"mem={fmt(row['peak_mem_mb'], 0)}MB error={fmt(row['error'], 4)}",
              file=sys.stderr, flush=True)
        save()
    meta["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    aggs = save()
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
