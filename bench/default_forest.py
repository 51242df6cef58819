"""Benchmark: the engine on scikit-learn's default forest over raw numerical columns (issue 28).

For every (dataset, seed): fit ``RandomForestClassifier(random_state=seed)`` with every other
default (bootstrap, 100 full-depth trees; ``--forest no-bootstrap`` or ``extra-trees`` fits
those instead, issue 29) on the training table, convert it with
``from_sklearn`` (the model carries each tree's draws), and run ``treeleaks.reconstruct``
with the schema the model alone gives (``FeatureSchema.for_model``) in a fresh process
(``common.isolated_record``: own peak memory; a crash or hang ends that run only). The
result is scored against the truth, beside the error a perfect reconstruction can reach:
every training row filled from the intersection of its own leaves' boxes in the trees that
drew it (`truth_boxes`).

Datasets: ``cancer`` (breast cancer, 569 x 30 raw), ``wine`` (178 x 13), ``digits`` (first
500 rows x 64), whole; ``name:N`` takes N rows sampled by the seed instead, and is how the
shared binarized datasets run (``compas:1000``; skipped with a line when the data is absent);
``mixed:N`` is the synthetic mixed table of ``common.mixed_dataset`` (4 numerical columns, 3
one-hot categorical ones), N rows generated for each seed; ``classifF:N`` is
``make_classification`` with F raw columns and N rows (issue 38's two-class series), generated
for each seed; ``iris`` is scikit-learn's (150 x 4, three classes); ``onehotW:N`` samples N rows of
``common.one_hot_dataset(W)`` (W binary columns in one-hot groups the adversary is not told).

    python bench/default_forest.py --smoke         # wine, seed 0, 20 s; always exits 0
    python bench/default_forest.py --datasets wine,cancer --seeds 1 --time-limit 30
    python bench/default_forest.py --strategy per-row --seeds 3
    python bench/default_forest.py --datasets cancer,iris,classif10:1000 --time-limit 120

Every result, partial or complete, is scored as a multiset by rows recovered
(`treeleaks.evaluation.recovered`: true rows matched one to one with returned rows of their
label that share their leaf in at least 90% of the trees that drew them), beside its matched
error, random rows' and the true rows' own boxes' (filled as the engine fills a box). The
positions rows come back at are not scored: a reconstruction promises a multiset.

See bench/README.md for what is measured.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import sys
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from common import (
    BENCH_DIR,
    DEFAULT_DATA_DIR,
    SKLEARN_DATASETS,
    classification_dataset,
    dataset_info,
    environment,
    fmt,
    isolated_record,
    load_dataset,
    maxrss_mb,
    mean,
    median,
    mixed_dataset,
    one_hot_dataset,
    share,
    sklearn_dataset,
    stage_saver,
    write_json,
)

DATASETS = ("cancer", "wine", "digits")
ONE_HOT = re.compile(r"onehot(\d+)")  # common.one_hot_dataset of that many columns
CLASSIFICATION = re.compile(r"classif(\d+)")  # common.classification_dataset, that many columns
DEFAULT_ROWS = {"digits": 500}  # the scikit-learn tables are used whole, digits its first 500
PINNED = (0.01, 0.05, 0.10)  # a value is pinned within p when its box spans <= p of its range
SOLVED = ("OPTIMAL", "FEASIBLE")
CHECKPOINTS = (10, 30, 60, 120)  # s: whole rows within the counts held by then (issue 29)
# The matched error pairs every reconstructed row with a true row exactly; beyond this many
# rows `evaluate` refuses (memory), and only the row-by-row figures are computed.
MATCHED_MAX_ROWS = 2000
SMOKE = {"datasets": ("wine",), "seeds": 1, "time_limit": 20.0}


# --- data ------------------------------------------------------------------------------------


def parse_spec(spec: str) -> tuple[str, int | None]:
    """``name`` or ``name:N``."""
    name, _, n = spec.partition(":")
    return name, int(n) if n else None


def missing_data(spec: str, data_dir: Path) -> str | None:
    """Why a dataset cannot run here (None when it can)."""
    name, n = parse_spec(spec)
    if name in SKLEARN_DATASETS:
        return None
    if name == "mixed" or ONE_HOT.fullmatch(name) or CLASSIFICATION.fullmatch(name):
        return None if n else f"{spec}: a synthetic table needs a size, e.g. {name}:100"
    if n is None:
        return f"{spec}: a shared dataset needs a size, e.g. {name}:1000"
    try:
        info = dataset_info(data_dir)
    except Exception as exc:  # no datasets.json: the shared data is not on this machine
        return f"{spec}: no shared data ({exc})"
    return None if name in info else f"{spec}: not in {data_dir / 'datasets.json'}"


def training_table(spec: str, seed: int, data_dir: Path) -> tuple[pd.DataFrame, Any, Any]:
    """The training rows, the dataset and the scorer's schema (each column's kind and range
    over the whole table or dataset, with its groups: public domain knowledge)."""
    from treeleaks import FeatureSchema

    name, n = parse_spec(spec)
    if name == "mixed":  # generated at the size asked for, anew for each seed
        data = mixed_dataset(n, seed)
        train = data.frame
    elif match := CLASSIFICATION.fullmatch(name):  # generated at the size asked for
        data = classification_dataset(n, int(match.group(1)), seed)
        train = data.frame
    elif match := ONE_HOT.fullmatch(name):  # N of 5,000 one-hot rows, sampled by the seed
        data = one_hot_dataset(int(match.group(1)))
        train = data.sample(n, seed)
    else:
        data = (sklearn_dataset(name) if name in SKLEARN_DATASETS
                else load_dataset(name, data_dir))
        if name in DEFAULT_ROWS:
            data.frame = data.frame.iloc[:DEFAULT_ROWS[name]]
        train = data.frame.reset_index(drop=True) if n is None else data.sample(n, seed)
    schema = FeatureSchema.from_frame(data.features, data.one_hot_groups or None,
                                      data.at_most_one_groups or None)
    return train, data, schema


# --- the error a perfect reconstruction can reach --------------------------------------------


def tree_draws(tree: Any) -> np.ndarray:
    """How often each training row was drawn for ``tree`` (``draws``, or the older name
    ``multiplicities``)."""
    draws = getattr(tree, "draws", None)
    if draws is None:
        draws = getattr(tree, "multiplicities", None)
    if draws is None:
        raise ValueError("the model carries no draws; the truth boxes need a bootstrap forest "
                         "converted with its random states")
    return np.asarray(draws)


FORESTS = {  # --forest: the estimator fitted, every parameter not named here its default
    "default": "RandomForestClassifier(random_state=seed)",
    "no-bootstrap": "RandomForestClassifier(bootstrap=False, random_state=seed)",
    "extra-trees": "ExtraTreesClassifier(random_state=seed)",
    "safemodel": "RandomForestClassifier(min_samples_leaf=5, random_state=seed)",
}


def fit_forest(kind: str, X: pd.DataFrame, y: pd.Series, seed: int) -> Any:
    """The forest `FORESTS` names, fitted."""
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier

    if kind == "extra-trees":
        return ExtraTreesClassifier(random_state=seed).fit(X, y)
    if kind == "safemodel":  # what SACRO-ML's safemodel rules ask of a random forest
        return RandomForestClassifier(min_samples_leaf=5, random_state=seed).fit(X, y)
    return RandomForestClassifier(bootstrap=kind == "default", random_state=seed).fit(X, y)


def open_ends(thresholds: np.ndarray) -> tuple[float, float]:
    """Where a box open below (above) a feature ends: half a threshold gap past the lowest
    (highest) threshold, the gap being that between the two outermost thresholds on that
    side. One threshold t gives no gap: then max(|t|, 1), the engine's data-free spacing
    (`treeleaks.counts.materialize`), which puts a 0/1 column cut at 0.5 at 0 and 1. A
    feature no tree splits on has no ends (NaN): the model says nothing of it, and the
    engine leaves such a column empty when the schema does not describe it (the scorer
    counts an empty value as wrong, for the engine, the baseline and these boxes alike)."""
    if thresholds.size == 0:
        return np.nan, np.nan
    if thresholds.size == 1:
        gap = max(abs(float(thresholds[0])), 1.0)
        return float(thresholds[0]) - gap / 2, float(thresholds[0]) + gap / 2
    low_gap, high_gap = thresholds[1] - thresholds[0], thresholds[-1] - thresholds[-2]
    return float(thresholds[0] - low_gap / 2), float(thresholds[-1] + high_gap / 2)


def truth_boxes(model: Any, X: np.ndarray,
                binary: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each training row's own box and the row a perfect reconstruction would give for it.

    The box is the intersection of the row's leaves (``lower < x <= upper``) in the trees
    that drew it, each leaf's box that of the path the row takes (a tree fitted on gaps
    reaches a leaf by several, `Tree.apply_nodes`); an open side is closed at
    `open_ends`, and the value is the middle of the closed box. ``X`` holds the model's
    features (a table with gaps encoded through ``model.inputs``). A column the model alone
    calls binary (``binary``, from `FeatureSchema.infer`) takes the value its box admits: 1
    when it admits only 1, else 0.
    Returns ``(lower, upper, filled)``, the first two with their open sides infinite."""
    n_features = model.n_features
    lower, upper = np.full(X.shape, -np.inf), np.full(X.shape, np.inf)
    for tree in model.trees:  # without bootstrap, every tree saw every row
        drew = tree_draws(tree) > 0 if model.bootstrap else np.ones(len(X), dtype=bool)
        box_low, box_high = tree.node_boxes(n_features)
        path = tree.apply_nodes(X[drew])
        lower[drew] = np.maximum(lower[drew], box_low[path])
        upper[drew] = np.minimum(upper[drew], box_high[path])
    ends = np.array([open_ends(th) for th in model.thresholds()]).reshape(-1, 2)
    filled = (np.where(np.isfinite(lower), lower, ends[:, 0])
              + np.where(np.isfinite(upper), upper, ends[:, 1])) / 2
    only_one = (lower >= 0) & (lower < 1) & (upper >= 1)
    filled[:, binary] = only_one[:, binary].astype(float)
    return lower, upper, filled


