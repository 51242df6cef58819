"""Benchmark: a HistGradientBoosting file's bin edges turned into training values (issue 49).

For every table: fit ``HistGradientBoostingClassifier`` with every default, save it with
skops and read it back (`treeleaks.io.load_model`), which reads each column's bin edges into
its training values (`treeleaks.frontends.bin_values`). Per column with at most 255 distinct
training values (the others are binned by quantiles, which give no values):

- the reading: every value back exactly, or up to one shift of the whole set;
- on the true rows' own boxes (each row's intersection of its leaves, the finest the model
  says), the fill as the engine makes it (`counts.materialize.rows_in_boxes`) at the box's
  middle and on the revealed values: share of values exact, and of those whose box holds a
  single revealed value; error as `evaluation.metrics` scores it (multiset matching);
- with ``--time-limit`` > 0, the reconstruction itself (`treeleaks.reconstruct`) with the
  revealed values and without (the box fill), scored the same way.

Tables: scikit-learn's ``wine`` (178 rows) and ``cancer`` (569, every column past 255
values: nothing revealed; ``cancer:200``, 200 rows sampled), palmerpenguins' ``penguins``
and vega_datasets' ``cars`` (numerical columns, rows with a gap dropped).

    python bench/bin_edges.py --smoke          # wine, true boxes only: seconds
    nice python bench/bin_edges.py --time-limit 60
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from common import BENCH_DIR, environment, fmt, sklearn_dataset, write_json

TABLES = ("wine", "cancer", "cancer:200", "penguins", "cars")
LABEL = "label"


def table(spec: str) -> pd.DataFrame:
    """The numerical columns of ``spec`` and its label ``LABEL``, rows with a gap dropped."""
    name, _, size = spec.partition(":")
    if name in ("wine", "cancer"):
        frame = sklearn_dataset(name, LABEL).frame
    elif name == "penguins":
        import palmerpenguins

        raw = palmerpenguins.load_penguins()
        frame = raw.select_dtypes("number").assign(**{LABEL: raw["species"].astype(str)})
    elif name == "cars":
        from vega_datasets import local_data

        raw = local_data.cars()
        frame = raw.select_dtypes("number").assign(
            Year=raw["Year"].dt.year, **{LABEL: raw["Origin"].astype(str)})
    else:
        raise KeyError(f"unknown table {name!r}; have {', '.join(TABLES)}")
    frame = frame.dropna().reset_index(drop=True)
    features = [c for c in frame.columns if c != LABEL]
    frame[features] = frame[features].astype(np.float64)
    return frame.sample(int(size), random_state=0).reset_index(drop=True) if size else frame


def true_boxes(model: Any, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's box: the intersection of the boxes of the paths it takes (of the leaves
    it falls in, but for a leaf reached by several paths, `Tree.apply_nodes`)."""
    lower = np.full(X.shape, -np.inf)
    upper = np.full(X.shape, np.inf)
    for tree in model.trees:
        low, high = tree.node_boxes(model.n_features)
        path = tree.apply_nodes(X)
        lower = np.maximum(lower, low[path])
        upper = np.minimum(upper, high[path])
    return lower, upper


def fills(model: Any, schema: Any, X: np.ndarray, labels: np.ndarray
          ) -> dict[str, np.ndarray]:
    """The engine's fill of every true row's own box (`counts.materialize.rows_in_boxes`,
    what the row-by-row attacks return): at its middle and on the revealed values, and how
    many revealed values each box holds per column."""
    from treeleaks.counts.materialize import rows_in_boxes

    lower, upper = true_boxes(model, X)
    cls, unproven = model.class_index(labels), np.zeros(len(X), dtype=bool)
    found, out = model.revealed, {}
    for name, revealed in (("middle", {}), ("revealed", found)):
        model.revealed = revealed
        rows = rows_in_boxes(model, schema, lower, upper, cls, unproven)["rows"]
        out[name] = rows[list(model.feature_names)].to_numpy()
    model.revealed = found
    out["oracle"] = box_medians(X, lower, upper)
    held = np.zeros(X.shape, dtype=np.int64)
    for j, known in found.items():
        held[:, j] = (np.searchsorted(known.values, upper[:, j], side="right")
                      - np.searchsorted(known.values, lower[:, j], side="right"))
    return {**out, "held": held}


