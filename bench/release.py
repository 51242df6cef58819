"""Benchmark: `treeleaks release` on scikit-learn's default forests (issue 48).

For each case, fit the default model on every row (breast cancer's
``RandomForestClassifier(random_state=0)`` on its 569 rows; diabetes'
``RandomForestRegressor(random_state=0)`` on its 442), save it as .skops, and run
``treeleaks release MODEL --data train.csv --label label --out DIR --budget S`` in this
process. Record the wall time, the table (``candidates.json``) and, when a file was written,
re-audit it (`run_audit` with the rows, as ``treeleaks audit release.skops --data``) and
state its level beside the table's, with the accuracy (or R²) cost.

    python bench/release.py --smoke     # 120 and 150 rows, 10 trees, 30 s each: about a minute
    nice -n 10 python bench/release.py  # the two default forests, 900 s each
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from common import BENCH_DIR, environment, fmt, write_json

LABEL = "label"
CASES = ("cancer", "diabetes")
REAUDIT_S = 120.0


def case_data(name: str, rows: int | None) -> tuple[pd.DataFrame, Any]:
    """The table (features and ``label``) and the default forest of scikit-learn for it."""
    import sklearn.datasets
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    loader = {"cancer": sklearn.datasets.load_breast_cancer,
              "diabetes": sklearn.datasets.load_diabetes}[name]
    data = loader(as_frame=True)
    frame = data.data.assign(**{LABEL: data.target.to_numpy()})
    if rows is not None:
        frame = frame.iloc[:rows].reset_index(drop=True)
    learner = RandomForestClassifier if name == "cancer" else RandomForestRegressor
    return frame, learner


def run_case(name: str, rows: int | None, trees: int, budget: float, folder: Path
             ) -> dict[str, Any]:
    from treeleaks.cli import app
    from treeleaks.io import save_model

    frame, learner = case_data(name, rows)
    model = learner(n_estimators=trees, random_state=0).fit(frame.drop(columns=[LABEL]),
                                                            frame[LABEL])
    path = save_model(model, folder / f"{name}.skops")
    data = folder / f"{name}.csv"
    frame.to_csv(data, index=False)
    out = folder / f"{name}-release"
    start = time.perf_counter()
    code = app(["release", str(path), "--data", str(data), "--label", LABEL, "--out", str(out),
                "--budget", str(budget)], standalone_mode=False)
    wall = time.perf_counter() - start
    record: dict[str, Any] = {"case": name, "rows": len(frame), "trees": trees,
                              "budget_s": budget, "wall_s": round(wall, 1), "exit_code": code}
    table_path = out / "candidates.json"
    if not table_path.exists():
        return record
    table = json.loads(table_path.read_text())
    record["table"] = table
    chosen = table["chosen"]
    if chosen is not None:
        record["reaudit_level"] = reaudit(out / chosen["file"], frame)
    return record


def reaudit(path: Path, frame: pd.DataFrame) -> str:
    """The written file's level, audited with the rows as ``treeleaks audit`` does."""
    from treeleaks.io import load_model
    from treeleaks.report.collect import run_audit
    from treeleaks.report.evidence import AuditInput

    model = load_model(path, allow_regression=True, counts_removed_ok=True)
    model.label_name = LABEL
    audit = run_audit(AuditInput(model, path.name, data=frame, label=LABEL,
                                 total_budget=REAUDIT_S))
    return audit.risk["level"]


def settings_text(settings: dict[str, Any]) -> str:
    if settings.get("learner") == "dp_forest":
        return (f"DP forest ε={settings['epsilon']:g} ({settings['n_estimators']} trees, "
                f"depth {settings['max_depth']})")
    shown = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                      for k, v in settings.items() if k != "learner")
    return shown or "original settings, stripped"


def print_case(r: dict[str, Any]) -> None:
    table = r.get("table")
    print(f"\n## {r['case']}: {r['rows']} rows, {r['trees']} trees, budget {r['budget_s']:g} s, "
          f"wall {r['wall_s']} s, exit {r['exit_code']}")
    if table is None:
        print("no table written")
        return
    metric = table["metric"]
    print(f"\n| # | settings | level | rows rebuilt | rows singled out | {metric} | seconds |")
    print("|---|---|---|---|---|---|---|")
    o = table["original"]
    print(f"| original | as given | {o['level']} | {fmt(o['rows_rebuilt'])} "
          f"| {fmt(o['rows_singled_out'])} | {fmt(o[metric])} | {fmt(o['seconds'], 1)} |")
    for i, c in enumerate(table["candidates"], start=1):
        level = f"failed: {c['error']}" if c["error"] else c["level"] + (
            " (lower bound)" if c["lower_bound"] else "")
        mark = " ✓" if table["chosen"] and table["chosen"]["index"] == i - 1 else ""
        print(f"| {i}{mark} | {settings_text(c['settings'])} | {level} "
              f"| {fmt(c['rows_rebuilt'])} | {fmt(c['rows_singled_out'])} | {fmt(c[metric])} "
              f"| {fmt(c['seconds'], 1)} |")
    chosen = table["chosen"]
    if chosen is None:
        print(f"\nnone lower: no candidate of {len(table['candidates'])} audits below "
              f"{o['level']}" + ("" if table["complete"] else f" ({table['stopped']})"))
    else:
        print(f"\nchosen: {chosen['file']} at {chosen['level']} (re-audited: "
              f"{r['reaudit_level']}), {metric} {fmt(chosen[metric])} against "
              f"{fmt(o[metric])}: cost {fmt(chosen['cost'])}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--budget", type=float, default=900.0)
    p.add_argument("--trees", type=int, default=100)
    p.add_argument("--rows", type=int, default=None, help="the first ROWS rows only")
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "release.json")
    p.add_argument("--smoke", action="store_true")
    args = p.parse_args(argv)
    if args.smoke:
        args.budget, args.trees, args.rows = 30.0, 10, 150
        args.out = Path(tempfile.gettempdir()) / "release_smoke.json"
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.cases.split(","):
            record = run_case(name, args.rows, args.trees, args.budget, Path(folder))
            print_case(record)
            runs.append(record)
            write_json(args.out, {"environment": environment(), "args": {
                k: str(v) for k, v in vars(args).items()}, "runs": runs})
    print(f"wrote {args.out}")
    return 0 if all(r["exit_code"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