def pinned_figures(width: np.ndarray, prefix: str = "") -> dict[str, float | None]:
    """Mean width and the shares of values pinned within each of `PINNED` (NaN: ignored)."""
    values = width[np.isfinite(width)]
    out: dict[str, float | None] = {f"{prefix}width_mean": float(values.mean())
                                    if values.size else None}
    for p in PINNED:
        out[f"{prefix}pinned_{round(p * 100)}"] = float((values <= p).mean()) if values.size \
            else None
    return out


def box_widths(lower: np.ndarray, upper: np.ndarray, schema: Any, names: list[str]) -> np.ndarray:
    """Each numerical or ordinal value's box as a share of its column's range (clipped to it;
    NaN for other columns and for columns of a single value)."""
    low, high = (np.array([getattr(schema.features[n], b) for n in names], dtype=float)
                 for b in ("low", "high"))
    kinds = np.array([schema.features[n].kind for n in names])
    span = high - low
    ok = np.isin(kinds, ("numerical", "ordinal")) & np.isfinite(span) & (span > 0)
    width = np.full(lower.shape, np.nan)
    clipped = np.clip(upper, low, high) - np.clip(lower, low, high)
    width[:, ok] = clipped[:, ok] / span[ok]
    return width


def recovered_figures(model: Any, train: pd.DataFrame, rows: pd.DataFrame, schema: Any,
                      label: str, seed: int) -> dict[str, Any]:
    """Rows recovered (`treeleaks.evaluation.recovered`) and the errors beside it."""
    from treeleaks.evaluation.recovered import References, rows_recovered

    score = rows_recovered(model, train, rows, schema, label=label,
                           references=References(seed=seed))
    return {"recovered": score.rows_recovered, "recovered_share": score.recovered_share,
            "recovered_error": score.matched_error, "recovered_random_error": score.random_error,
            "recovered_truth_box_error": score.true_box_error,
            "recovered_optimal": score.optimal}


