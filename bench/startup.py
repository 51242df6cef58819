"""Benchmark: the wall time of ``treeleaks reconstruct`` on a small bootstrap forest (issue 41,
item 8), where starting up, not the attack, is most of the run.

Fits scikit-learn's default forest (``RandomForestClassifier(random_state=0)``: 100 bootstrap
trees) on N rows of a shared binarized dataset (sampled by the seed, as
``bench/default_forest.py`` does), saves it with skops (`treeleaks.io.save_model`), then runs
the ``treeleaks reconstruct`` command in a fresh process ``--runs`` times. Each run's wall
time is taken around the process; the attack's own time is the ``time_s`` of its ``--json``
summary. The reconstructed rows' CSV is hashed so that two results files (before and after a
change) show the same reconstruction. The heavy libraries a run imported are listed from one
more run with ``-X importtime``.

    python bench/startup.py                       # compas:100, 5 runs
    python bench/startup.py --label before --out bench/results/startup_before.json

See bench/README.md for what is measured.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import BENCH_DIR, DEFAULT_DATA_DIR, environment, fmt, load_dataset, write_json

# Top-level packages whose import alone takes a large share of a short run.
HEAVY = ("pandas", "sklearn", "skops", "scipy", "matplotlib", "ortools", "dask", "jsonschema",
         "pydantic", "joblib")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="compas")
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--label", default="after", help="what this run measures")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "startup.json")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        model = _fitted_model(args.dataset, args.rows, args.seed, args.data_dir, Path(tmp))
        runs = [_run(model, Path(tmp), index) for index in range(args.runs)]
        heavy = _heavy_imports(model, Path(tmp))
    walls = [r["wall_s"] for r in runs]
    attacks = [r["time_s"] for r in runs]
    record = {
        "label": args.label,
        "model": {"dataset": f"{args.dataset}:{args.rows}", "seed": args.seed,
                  "estimator": "RandomForestClassifier(random_state=seed)"},
        "runs": runs,
        "median_wall_s": statistics.median(walls),
        "median_time_s": statistics.median(attacks),
        "results": sorted({r["rows_sha256"] for r in runs}),
        "statuses": sorted({r["status"] for r in runs}),
        "heavy_imports": heavy,
        "environment": environment(),
    }
    write_json(args.out, record)
    print(f"{'run':>4} {'wall_s':>8} {'time_s':>8}  status")
    for index, run in enumerate(runs):
        print(f"{index:>4} {fmt(run['wall_s']):>8} {fmt(run['time_s']):>8}  {run['status']}")
    print(f"median wall {fmt(record['median_wall_s'])} s, attack {fmt(record['median_time_s'])} s;"
          f" rows {', '.join(h[:12] for h in record['results'])}")
    print(f"heavy imports: {', '.join(heavy) or 'none'}")
    print(f"wrote {args.out}")


def _fitted_model(dataset: str, rows: int, seed: int, data_dir: Path, where: Path) -> Path:
    """scikit-learn's default forest on ``rows`` sampled rows, saved with skops."""
    from sklearn.ensemble import RandomForestClassifier

    from treeleaks.io import save_model

    data = load_dataset(dataset, data_dir)
    train = data.sample(rows, seed)
    forest = RandomForestClassifier(random_state=seed)
    forest.fit(train.drop(columns=[data.label]), train[data.label])
    return save_model(forest, where / "forest.skops")


def _command(*options: str) -> list[str]:
    """``treeleaks`` run by this interpreter, as its console script does."""
    return [sys.executable, *options, "-c", "from treeleaks.cli import app; app()"]


def _run(model: Path, where: Path, index: int) -> dict[str, Any]:
    """One ``treeleaks reconstruct`` run: its wall time, the attack's time and status, and the
    hash of the rows it wrote."""
    summary, rows = where / f"run{index}.json", where / f"rows{index}.csv"
    start = time.perf_counter()
    done = subprocess.run([*_command(), "reconstruct", str(model), "--json", str(summary),
                           "--out", str(rows)], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if not summary.exists():
        raise SystemExit(f"run {index} failed ({done.returncode}): {done.stderr.strip()}")
    result = json.loads(summary.read_text())
    return {"wall_s": wall, "time_s": result.get("time_s"), "status": result.get("status"),
            "exit_code": done.returncode,
            "rows_sha256": hashlib.sha256(rows.read_bytes()).hexdigest()}


def _heavy_imports(model: Path, where: Path) -> dict[str, float]:
    """The heavy packages one run imported, with the seconds each took (``-X importtime``,
    cumulative, top-level module only)."""
    done = subprocess.run([*_command("-X", "importtime"), "reconstruct", str(model),
                           "--json", str(where / "importtime.json")],
                          capture_output=True, text=True)
    seconds: dict[str, float] = {}
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2].strip()
        if name in HEAVY:
            seconds[name] = int(parts[1]) / 1e6
    return seconds


if __name__ == "__main__":
    main()
