"""Benchmark: the model files custodians receive, fitted the ordinary ways on real tables with
text categories and gaps (issue 49).

Each file kind is fitted with every default on each table and saved the usual way for its
framework (skops for scikit-learn, a booster's own model file), then read by
``treeleaks.load_model`` and rebuilt by ``treeleaks.reconstruct`` in a process of its own.
Printed per kind and table: whether it was read (✘ with the reader's one line), the rows
rebuilt and whether they were verified against the model, the matched error beside random
guessing (both scored as multisets over the model's features, the truth encoded through the
model's input map), the share of rows rebuilt exactly, and the time.

Tables (they ship with Python packages; a missing one is skipped with a line):

- ``penguins``: palmerpenguins, 344 rows; island and sex as text (sex with gaps), four
  measurements with gaps, year; label: the species is Adelie;
- ``cars``: vega_datasets' cars, 406 rows; origin as text, miles per gallon and horsepower
  with gaps; label: acceleration above its median;
- ``weather``: vega_datasets' Seattle weather, 1,461 rows; the month as text, four
  measurements; label: a sunny day.

The kind ``xgboost-multiclass`` is fitted on each table's label of several classes instead:
the species (3), the acceleration's thirds (3), the weather (5).

    python bench/custodian_files.py --smoke             # one kind, one table, 20 s (exit 1
                                                        # unless it is read and gives rows)
    python bench/custodian_files.py --time-limit 60     # every kind on every table
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from common import BENCH_DIR, environment, fmt, isolated_record, stage_saver, write_json

Table = tuple[pd.DataFrame, pd.Series]  # features as the custodian holds them, the label


def penguins(multiclass: bool = False) -> Table:
    from palmerpenguins import load_penguins

    frame = load_penguins()
    species = frame.pop("species")
    label = (_codes(species, "species") if multiclass else
             (species == "Adelie").astype(int).rename("adelie"))
    return _categories(frame, ["island", "sex"]), label


def cars(multiclass: bool = False) -> Table:
    from vega_datasets import local_data

    frame = local_data.cars().drop(columns=["Name"])
    frame["Year"] = pd.to_datetime(frame["Year"]).dt.year
    acceleration = frame.pop("Acceleration")
    label = (pd.qcut(acceleration, 3, labels=False).rename("acceleration_third")
             if multiclass else (acceleration > acceleration.median()).astype(int).rename(
                 "quick"))
    return _categories(frame, ["Origin"]), label


def weather(multiclass: bool = False) -> Table:
    from vega_datasets import local_data

    frame = local_data.seattle_weather()
    frame["month"] = pd.to_datetime(frame.pop("date")).dt.strftime("%b")
    weather = frame.pop("weather")
    label = (_codes(weather, "weather") if multiclass else
             (weather == "sun").astype(int).rename("sun"))
    return _categories(frame, ["month"]), label


def _codes(values: pd.Series, name: str) -> pd.Series:
    """A text label as the codes 0, 1, ... of its sorted values (XGBoost's classes)."""
    return values.astype("category").cat.codes.astype(int).rename(name)


def _categories(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    frame = frame.copy()
    for column in columns:
        frame[column] = frame[column].astype(object).astype("category")
    return frame.reset_index(drop=True)


TABLES: dict[str, Callable[..., Table]] = {"penguins": penguins, "cars": cars,
                                           "weather": weather}


# --- the file kinds: fit with defaults, save the usual way -------------------------------


def _text_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)]