def box_medians(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """A floor no fill can beat that gives one value per box: each row's value is the median
    of the true values of the rows whose box, in that column, is its own. It reads the
    training rows, which no attack holds; it bounds every rule that picks a value from what
    the file says of a box (its bounds, the revealed values inside it)."""
    out = np.empty_like(X)
    for j in range(X.shape[1]):
        keys = np.stack([lower[:, j], upper[:, j]], axis=1)
        _, group = np.unique(keys, axis=0, return_inverse=True)
        for g in np.unique(group):
            rows = group == g
            out[rows, j] = np.median(X[rows, j])
    return out


def scores(truth: pd.DataFrame, rows: pd.DataFrame, schema: Any) -> pd.DataFrame:
    from treeleaks.evaluation.metrics import column_scores

    return column_scores(truth, rows, schema, LABEL)


def run_one(spec: str, time_limit: float) -> dict[str, Any]:
    """One table's reading, fills and (with a time limit) reconstructions."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    import treeleaks
    from treeleaks import FeatureSchema
    from treeleaks.frontends.bin_values import midpoints, read_edges
    from treeleaks.io import load_model, save_model

    frame = table(spec)
    X = frame.drop(columns=[LABEL])
    estimator = HistGradientBoostingClassifier(random_state=0).fit(X, frame[LABEL])
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        model = load_model(save_model(estimator, Path(folder) / "hgb.skops"))
        read_s = time.perf_counter() - started
    schema = FeatureSchema.from_frame(X)
    filled = fills(model, schema, X.to_numpy(), frame[LABEL].to_numpy())
    truth = frame
    as_rows = {name: pd.DataFrame(filled[name], columns=X.columns).assign(
        **{LABEL: frame[LABEL]}) for name in ("middle", "revealed", "oracle")}
    on_boxes = {name: scores(truth, rows, schema) for name, rows in as_rows.items()}
    recon: dict[str, pd.DataFrame] = {}
    recon_info: dict[str, Any] = {}
    found = model.revealed
    if time_limit > 0:
        for name, revealed in (("revealed", found), ("middle", {})):
            model.revealed = revealed
            result = treeleaks.reconstruct(model, schema, time_limit=time_limit)
            recon_info[name] = {"status": str(result.status), "rows": len(result.rows),
                                "verified": bool(result.summary().get("verified"))}
            if len(result.rows):
                recon[name] = scores(truth, result.rows, schema)
        model.revealed = found
    columns = []
    for j, name in enumerate(X.columns):
        distinct = np.unique(X[name].to_numpy())
        known = model.revealed.get(j)
        smallest = read_edges(midpoints(distinct), choice="smallest").values \
            if len(distinct) <= 255 else None
        single = filled["held"][:, j] == 1
        record = {
            "column": name, "distinct": len(distinct),
            "reading": "quantiles" if known is None else "exact" if known.pinned else "shift",
            "values_right": None if known is None else bool(
                np.array_equal(known.values, distinct)),
            "smallest_rule_right": None if smallest is None else bool(
                np.array_equal(smallest, distinct)),
            "single_share": float(single.mean()),
            "held_mean": float(filled["held"][:, j].mean()),
            "single_exact": float(np.mean(filled["revealed"][single, j]
                                          == X[name].to_numpy()[single])) if single.any()
            else None,
        }
        record["box_oracle_error"] = float(on_boxes["oracle"].loc[name, "error"])
        for fill in ("middle", "revealed"):
            record[f"box_{fill}_exact"] = float(on_boxes[fill].loc[name, "exact"])
            record[f"box_{fill}_error"] = float(on_boxes[fill].loc[name, "error"])
            if fill in recon:
                record[f"recon_{fill}_exact"] = float(recon[fill].loc[name, "exact"])
                record[f"recon_{fill}_error"] = float(recon[fill].loc[name, "error"])
        columns.append(record)
    return {"table": spec, "rows": len(frame), "features": X.shape[1],
            "trees": len(model.trees), "read_s": read_s, "reconstructions": recon_info,
            "columns": columns}


def _ratio(after: Any, before: Any) -> str:
    return "-" if after is None or before is None or not before else fmt(after / before)


def report(runs: list[dict[str, Any]]) -> None:
    """Per table, the revealed columns' figures, pooled; then every column."""
    print("\n| table | rows | columns ≤255 values (of all) | read exactly | up to a shift | "
          "values right | box-middle error | revealed error | ratio | floor (true medians) "
          "| floor ratio | single-value boxes "
          "exact | recon. middle error | recon. revealed error | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        cols = [c for c in run["columns"] if c["reading"] != "quantiles"]
        if not cols:
            print(f"| {run['table']} | {run['rows']} | 0 (of {run['features']}) | - | - | - "
                  "| - | - | - | - | - | - | - | - | - |")
            continue
        def pooled(key: str, cols: list[dict[str, Any]] = cols) -> float | None:
            values = [c[key] for c in cols if c.get(key) is not None]
            return float(np.mean(values)) if values else None

        singles = [c["single_exact"] for c in cols if c["single_exact"] is not None]
        print(f"| {run['table']} | {run['rows']} | {len(cols)} (of {run['features']}) "
              f"| {sum(c['reading'] == 'exact' for c in cols)} "
              f"| {sum(c['reading'] == 'shift' for c in cols)} "
              f"| {sum(bool(c['values_right']) for c in cols)} "
              f"(simplest-smallest rule: {sum(bool(c['smallest_rule_right']) for c in cols)}) "
              f"| {fmt(pooled('box_middle_error'))} | {fmt(pooled('box_revealed_error'))} "
              f"| {_ratio(pooled('box_revealed_error'), pooled('box_middle_error'))} "
              f"| {fmt(pooled('box_oracle_error'))} "
              f"| {_ratio(pooled('box_oracle_error'), pooled('box_middle_error'))} "
              f"| {fmt(min(singles) if singles else None)} "
              f"| {fmt(pooled('recon_middle_error'))} | {fmt(pooled('recon_revealed_error'))} "
              f"| {_ratio(pooled('recon_revealed_error'), pooled('recon_middle_error'))} |")
    print("\n| table | column | distinct | reading | values per box | boxes with one value "
          "| exact: middle → revealed | error: middle → revealed |")
    print("|---|---|---|---|---|---|---|---|")
    for run in runs:
        for c in run["columns"]:
            if c["reading"] == "quantiles":
                continue
            print(f"| {run['table']} | {c['column']} | {c['distinct']} | {c['reading']} "
                  f"| {fmt(c['held_mean'])} | {fmt(c['single_share'])} "
                  f"| {fmt(c['box_middle_exact'])} → "
                  f"{fmt(c['box_revealed_exact'])} | {fmt(c['box_middle_error'])} → "
                  f"{fmt(c['box_revealed_error'])} |")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", default=",".join(TABLES))
    p.add_argument("--time-limit", type=float, default=0.0,
                   help="seconds per reconstruction; 0: the true boxes only")
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "bin_edges.json")
    p.add_argument("--smoke", action="store_true")
    args = p.parse_args(argv)
    if args.smoke:
        args.tables, args.time_limit = "wine", 0.0
        args.out = Path(tempfile.gettempdir()) / "bin_edges_smoke.json"
    warnings.simplefilter("ignore")
    runs = [run_one(spec, args.time_limit) for spec in args.tables.split(",")]
    report(runs)
    write_json(args.out, {"environment": environment(), "args": {
        k: str(v) for k, v in vars(args).items()}, "runs": runs})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
