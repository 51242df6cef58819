"""Benchmark: every model file format a custodian may be handed, read and audited (issue 52).

One table (scikit-learn's wine, 178 rows, 13 columns named x0..x12) and one model per format,
each with its framework's defaults: scikit-learn's random forest as skops and as a pickle,
LightGBM's text, XGBoost's JSON and binary JSON, ONNX exports of a scikit-learn forest
(skl2onnx) and of LightGBM and XGBoost (onnxmltools), R's rpart, randomForest and ranger
(fitted by ``Rscript`` when it is installed), and treeleaks' own JSON. Printed per format:
read ✔/✘ (with the one line when refused), the seconds to read, the fields the description
reports (and those stored row by row), the audit's steps that ran, its level, and its
seconds with the table as ``--data``.

    python bench/formats.py                 # about 3 min
    python bench/formats.py --budget 10     # each audit's budget, seconds (default 20)
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from common import BENCH_DIR, environment, saved_in_r, write_json

OUT = BENCH_DIR / "results" / "formats.json"
LABEL = "label"
R_CALLS = {"R rpart": "rpart(label ~ ., data = wine)",
           "R randomForest": "randomForest(label ~ ., data = wine)",
           "R ranger": "ranger(label ~ ., data = wine)"}


def table() -> pd.DataFrame:
    """Wine, columns x0..x12 and the label (its class index)."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    frame[LABEL] = y
    return frame


def python_files(frame: pd.DataFrame, folder: Path) -> dict[str, Path]:
    """One file per Python format, each model fitted with its defaults."""
    import lightgbm
    import xgboost
    from sklearn.ensemble import RandomForestClassifier
    from skops.io import dump

    X, y = frame.drop(columns=[LABEL]), frame[LABEL]
    forest = RandomForestClassifier(random_state=0).fit(X, y)
    booster = lightgbm.LGBMClassifier(verbose=-1, random_state=0).fit(X, y)
    xgb = xgboost.XGBClassifier(random_state=0).fit(X.to_numpy(), y)  # onnxmltools: f0, f1, ...
    files = {"scikit-learn skops": folder / "forest.skops",
             "scikit-learn pickle": folder / "forest.pkl",
             "LightGBM text": folder / "lightgbm.txt", "XGBoost JSON": folder / "xgb.json",
             "XGBoost UBJ": folder / "xgb.ubj", "treeleaks JSON": folder / "forest.json"}
    dump(forest, files["scikit-learn skops"])
    files["scikit-learn pickle"].write_bytes(pickle.dumps(forest))
    booster.booster_.save_model(files["LightGBM text"])
    xgb.save_model(files["XGBoost JSON"])
    xgb.save_model(files["XGBoost UBJ"])
    from treeleaks import load_model

    load_model(files["scikit-learn skops"]).to_json(files["treeleaks JSON"])
    files.update(_onnx_files(forest, booster, xgb, X.to_numpy(np.float32), folder))
    return files


def _onnx_files(forest: Any, booster: Any, xgb: Any, X: np.ndarray, folder: Path
                ) -> dict[str, Path]:
    import onnxmltools
    import skl2onnx
    from onnxmltools.convert.common.data_types import FloatTensorType

    types = [("input", FloatTensorType([None, X.shape[1]]))]
    exports: dict[str, Callable[[], Any]] = {
        "ONNX scikit-learn (skl2onnx)": lambda: skl2onnx.to_onnx(forest, X[:1]),
        "ONNX LightGBM (onnxmltools)": lambda: onnxmltools.convert_lightgbm(
            booster, initial_types=types),
        "ONNX XGBoost (onnxmltools)": lambda: onnxmltools.convert_xgboost(
            xgb, initial_types=types)}
    files = {}
    for index, (name, export) in enumerate(exports.items()):
        files[name] = folder / f"model{index}.onnx"
        files[name].write_bytes(export().SerializeToString())
    return files


def r_files(frame: pd.DataFrame, folder: Path) -> dict[str, Path]:
    """One file per R model, fitted by Rscript (none when R or a package is missing)."""
    if shutil.which("Rscript") is None:
        return {}
    frame.to_csv(folder / "wine.csv", index=False)
    setup = ["suppressPackageStartupMessages({library(rpart); library(randomForest); "
             "library(ranger)})", "wine <- read.csv('wine.csv')",
             "wine$label <- factor(wine$label)"]
    try:
        return saved_in_r(folder, setup, R_CALLS)
    except subprocess.CalledProcessError:  # a package missing
        return {}


def measure(name: str, path: Path, frame: pd.DataFrame, budget: float) -> dict[str, Any]:
    """One file read through the one door, described, and audited with the table."""
    from treeleaks import load_model
    from treeleaks.report.collect import run_audit
    from treeleaks.report.evidence import AuditInput
    from treeleaks.runtime.errors import TreeleaksError

    row: dict[str, Any] = {"format": name, "file": path.name}
    start = time.perf_counter()
    try:
        model = load_model(path, trust_pickle=True, allow_regression=True,
                           counts_removed_ok=True)
    except TreeleaksError as exc:
        return {**row, "read": False, "refused": str(exc)}
    row["read_s"] = round(time.perf_counter() - start, 3)
    columns = [c for c in frame.columns if c != LABEL]
    if model.inputs is None and model.feature_names != columns:  # a file fitted on arrays
        model = load_model(path, trust_pickle=True, allow_regression=True,
                           counts_removed_ok=True, feature_names=columns)
    fields = model.described().fields
    row.update(read=True, trees=model.n_trees, counts=model.counts_released,
               fields=[f.name for f in fields], per_row=[f.name for f in fields if f.per_row])
    start = time.perf_counter()
    audit = run_audit(AuditInput(model=model, path=str(path), data=frame, label=LABEL,
                                 total_budget=budget))
    row["attacks_run"] = [run.name for run in audit.attacks
                          if run.status not in ("does not apply", "failed")]
    row["audit"] = {"level": audit.risk["level"], "seconds":
                    round(time.perf_counter() - start, 1)}
    return row


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| format | read | read s | fields reported (row by row) | attacks run | audit |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if not r["read"]:
            print(f"| {r['format']} | ✘ | - | {r['refused']} | - | - |")
            continue
        per_row = f" ({', '.join(r['per_row'])})" if r["per_row"] else ""
        print(f"| {r['format']} | ✔ | {r['read_s']:.2f} | {len(r['fields'])}{per_row} | "
              f"{', '.join(r['attacks_run']) or 'none'} | {r['audit']['level']} in "
              f"{r['audit']['seconds']:.1f} s |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=20.0, help="each audit's seconds")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    frame = table()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = {**python_files(frame, folder), **r_files(frame, folder)}
        rows = [measure(name, path, frame, args.budget) for name, path in files.items()]
    print_table(rows)
    if not any(r["format"].startswith("R ") for r in rows):
        print("R models skipped: Rscript with rpart, randomForest and ranger not found")
    write_json(args.out, {"environment": environment(), "budget_s": args.budget,
                          "rows": rows})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
