"""LightGBM and XGBoost, every default, fitted on two tables with text categories and gaps
(palmerpenguins' penguins, vega_datasets' cars): read, rebuilt, scored.

Per framework and table it prints whether the file was read, the rows rebuilt within every
count, whether they were verified, the time, and the matched error beside random guessing
(`treeleaks.evaluation.metrics.evaluate`, over the model's features: each category and gap
a 0/1 feature, a gap's value set to the column's median in both row sets, since the model
says nothing of it). JSON beside: ``bench/results/booster_gaps.json``.

    python bench/booster_gaps.py [--time-limit 60]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

RESULTS = Path(__file__).resolve().parent / "results" / "booster_gaps.json"


def penguins() -> tuple[pd.DataFrame, np.ndarray, str]:
    """Penguins: species from island, sex (text, with gaps) and four measures with gaps."""
    import palmerpenguins

    frame = palmerpenguins.load_penguins()
    label = pd.Categorical(frame.pop("species")).codes
    for column in ("island", "sex"):
        frame[column] = pd.Categorical(frame[column].astype(object))
    return frame, np.asarray(label), "species"


def cars() -> tuple[pd.DataFrame, np.ndarray, str]:
    """Cars: more than four cylinders, from Origin (text) and six numbers, two with gaps."""
    from vega_datasets import local_data

    frame = local_data.cars().drop(columns=["Name"])
    label = (frame.pop("Cylinders") > 4).astype(int).to_numpy()
    frame["Year"] = frame["Year"].dt.year
    frame["Origin"] = pd.Categorical(frame["Origin"].astype(object))
    return frame, label, "many_cylinders"


def fit(framework: str, frame: pd.DataFrame, label: np.ndarray) -> Any:
    if framework == "LightGBM":
        import lightgbm as lgb

        return lgb.LGBMClassifier(verbose=-1).fit(frame, label)
    import xgboost as xgb

    return xgb.XGBClassifier(enable_categorical=True, tree_method="hist").fit(frame, label)


def scored(model: Any, truth: pd.DataFrame, rows: pd.DataFrame, label: str) -> Any:
    """`evaluate` over the model's features (see the module doc)."""
    from treeleaks import FeatureSchema
    from treeleaks.evaluation.metrics import evaluate
    from treeleaks.ir.inputs import NumberColumn

    names = model.feature_names
    encoded = [model.inputs.encode(frame)[names].copy() for frame in (truth, rows)]
    for column in model.inputs.columns:
        if isinstance(column, NumberColumn) and column.gap is not None:
            value, gap = names[column.feature], names[column.gap]
            middle = float(encoded[0].loc[encoded[0][gap] < 0.5, value].median())
            for frame in encoded:
                frame.loc[frame[gap] > 0.5, value] = middle
    groups = [group for group, one in model.inputs.groups() if one]
    schema = FeatureSchema.from_frame(encoded[0], groups or None)
    true_rows = encoded[0].assign(**{label: truth[label].to_numpy()})
    found = encoded[1].assign(**{label: rows[label].to_numpy()})
    return evaluate(true_rows, found, schema, label=label, n_baseline_draws=5, seed=0)


def run(table: str, framework: str, time_limit: float) -> dict[str, Any]:
    from treeleaks import reconstruct
    from treeleaks.frontends.lightgbm import read_lightgbm
    from treeleaks.frontends.xgboost import read_xgboost

    frame, label, label_name = {"penguins": penguins, "cars": cars}[table]()
    out: dict[str, Any] = {"table": table, "framework": framework, "n": len(frame)}
    fitted = fit(framework, frame, label)
    read = read_lightgbm if framework == "LightGBM" else read_xgboost
    try:
        model = read(fitted, label_name=label_name)
    except Exception as exc:  # the refusal is the figure
        return {**out, "read": False, "why": " ".join(str(exc).split())}
    out.update(read=True, trees=len(model.trees), features=len(model.feature_names))
    tick = time.perf_counter()
    rebuilt = reconstruct(model, time_limit=time_limit)
    out.update(time_s=round(time.perf_counter() - tick, 1), status=str(rebuilt.status),
               rows=int(rebuilt.n_rows), verified=bool(rebuilt.verified))
    if rebuilt.n_rows:
        rows = model.inputs.decode(rebuilt.rows)
        truth = frame.assign(**{label_name: label})
        score = scored(model, truth, rows, label_name)
        out.update(error=round(score.error, 4), random_error=round(score.baseline_error, 4),
                   exact_share=round(score.exact_share, 4))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    results = []
    for table in ("penguins", "cars"):
        for framework in ("LightGBM", "XGBoost"):
            result = run(table, framework, args.time_limit)
            results.append(result)
            print(json.dumps(result), flush=True)
    print(f"\n{'table':9} {'framework':9} {'read':4} {'rows':>9} {'verified':8} {'time':>6} "
          f"{'error':>6} {'random':>6}")
    for r in results:
        rows = f"{r.get('rows', 0)}/{r['n']}"
        print(f"{r['table']:9} {r['framework']:9} {'✔' if r['read'] else '✘':4} {rows:>9} "
              f"{r.get('verified', '-')!s:8} {r.get('time_s', '-'):>6} "
              f"{r.get('error', '-'):>6} {r.get('random_error', '-'):>6}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
