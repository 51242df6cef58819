"""Benchmark: scikit-learn's default forest fitted on a table with gaps, rebuilt row by row
(issue 49: leaves reached by several paths, `counts/paths.py`).

``RandomForestClassifier(random_state=seed)`` (bootstrap, 100 full-depth trees) on
palmerpenguins (344 rows; label: the species is Adelie), three ways, each read by
``from_sklearn`` and rebuilt by ``reconstruct`` in this process, one after the other:

- ``gaps``: the five numeric columns, gaps left in (read with a gap feature per column);
- ``dummies``: the same with island and sex one-hot (``pandas.get_dummies``; a gap in sex
  is a row of zeros), gaps left in the numbers;
- ``no-gaps``: the numeric columns on the rows without gaps, the same forest otherwise.

Printed per table: rows rebuilt and whether they were verified against the model, the
matched error beside random guessing over the model's features (the truth encoded through
the model's input map), the same on the measurements of the rows without gaps alone (an
encoded gap puts 0 in its column, which would widen the columns' ranges the errors are
scaled by: this is the figure to set beside ``no-gaps``), label agreement, the route taken
and the time.

    python bench/gap_forest.py                    # 60 s each
    python bench/gap_forest.py --time-limit 20 --tables gaps
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import pandas as pd
from common import BENCH_DIR, environment, fmt, write_json

MEASUREMENTS = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
TABLES = ("gaps", "dummies", "no-gaps")


def table(kind: str) -> tuple[pd.DataFrame, pd.Series]:
    """The features and the label of one way of reading penguins."""
    from palmerpenguins import load_penguins

    frame = load_penguins()
    label = (frame.pop("species") == "Adelie").astype(int).rename("adelie")
    if kind == "dummies":
        return pd.get_dummies(frame, columns=["island", "sex"], dtype=float), label
    numbers = frame[MEASUREMENTS]
    if kind == "no-gaps":
        keep = numbers.notna().all(axis=1)
        return numbers[keep].reset_index(drop=True), label[keep].reset_index(drop=True)
    return numbers, label


def one_run(kind: str, time_limit: float, seed: int) -> dict[str, Any]:
    """Fit, rebuild, score."""
    from sklearn.ensemble import RandomForestClassifier

    from treeleaks import FeatureSchema, from_sklearn, reconstruct
    from treeleaks.evaluation.metrics import evaluate

    X, y = table(kind)
    model = from_sklearn(RandomForestClassifier(random_state=seed).fit(X, y))
    start = time.monotonic()
    rec = reconstruct(model, time_limit=time_limit, seed=seed)
    elapsed = time.monotonic() - start
    truth = model.inputs.encode(X) if model.inputs is not None else X.copy()
    truth = truth[list(model.feature_names)].assign(**{model.label_name: y.to_numpy()})
    out: dict[str, Any] = {
        "table": kind, "n": len(X), "features": model.n_features, "aliased": model.aliased,
        "rows": rec.n_rows, "verified": bool(rec.verified), "status": str(rec.status),
        "route": f"{rec.formulation}/{rec.strategy}", "time_s": elapsed}
    if rec.n_rows:
        schema = FeatureSchema.infer(model).bind(model)
        score = evaluate(truth, rec.rows, schema, label=model.label_name, seed=seed)
        gap = [f"{c}=(missing)" for c in MEASUREMENTS if f"{c}=(missing)" in truth.columns]
        whole = ~truth[gap].any(axis=1).to_numpy()
        numbers = evaluate(truth[whole], rec.rows[~rec.rows[gap].any(axis=1).to_numpy()],
                           schema, label=model.label_name, seed=seed,
                           error_columns=[c for c in MEASUREMENTS if c in truth.columns])
        out.update(error=score.error, baseline=score.baseline_error,
                   measurement_error=numbers.error, measurement_baseline=numbers.baseline_error,
                   labels=score.label_agreement)
    return out


COLUMNS = ("table", "n", "features", "aliased", "rows", "verified", "error", "baseline",
           "measurement_error", "measurement_baseline", "labels", "route", "time_s")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", default=",".join(TABLES))
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    runs = []
    print(" | ".join(COLUMNS))
    for kind in args.tables.split(","):
        runs.append(one_run(kind, args.time_limit, args.seed))
        print(" | ".join(fmt(runs[-1].get(c)) for c in COLUMNS), flush=True)
    write_json(BENCH_DIR / "results" / "gap_forest.json",
               {"meta": {"benchmark": "gap_forest", "issue": 49, "argv": sys.argv,
                         "time_limit": args.time_limit, "environment": environment()},
                "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