def pipeline_onehot_forest(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """Pipeline(ColumnTransformer(OneHotEncoder, passthrough), RandomForestClassifier)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    encode = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"),
                                 _text_columns(frame))], remainder="passthrough")
    fitted = Pipeline([("encode", encode), ("forest", RandomForestClassifier(random_state=0))])
    return _skops(fitted.fit(_objects(frame), label), folder / "pipeline_onehot.skops")


def pipeline_scaler_forest(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """Pipeline(StandardScaler, RandomForestClassifier) on the numeric columns."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    numeric = frame.drop(columns=_text_columns(frame))
    fitted = Pipeline([("scale", StandardScaler()),
                       ("forest", RandomForestClassifier(random_state=0))])
    return _skops(fitted.fit(numeric, label), folder / "pipeline_scaler.skops")


def pipeline_ordinal_hist(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """scikit-learn's documented pattern: Pipeline(ColumnTransformer(OrdinalEncoder,
    passthrough), HistGradientBoostingClassifier(categorical_features=the codes)), the
    numbers' gaps left in for the booster to route."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OrdinalEncoder

    text = _text_columns(frame)
    encode = ColumnTransformer([("text", OrdinalEncoder(), text)], remainder="passthrough")
    booster = HistGradientBoostingClassifier(categorical_features=list(range(len(text))),
                                             random_state=0)
    fitted = Pipeline([("encode", encode), ("booster", booster)])
    return _skops(fitted.fit(_objects(frame), label), folder / "pipeline_ordinal_hist.skops")


def hist_gaps(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """HistGradientBoostingClassifier on the numeric columns, gaps left in."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    numeric = frame.drop(columns=_text_columns(frame))
    fitted = HistGradientBoostingClassifier(random_state=0).fit(numeric, label)
    return _skops(fitted, folder / "hist_gaps.skops")


def hist_categories(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """HistGradientBoostingClassifier(categorical_features="from_dtype") on the table."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    fitted = HistGradientBoostingClassifier(categorical_features="from_dtype",
                                            random_state=0).fit(frame, label)
    return _skops(fitted, folder / "hist_categories.skops")


def lightgbm_categories(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """LGBMClassifier on the table (pandas categories, gaps), its text model file."""
    import lightgbm

    fitted = lightgbm.LGBMClassifier(verbose=-1, random_state=0).fit(frame, label)
    path = folder / "lightgbm_categories.txt"
    fitted.booster_.save_model(path)
    return path


def lightgbm_gaps(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """LGBMClassifier on the numeric columns, gaps left in, its text model file."""
    import lightgbm

    numeric = frame.drop(columns=_text_columns(frame))
    fitted = lightgbm.LGBMClassifier(verbose=-1, random_state=0).fit(numeric, label)
    path = folder / "lightgbm_gaps.txt"
    fitted.booster_.save_model(path)
    return path


def xgboost_gaps(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """XGBClassifier on the numeric columns, gaps left in, its JSON model file."""
    import xgboost

    numeric = frame.drop(columns=_text_columns(frame))
    fitted = xgboost.XGBClassifier(random_state=0).fit(numeric, label)
    path = folder / "xgboost_gaps.json"
    fitted.save_model(path)
    return path


def xgboost_categories(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """XGBClassifier(enable_categorical=True) on the table, its JSON model file."""
    import xgboost

    fitted = xgboost.XGBClassifier(enable_categorical=True, random_state=0).fit(frame, label)
    path = folder / "xgboost_categories.json"
    fitted.save_model(path)
    return path


def xgboost_multiclass(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """XGBClassifier(enable_categorical=True) on the table and its multiclass label (the
    species, the acceleration's thirds, the weather), its JSON model file."""
    return xgboost_categories(frame, label, folder)


def search_pipeline_forest(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """GridSearchCV over Pipeline(ColumnTransformer(OneHotEncoder, SimpleImputer),
    RandomForestClassifier) saved with skops: the best pipeline, refitted, inside."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    text = _text_columns(frame)
    numbers = [c for c in frame.columns if c not in text]
    columns = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), text),
                                 ("numbers", SimpleImputer(), numbers)])
    pipeline = Pipeline([("columns", columns),
                         ("forest", RandomForestClassifier(random_state=0))])
    search = GridSearchCV(pipeline, {"forest__min_samples_leaf": [1, 5]}, cv=3)
    return _skops(search.fit(_objects(frame), label), folder / "search_pipeline.skops")


def pipeline_lightgbm(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """Pipeline(ColumnTransformer(OneHotEncoder, passthrough), LGBMClassifier) pickled with
    joblib (skops holds no LightGBM wrapper), the numbers' gaps left for LightGBM."""
    import joblib
    import lightgbm
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    columns = ColumnTransformer(
        [("text", OneHotEncoder(handle_unknown="ignore"), _text_columns(frame))],
        remainder="passthrough")
    pipeline = Pipeline([("columns", columns),
                         ("booster", lightgbm.LGBMClassifier(verbose=-1, random_state=0))])
    path = folder / "pipeline_lightgbm.joblib"
    joblib.dump(pipeline.fit(_objects(frame), label), path)
    return path


def xgboost_model_file(frame: pd.DataFrame, label: pd.Series, folder: Path) -> Path:
    """XGBClassifier(enable_categorical=True) saved as ``xgboost.model``: binary JSON, as
    XGBoost writes any extension but .json, told by its content."""
    import xgboost

    fitted = xgboost.XGBClassifier(enable_categorical=True, random_state=0).fit(frame, label)
    path = folder / "xgboost.model"
    fitted.save_model(path)
    return path


def _skops(fitted: Any, path: Path) -> Path:
    import skops.io

    skops.io.dump(fitted, path)
    return path


def _objects(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as plain text, as a custodian's table holds them (gaps as None)."""
    out = frame.copy()
    for column in _text_columns(frame):
        out[column] = out[column].astype(object).where(out[column].notna(), None)
    return out


KINDS: dict[str, Callable[[pd.DataFrame, pd.Series, Path], Path]] = {
    "pipeline-onehot-rf": pipeline_onehot_forest,
    "pipeline-scaler-rf": pipeline_scaler_forest,
    "pipeline-ordinal-hgb": pipeline_ordinal_hist,
    "hist-gaps": hist_gaps,
    "hist-categories": hist_categories,
    "lightgbm-categories": lightgbm_categories,
    "lightgbm-gaps": lightgbm_gaps,
    "xgboost-gaps": xgboost_gaps,
    "xgboost-categories": xgboost_categories,
    "xgboost-multiclass": xgboost_multiclass,
    "search-pipeline-rf": search_pipeline_forest,
    "pipeline-lightgbm": pipeline_lightgbm,
    "xgboost-model-file": xgboost_model_file,
}
MULTICLASS = {"xgboost-multiclass"}  # the kinds fitted on the table's multiclass label
SMOKE = {"kinds": ["hist-categories"], "tables": ["penguins"], "time_limit": 20.0}


# --- one run --------------------------------------------------------------------------------


def worker(config_path: str) -> int:
    """Fit, save, read, rebuild and score one (kind, table); write the result JSON."""
    cfg = json.loads(Path(config_path).read_text())
    out: dict[str, Any] = {"stage": "start"}
    save = stage_saver(out, cfg["result_path"], log=False)

    try:
        from treeleaks import FeatureSchema, load_model, reconstruct
        from treeleaks.evaluation.metrics import evaluate
        from treeleaks.runtime.errors import TreeleaksError

        frame, label = TABLES[cfg["table"]](multiclass=cfg["kind"] in MULTICLASS)
        out.update(n=len(frame), columns=int(frame.shape[1]),
                   gaps=int(frame.isna().sum().sum()))
        with tempfile.TemporaryDirectory() as folder:
            path = KINDS[cfg["kind"]](frame, label, Path(folder))
            save("fit")
            try:
                model = load_model(path, trust_pickle=True)
            except TreeleaksError as exc:
                out.update(read=False, refusal=str(exc))
                save("refused")
                return 0
        out.update(read=True, n_features=model.n_features,
                   input_map=model.inputs is not None)
        save("read")
        tick = time.perf_counter()
        result = reconstruct(model, time_limit=cfg["time_limit"])
        summary = result.summary()
        out.update(time_s=time.perf_counter() - tick, status=str(summary["status"]),
                   verified=summary.get("verified"), n_rows=len(result.rows))
        save("reconstructed")
        truth = _truth(model, frame, label)
        schema = FeatureSchema.for_model(model).bind(model)
        if len(result.rows):
            score = evaluate(truth, result.rows[truth.columns], schema,
                             label=model.label_name)
            out.update(error=score.error, baseline_error=score.baseline_error,
                       exact_share=score.exact_share, n_matched=score.n_matched)
        save("done")
    except Exception as exc:  # the run's record says what broke; the others go on
        out["exception"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc()
        save("failed")
    return 0


def _truth(model: Any, frame: pd.DataFrame, label: pd.Series) -> pd.DataFrame:
    """The training rows over the model's features (through its input map), with the label
    under the model's label name."""
    rows = frame if model.inputs is None else model.inputs.encode(_objects(frame))
    rows = rows[model.feature_names].astype(np.float64)
    return rows.assign(**{model.label_name: label.map(_class_of(model)).to_numpy()})


def _class_of(model: Any) -> dict[Any, Any]:
    """The table's labels as the model's classes (a booster's file keeps 0 and 1)."""
    return {c: c for c in model.classes} | {int(c): c for c in model.classes
                                            if isinstance(c, int | float)}


# --- the table -------------------------------------------------------------------------------


def print_table(runs: list[dict[str, Any]], title: str) -> None:
    print(title)
    head = ("kind", "table", "read", "rows", "verified", "error", "random", "exact", "time s")
    print("  ".join(f"{h:>20}" if i < 2 else f"{h:>9}" for i, h in enumerate(head)))
    for r in runs:
        read = "✔" if r.get("read") else "✘"
        print("  ".join([f"{r['kind']:>20}", f"{r['table']:>20}", f"{read:>9}",
                         f"{fmt(r.get('n_rows'), 0):>9}", f"{fmt(r.get('verified')):>9}",
                         f"{fmt(r.get('error')):>9}", f"{fmt(r.get('baseline_error')):>9}",
                         f"{fmt(r.get('exact_share'), 2):>9}", f"{fmt(r.get('time_s'), 1):>9}"]))
        why = r.get("refusal") or r.get("exception")
        if why:
            print(f"{'':>22}{why[:150]}")


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point (``--worker`` runs one configuration: the child side)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kinds", default=",".join(KINDS), help="comma-separated file kinds")
    p.add_argument("--tables", default=",".join(TABLES), help="comma-separated tables")
    p.add_argument("--time-limit", type=float, default=60.0, help="reconstruct's, per run (s)")
    p.add_argument("--out", type=Path, default=None,
                   help="results JSON (default bench/results/custodian_files.json)")
    p.add_argument("--smoke", action="store_true", help="one kind, one table, 20 s")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    kinds = SMOKE["kinds"] if args.smoke else [k for k in args.kinds.split(",") if k]
    tables = SMOKE["tables"] if args.smoke else [t for t in args.tables.split(",") if t]
    time_limit = SMOKE["time_limit"] if args.smoke else args.time_limit
    out = args.out or BENCH_DIR / "results" / (
        "custodian_files_smoke.json" if args.smoke else "custodian_files.json")
    meta = {"benchmark": "custodian_files", "issue": 49, "argv": sys.argv,
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "time_limit": time_limit, "environment": environment()}
    runs: list[dict[str, Any]] = []
    for table in tables:
        try:
            TABLES[table]()
        except ImportError as exc:
            print(f"skipping {table}: {exc}", file=sys.stderr)
            continue
        for kind in kinds:
            config = {"kind": kind, "table": table, "time_limit": time_limit}
            run = isolated_record(Path(__file__).resolve(), config, 3 * time_limit + 120)
            runs.append(run)
            print(f"{kind} on {table}: read={run.get('read')} rows={run.get('n_rows')} "
                  f"verified={run.get('verified')} error={fmt(run.get('error'))} "
                  f"{run.get('refusal') or run.get('exception') or ''}"[:200],
                  file=sys.stderr, flush=True)
            write_json(out, {"meta": meta, "runs": runs})
    meta["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    write_json(out, {"meta": meta, "runs": runs})
    print_table(runs, f"custodian files, time limit {time_limit:g} s  ->  {out}")
    if args.smoke and not all(r.get("read") and r.get("n_rows") for r in runs):
        print("smoke: the file was not read or gave no rows", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