# --- worker (runs in the child process) ------------------------------------------------------


def worker(config_path: str) -> int:
    """Fit, compute the truth boxes, reconstruct and score one run; write the result JSON."""
    cfg = json.loads(Path(config_path).read_text())
    out: dict[str, Any] = {"stage": "start"}
    save = stage_saver(out, cfg["result_path"])

    try:
        from treeleaks import FeatureSchema, from_sklearn, reconstruct
        from treeleaks.evaluation.metrics import evaluate

        train, data, data_schema = training_table(cfg["dataset"], cfg["seed"],
                                                  Path(cfg["data_dir"]))
        X, y, label, seed = train.drop(columns=[data.label]), train[data.label], data.label, \
            cfg["seed"]
        out.update(n=len(train), n_features=int(X.shape[1]),
                   kinds=dict(Counter(s.kind for s in data_schema.features.values())))
        tick = time.perf_counter()
        forest = fit_forest(cfg.get("forest", "default"), X, y, seed)
        out["fit_s"] = time.perf_counter() - tick
        model = from_sklearn(forest, label_name=label)
        if model.inputs is not None:  # its features are not the table's columns
            raise ValueError(f"{cfg['dataset']}: the forest reads gaps or categories, spelled "
                             "out as features of its own, and this bench scores rows in the "
                             "table's columns; bench/gap_forest.py measures forests on gaps")
        save("fit")

        schema = FeatureSchema.for_model(model)  # the adversary's: what the model alone gives
        binary = np.array([schema.features[n].kind == "binary" for n in model.feature_names])
        tick = time.perf_counter()
        matchable = len(train) <= MATCHED_MAX_ROWS
        lower, upper, filled = truth_boxes(model, X.to_numpy(dtype=float), binary)
        truth_rows = pd.DataFrame(filled, columns=X.columns).assign(**{label: y.to_numpy()})
        if matchable:
            truth = evaluate(train, truth_rows, data_schema, label=label, n_baseline_draws=3,
                             seed=seed)
            out.update(truth_box_error=truth.error, truth_box_exact_share=truth.exact_share,
                       baseline_error=truth.baseline_error)
        else:
            out["matched_errors"] = f"not computed: {len(train):,} rows, over {MATCHED_MAX_ROWS:,}"
        out.update(truth_open_share=float(np.mean(~np.isfinite(lower) | ~np.isfinite(upper))),
                   truth_box_s=time.perf_counter() - tick,
                   **pinned_figures(box_widths(lower, upper, data_schema, list(X.columns)),
                                    "truth_"))
        out["adversary_kinds"] = dict(Counter(s.kind for s in schema.features.values()))
        out["mem_before_mb"] = maxrss_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        save("reconstruct")

        tick = time.perf_counter()
        over_time: list[tuple[float, int]] = []  # (s, whole rows within the counts so far)

        def watch(event: Any) -> None:
            rows = event.detail.get("whole_rows")
            if rows is not None and (not over_time or rows > over_time[-1][1]):
                over_time.append((time.perf_counter() - tick, int(rows)))

        rec = reconstruct(model, schema, time_limit=cfg["time_limit"],
                          strategy=cfg["strategy_requested"], threads=cfg["threads"], seed=seed,
                          progress=watch)
        out["wall_reconstruct_s"] = time.perf_counter() - tick
        out["whole_rows_over_time"] = over_time
        out.update({f"whole_rows_at_{t}s": max([r for s_, r in over_time if s_ <= t],
                                               default=0) for t in CHECKPOINTS})
        out["first_whole_rows_s"] = next((s_ for s_, r in over_time if r > 0), None)
        out["mem_reconstruct_mb"] = maxrss_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        out.update(status=str(rec.status), verified=bool(rec.verified), n_rows=rec.n_rows,
                   time_s=float(rec.time_s), proven_rows=rec.proven_rows,
                   proven_share=rec.proven_rows / len(train), strategy=str(rec.strategy),
                   formulation=str(rec.formulation), message=str(rec.message),
                   n_cells=rec.n_cells, timings={k: float(v) for k, v in rec.timings.items()})
        width = rec.width.to_numpy(dtype=float) if rec.width is not None else np.zeros((0, 0))
        out.update(pinned_figures(width))
        save("evaluate")

        out.update(partial=bool(rec.partial), rows_share=rec.n_rows / len(train))
        if rec.partial and rec.n_rows and matchable:  # matched to the true rows they fit
            score = evaluate(train, rec.rows, data_schema, label=label, n_baseline_draws=0)
            out.update(partial_error=score.error)
        tick = time.perf_counter()
        out.update(recovered_figures(model, train, rec.rows, data_schema, label, seed))
        out["recovered_s"] = time.perf_counter() - tick
        if rec.n_rows != len(train):  # a partial answer's matched error would flatter it
            out["not_scored"] = f"{rec.n_rows} of {len(train)} rows reconstructed"
        elif matchable:
            score = evaluate(train, rec.rows, data_schema, label=label, n_baseline_draws=0)
            out.update(error=score.error, exact_share=score.exact_share,
                       worst_row_error=score.worst_row_error)
        save("done")
    except Exception as exc:  # the parent reports status ERROR
        traceback.print_exc()
        out["exception"] = f"{type(exc).__name__}: {exc}"
        save(f"failed in {out['stage']}")
        return 1
    return 0


