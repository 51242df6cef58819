"""Benchmark: the same file, limit and seed give the same answer, under load too (issue 51).

Each default forest (scikit-learn's `RandomForestClassifier`, every setting its default but
the seed) is saved with skops and reconstructed ``--runs`` times by ``treeleaks
reconstruct`` in a process of its own, one run after the other, while ``--load`` processes
spin on the machine's cores (a custodian's audit beside other work). Printed per model: runs
verified complete (every row, every count), rows returned (fewest, median, most), seconds
(fastest, median, slowest) and the distinct answers (row sets) seen.

    python bench/reproducible.py --smoke          # wine, 2 runs, 60 s, no load; < 1 min unloaded
    python bench/reproducible.py --runs 10 --time-limit 60 --load 1
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import BENCH_DIR, environment, fmt, median, write_json

OUT = BENCH_DIR / "results" / "reproducible.json"
TABLES = ("wine", "iris", "breast_cancer")
SMOKE = {"tables": ["wine"], "runs": 2, "time_limit": 60.0, "load": 0}


def save_forest(spec: str, seed: int, folder: Path) -> Path:
    """The default forest on ``spec`` (a scikit-learn table, ``name:rows`` for its first
    rows), saved with skops; returns the file."""
    import skops.io as sio
    from sklearn import datasets
    from sklearn.ensemble import RandomForestClassifier

    name, _, rows = spec.partition(":")
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    if rows:
        X, y = X[: int(rows)], y[: int(rows)]
    path = folder / f"{name}{rows}-{seed}.skops"
    sio.dump(RandomForestClassifier(random_state=seed).fit(X, y), path)
    return path


def spin(stop: Any) -> None:
    """Keep one core busy until ``stop`` is set."""
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def one_run(model: Path, limit: float, folder: Path, i: int) -> dict[str, Any]:
    """One ``treeleaks reconstruct`` run, its summary and a fingerprint of its rows."""
    summary, rows = folder / f"run{i}.json", folder / f"run{i}.csv"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "treeleaks", "reconstruct", str(model), "--time-limit",
         str(limit), "--json", str(summary), "--out", str(rows), "--force"],
        capture_output=True, text=True, timeout=limit * 2 + 60)
    wall = time.perf_counter() - start
    if not summary.exists():
        return {"exit": done.returncode, "verified": False, "rows": 0, "seconds": wall,
                "answer": None, "error": done.stderr.strip().splitlines()[-1:]}
    info = json.loads(summary.read_text())
    answer = (hashlib.sha256(rows.read_bytes()).hexdigest()[:12] if rows.exists() else None)
    complete = bool(info.get("verified")) and not info.get("partial")
    return {"exit": done.returncode, "verified": complete,
            "rows": int(info.get("n_rows") or 0), "seconds": wall, "answer": answer,
            "status": info.get("status"), "strategy": info.get("strategy"),
            "timings": info.get("timings")}


def bench_model(spec: str, seed: int, runs: int, limit: float, load: int) -> dict[str, Any]:
    """``runs`` reconstructions of one forest with ``load`` spinning processes beside."""
    stop = mp.Event()
    spinners = [mp.Process(target=spin, args=(stop,), daemon=True) for _ in range(load)]
    for p in spinners:
        p.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            model = save_forest(spec, seed, folder)
            results = [one_run(model, limit, folder, i) for i in range(runs)]
    finally:
        stop.set()
        for p in spinners:
            p.join()
    return {"table": spec, "seed": seed, "limit": limit, "load": load, "runs": results,
            "verified": sum(r["verified"] for r in results),
            "answers": len({r["answer"] for r in results}),
            "rows": [r["rows"] for r in results], "seconds": [r["seconds"] for r in results]}


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| forest | load | verified | rows (min / median / max) | seconds (min / median / "
            "max) | distinct answers |\n|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        n, s = r["rows"], r["seconds"]
        lines.append(
            f"| {r['table']} seed {r['seed']} | {r['load']} | {r['verified']} of {len(n)} | "
            f"{min(n)} / {fmt(median(n), 0)} / {max(n)} | {min(s):.1f} / "
            f"{fmt(median(s), 1)} / {max(s):.1f} | {r['answers']} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", default=",".join(TABLES),
                   help="comma-separated scikit-learn tables (name or name:rows)")
    p.add_argument("--seed", type=int, default=0, help="the forests' random_state")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--load", type=int, default=1, help="busy processes beside each run")
    p.add_argument("--smoke", action="store_true", help="wine, 2 runs, 60 s, no load")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.smoke:
        tables, runs, limit, load = (SMOKE["tables"], SMOKE["runs"], SMOKE["time_limit"],
                                     SMOKE["load"])
    else:
        tables = [t.strip() for t in args.tables.split(",") if t.strip()]
        runs, limit, load = args.runs, args.time_limit, args.load
    out = args.out or OUT.with_name("reproducible_smoke.json" if args.smoke else OUT.name)
    results: list[dict[str, Any]] = []
    for spec in tables:
        results.append(bench_model(spec, args.seed, runs, limit, load))
        write_json(out, {"benchmark": "reproducible", "issue": 51, "argv": sys.argv,
                         "environment": environment(), "results": results})
        print(table(results[-1:]), flush=True)
    print()
    print(table(results))
    if args.smoke and not all(r["verified"] == r["runs"].__len__() for r in results):
        print("smoke: a run of the demo's forest was not verified", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
