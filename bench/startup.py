"""Benchmark: the wall time of ``treeleaks reconstruct`` on a small bootstrap forest (issue 41,
item 8), where starting up, not the attack, is most of the run.

Fits scikit-learn's default forest (``RandomForestClassifier(random_state=0)``: 100 bootstrap
trees) on N rows of a shared binarized dataset (sampled by the seed, as
``bench/default_forest.py`` does), saves it with skops (`treeleaks.io.save_model`), then runs
the ``treeleaks reconstruct`` command in a fresh process ``--runs`` times, after one run not
counted (it leaves Python's bytecode cached, as an installed package has it; the children run
without ``PYTHONDONTWRITEBYTECODE``). Each run's wall time is taken around the process, and
its CPU time (user + system) from the operating system, which other work on the machine
disturbs less; the attack's own time is the ``time_s`` of its ``--json`` summary. The
reconstructed rows' CSV is hashed so that two results files (before and after a change) show
the same reconstruction. The heavy libraries a run imported are listed from one more run with
``-X importtime``. ``--src`` runs the treeleaks of another source tree (an export of the
commit before a change) with the same interpreter and libraries.

    python bench/startup.py                       # compas:100, 5 runs
    git archive main | tar -x -C /tmp/before
    python bench/startup.py --src /tmp/before/src --label before \
        --out bench/results/startup_before.json

See bench/README.md for what is measured.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
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
    parser.add_argument("--src", type=Path, help="run the treeleaks package under this folder")
    parser.add_argument("--label", default="after", help="what this run measures")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "startup.json")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        model = _fitted_model(args.dataset, args.rows, args.seed, args.data_dir, Path(tmp))
        env = _child_environment(args.src)
        _run(model, Path(tmp), -1, env)  # caches the bytecode
        runs = [_run(model, Path(tmp), index, env) for index in range(args.runs)]
        heavy = _heavy_imports(model, Path(tmp), env)
    record = {
        "label": args.label,
        "src": str(args.src) if args.src else None,
        "model": {"dataset": f"{args.dataset}:{args.rows}", "seed": args.seed,
                  "estimator": "RandomForestClassifier(random_state=seed)"},
        "runs": runs,
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "median_time_s": statistics.median(r["time_s"] for r in runs),
        "load_average": os.getloadavg(),
        "results": sorted({r["rows_sha256"] for r in runs}),
        "statuses": sorted({r["status"] for r in runs}),
        "heavy_imports": heavy,
        "environment": environment(),
    }
    write_json(args.out, record)
    print(f"{'run':>4} {'wall_s':>8} {'cpu_s':>8} {'time_s':>8}  status")
    for index, run in enumerate(runs):
        print(f"{index:>4} {fmt(run['wall_s']):>8} {fmt(run['cpu_s']):>8} "
              f"{fmt(run['time_s']):>8}  {run['status']}")
    print(f"median wall {fmt(record['median_wall_s'])} s, CPU {fmt(record['median_cpu_s'])} s, "
          f"attack {fmt(record['median_time_s'])} s; rows "
          f"{', '.join(h[:12] for h in record['results'])}; load average "
          f"{', '.join(f'{x:.2f}' for x in record['load_average'])}")
    shown = sorted(heavy.items(), key=lambda item: -item[1])
    print(f"heavy imports: {', '.join(f'{n} {s:.2f} s' for n, s in shown) or 'none'}")
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


def _child_environment(src: Path | None) -> dict[str, str]:
    """This process's environment, bytecode caching on, ``src`` first on the path if given."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if src is not None:
        env["PYTHONPATH"] = str(src.resolve())
    return env


def _cpu_seconds() -> float:
    """User and system seconds of every child process waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(model: Path, where: Path, index: int, env: dict[str, str]) -> dict[str, Any]:
    """One ``treeleaks reconstruct`` run: its wall and CPU time, the attack's time and
    status, and the hash of the rows it wrote."""
    summary, rows = where / f"run{index}.json", where / f"rows{index}.csv"
    cpu, start = _cpu_seconds(), time.perf_counter()
    done = subprocess.run([*_command(), "reconstruct", str(model), "--json", str(summary),
                           "--out", str(rows)], capture_output=True, text=True, env=env)
    wall, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    if not summary.exists():
        raise SystemExit(f"run {index} failed ({done.returncode}): {done.stderr.strip()}")
    result = json.loads(summary.read_text())
    return {"wall_s": wall, "cpu_s": cpu, "time_s": result.get("time_s"),
            "status": result.get("status"), "exit_code": done.returncode,
            "rows_sha256": hashlib.sha256(rows.read_bytes()).hexdigest()}


def _heavy_imports(model: Path, where: Path, env: dict[str, str]) -> dict[str, float]:
    """The heavy packages one run imported, with the seconds their own modules took to
    import (``-X importtime``: the self times of every module in the package, summed)."""
    done = subprocess.run([*_command("-X", "importtime"), "reconstruct", str(model),
                           "--json", str(where / "importtime.json")],
                          capture_output=True, text=True, env=env)
    seconds: dict[str, float] = {}
    for line in done.stderr.splitlines():
        fields = line.removeprefix("import time:").split("|")  # self µs | cumulative | name
        if len(fields) != 3 or not fields[0].strip().isdigit():
            continue
        package = fields[2].strip().split(".")[0]
        if package in HEAVY:
            seconds[package] = seconds.get(package, 0.0) + int(fields[0]) / 1e6
    return seconds


if __name__ == "__main__":
    main()
