"""Benchmark: the five commands on scikit-learn pipelines saved with skops (issue 49, item 2).

Two pipelines, each fitted with a default RandomForestClassifier on two tables with text
categories and gaps: ``onehot`` = Pipeline(ColumnTransformer(OneHotEncoder on the text
columns, SimpleImputer(add_indicator=True) on the numbers with gaps, passthrough for the
rest), forest) and ``scaler`` = Pipeline(StandardScaler, forest) on the numeric columns
(rows with gaps dropped: a scaler passes gaps to the forest); the forest is the default
one, or with ``--no-bootstrap`` 20 trees that each saw every row. Per pipeline and table:
``inspect``, ``reconstruct --out``, ``single-out --data``, ``audit --data`` and ``strip
--data`` run through the command line, each's exit code and seconds; reconstruct's CSV, in
the table's own columns, is encoded back through the model's input map and scored against
the true rows beside random guessing (`treeleaks.evaluation.metrics.evaluate`).

    python bench/pipeline_commands.py --time-limit 60 [--tables penguins --kinds onehot]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def penguins() -> tuple[pd.DataFrame, str]:
    from palmerpenguins import load_penguins

    return load_penguins(), "species"


def cars() -> tuple[pd.DataFrame, str]:
    from vega_datasets import local_data

    frame = local_data.cars().drop(columns=["Name"])
    frame["Year"] = pd.to_datetime(frame["Year"]).dt.year
    acceleration = frame.pop("Acceleration")
    frame["quick"] = (acceleration > acceleration.median()).astype(int)
    return frame, "quick"


TABLES = {"penguins": penguins, "cars": cars}
FOREST: dict[str, Any] = {"random_state": 0}  # --no-bootstrap: 20 trees that each saw every row


def onehot(frame: pd.DataFrame, label: str) -> tuple[Any, pd.DataFrame]:
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    X = frame.drop(columns=label)
    text = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    gaps = [c for c in X.columns if c not in text and X[c].isna().any()]
    steps = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), text),
                               ("gaps", SimpleImputer(add_indicator=True), gaps)],
                              remainder="passthrough")
    return Pipeline([("columns", steps), ("forest", RandomForestClassifier(**FOREST))]
                    ).fit(X, frame[label]), frame


def scaler(frame: pd.DataFrame, label: str) -> tuple[Any, pd.DataFrame]:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    numbers = frame[[c for c in frame.columns if c == label or
                     pd.api.types.is_numeric_dtype(frame[c])]].dropna().reset_index(drop=True)
    return Pipeline([("scale", StandardScaler()), ("forest", RandomForestClassifier(
        **FOREST))]).fit(numbers.drop(columns=label), numbers[label]), numbers


KINDS = {"onehot": onehot, "scaler": scaler}


def run(command: list[str]) -> tuple[int, float, str]:
    tick = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "treeleaks", *command], capture_output=True,
                          text=True, timeout=600)
    return done.returncode, time.perf_counter() - tick, done.stderr.strip()[-200:]


def measure(table: str, kind: str, time_limit: float, folder: Path) -> dict[str, Any]:
    import skops.io

    from treeleaks import FeatureSchema, load_model
    from treeleaks.evaluation.metrics import evaluate

    frame, label = TABLES[table]()
    pipeline, data = KINDS[kind](frame, label)
    model_path, data_path = folder / f"{table}_{kind}.skops", folder / f"{table}_{kind}.csv"
    skops.io.dump(pipeline, model_path)
    data.to_csv(data_path, index=False)
    rows_path = folder / f"{table}_{kind}_rows.csv"
    out: dict[str, Any] = {"table": table, "kind": kind, "n": len(data)}
    commands = {
        "inspect": ["inspect", str(model_path)],
        "reconstruct": ["reconstruct", str(model_path), "--out", str(rows_path),
                        "--time-limit", str(time_limit), "--force"],
        "single-out": ["single-out", str(model_path), "--data", str(data_path), "--label",
                       label],
        "audit": ["audit", str(model_path), "--data", str(data_path), "--label", label,
                  "--out", str(folder / f"{table}_{kind}_report"), "--budget",
                  str(time_limit), "--force"],
        "strip": ["strip", str(model_path), "--out", str(folder / f"{table}_{kind}_s.skops"),
                  "--data", str(data_path), "--label", label, "--no-measure", "--force"],
    }
    for name, command in commands.items():
        code, seconds, why = run(command)
        out[name] = {"exit": code, "seconds": round(seconds, 1), **({"why": why} if code not in
                                                                     (0, 1, 5) else {})}
    model = load_model(model_path)
    if rows_path.exists():
        rows = pd.read_csv(rows_path)
        out["rows_columns_are_the_tables"] = list(rows.columns[:-1]) == model.inputs.names
        truth = model.inputs.encode(data.drop(columns=label)).assign(
            **{model.label_name: data[label].to_numpy()})
        rebuilt = model.inputs.encode(rows.drop(columns=model.label_name)).assign(
            **{model.label_name: rows[model.label_name].to_numpy()})
        schema = FeatureSchema.for_model(model).bind(model)
        score = evaluate(truth[[*model.feature_names, model.label_name]],
                         rebuilt[[*model.feature_names, model.label_name]], schema,
                         label=model.label_name)
        out.update(rows=len(rows), error=round(score.error, 4),
                   random=round(score.baseline_error, 4),
                   exact=round(float(score.exact_share), 3))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--tables", default=",".join(TABLES))
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--no-bootstrap", action="store_true")
    args = p.parse_args()
    if args.no_bootstrap:
        FOREST.update(bootstrap=False, n_estimators=20)
    with tempfile.TemporaryDirectory() as folder:
        for table in args.tables.split(","):
            for kind in args.kinds.split(","):
                result = measure(table, kind, args.time_limit, Path(folder))
                print(result, flush=True)
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