# --- parent side -----------------------------------------------------------------------------


def aggregate(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per dataset: medians of time and memory, means of the scores, shares of runs."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault(run["dataset"], []).append(run)
    rows = []
    for dataset, rs in groups.items():
        def avg(key: str, members: list[dict[str, Any]] = rs) -> float | None:
            return mean(r.get(key) for r in members)

        rows.append({
            "dataset": dataset, "N": rs[0].get("n"), "n_features": rs[0].get("n_features"),
            "runs": len(rs), "statuses": dict(Counter(str(r["status"]) for r in rs)),
            "strategies": dict(Counter(str(r.get("strategy")) for r in rs)),
            "formulations": dict(Counter(str(r.get("formulation")) for r in rs)),
            "share_solved": share([r["status"] in SOLVED and r.get("n_rows") == r.get("n")
                                   for r in rs]),
            "share_verified": share([bool(r.get("verified")) for r in rs]),
            "time_s_median": median(r.get("time_s") for r in rs),
            "wall_s_median": median(r.get("wall_s") for r in rs),
            "peak_mem_mb_median": median(r.get("peak_mem_mb") for r in rs),
            "n_rows_median": median(r.get("n_rows") for r in rs),
            "n_scored": sum(r.get("error") is not None for r in rs),
            **{f"{k}_mean": avg(k) for k in (
                "error", "truth_box_error", "baseline_error", "exact_share", "proven_share",
                "rows_share", "partial_error", "first_whole_rows_s", "recovered",
                "recovered_share", "recovered_error", "recovered_random_error",
                "recovered_truth_box_error",
                *(f"whole_rows_at_{t}s" for t in CHECKPOINTS),
                "width_mean", *(f"pinned_{round(p * 100)}" for p in PINNED),
                "truth_width_mean", "truth_pinned_5", "truth_open_share")},
        })
    return rows


def print_table(rows: list[dict[str, Any]], title: str) -> None:
    """One line per dataset (means over seeds, medians for time and memory)."""
    head = ("dataset", "N", "runs", "status", "rows", "verified", "time s", "MB", "error",
            "truth-box err", "baseline", "exact", "proven", "width", "pinned<=5%",
            "partial rows", "partial error", "recovered", "recovered share",
            "matched error (random, truth boxes)", *(f"rows@{t}s" for t in CHECKPOINTS))
    print(title)
    print(" | ".join(head))
    for r in rows:
        status = ",".join(f"{k}" if v == r["runs"] else f"{k}:{v}"
                          for k, v in sorted(r["statuses"].items()))
        print(" | ".join(str(v) for v in (
            r["dataset"], r["N"], r["runs"], status, fmt(r["n_rows_median"], 0),
            fmt(r["share_verified"], 2), fmt(r["time_s_median"], 1),
            fmt(r["peak_mem_mb_median"], 0), fmt(r["error_mean"]), fmt(r["truth_box_error_mean"]),
            fmt(r["baseline_error_mean"]), fmt(r["exact_share_mean"], 2),
            fmt(r["proven_share_mean"], 2), fmt(r["width_mean_mean"]),
            fmt(r["pinned_5_mean"], 2), fmt(r["rows_share_mean"], 2),
            fmt(r["partial_error_mean"]), fmt(r["recovered_mean"], 0),
            fmt(r["recovered_share_mean"], 2),
            f"{fmt(r['recovered_error_mean'])} ({fmt(r['recovered_random_error_mean'])}, "
            f"{fmt(r['recovered_truth_box_error_mean'])})",
            *(fmt(r[f"whole_rows_at_{t}s_mean"], 0) for t in CHECKPOINTS))))


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point (``--worker`` runs one configuration: the child side)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", default=",".join(DATASETS),
                   help="comma-separated: cancer, wine, digits, iris (whole tables; digits its "
                        "first 500 rows), name:N for N rows sampled by the seed (compas:1000), "
                        "or a synthetic table: mixed:N, onehotW:N, classifF:N")
    p.add_argument("--seeds", type=int, default=3, help="number of seeds (0..n-1)")
    p.add_argument("--time-limit", type=float, default=60.0, help="reconstruct's, per run (s)")
    p.add_argument("--strategy", default="auto",
                   help="passed to reconstruct as is (auto, enumerate, generate, per-row, ...)")
    p.add_argument("--forest", choices=tuple(FORESTS), default="default",
                   help="the forest fitted: " + "; ".join(f"{k}: {v}" for k, v in
                                                         FORESTS.items()))
    p.add_argument("--threads", type=int, default=2, help="solver threads per run")
    p.add_argument("--guard", type=float, default=None,
                   help="wall-clock limit per run in s (default 3 * time limit + 120)")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--out", type=Path, default=None,
                   help="results JSON (default bench/results/default_forest.json; smoke: "
                        "default_forest_smoke.json)")
    p.add_argument("--smoke", action="store_true",
                   help="wine, seed 0, 20 s; exits 0 whatever the engine's status")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker)

    if args.smoke:
        specs, seeds, time_limit = SMOKE["datasets"], SMOKE["seeds"], SMOKE["time_limit"]
    else:
        specs = [s.strip() for s in args.datasets.split(",") if s.strip()]
        seeds, time_limit = args.seeds, args.time_limit
    guard = args.guard if args.guard is not None else 3 * time_limit + 120
    out = args.out or BENCH_DIR / "results" / (
        "default_forest_smoke.json" if args.smoke else "default_forest.json")
    meta = {"benchmark": "default_forest", "issue": 28,
            "started": datetime.now(UTC).isoformat(timespec="seconds"), "argv": sys.argv,
            "forest": FORESTS[args.forest] + ", other parameters default",
            "adversary_schema": "FeatureSchema.for_model(model)", "strategy": args.strategy,
            "time_limit": time_limit, "threads": args.threads, "guard_s": guard,
            "smoke": args.smoke, "environment": environment()}
    runs: list[dict[str, Any]] = []
    for spec in specs:
        why = missing_data(spec, args.data_dir)
        if why:
            print(f"skipping {why}", file=sys.stderr)
            continue
        for seed in range(seeds):
            config = {"dataset": spec, "seed": seed, "time_limit": time_limit,
                      "strategy_requested": args.strategy, "threads": args.threads,
                      "forest": args.forest,
                      "data_dir": str(args.data_dir)}
            run = isolated_record(Path(__file__).resolve(), config, guard)
            runs.append(run)
            print(f"{spec} seed={seed}: {run['status']} rows={run.get('n_rows')} "
                  f"verified={run.get('verified')} time={fmt(run.get('time_s'), 1)} s "
                  f"mem={fmt(run['peak_mem_mb'], 0)} MB error={fmt(run.get('error'))} "
                  f"truth-box={fmt(run.get('truth_box_error'))} "
                  f"recovered={fmt(run.get('recovered_share'), 2)} "
                  f"{run.get('exception') or run.get('message') or ''}".rstrip(),
                  file=sys.stderr, flush=True)
            write_json(out, {"meta": meta, "aggregates": aggregate(runs), "runs": runs})
    meta["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    rows = aggregate(runs)
    write_json(out, {"meta": meta, "aggregates": rows, "runs": runs})
    print_table(rows, f"{FORESTS[args.forest]}, strategy {args.strategy}, time limit "
                      f"{time_limit:g} s  ->  {out}")
    if args.smoke and any(r.get("truth_box_error") is None or r.get("recovered") is None
                          for r in runs):
        print("smoke: the benchmark's own figures are missing", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
