"""Benchmark: what treeleaks recovers from a random forest before and after `treeleaks strip`,
beside SACRO-ML's "safe" settings (issue 40).

For every (dataset, seed): split the rows 70/30 (stratified by the seed), fit on the 70%
(a) ``RandomForestClassifier(random_state=seed)`` with scikit-learn's defaults and (c) the
settings SACRO-ML's safemodel rules ask for (``min_samples_leaf=5``, bootstrap on); strip
each (`treeleaks.defences.strip`, the file loaded back and checked), giving (b) and (d).
On each of the four, run the audit's own attack calls (`treeleaks.report.evidence`):
the reconstruction (rows, status, error beside random guessing; a stripped file has no
counts, so it does not apply), singling out checked against the training rows (a stripped
file: the no-counts guesses, leaves deepest first), and the accuracy on the held-out 30%.

Datasets: scikit-learn's ``cancer`` and ``wine`` (raw values) and, when present under
--data-dir, the shared binarized ``compas``, ``adult``, ``default_credit`` (``name:N``
samples N rows by the seed).

    python bench/strip.py --smoke        # wine, 10 trees, 5 s: under a minute, exits 0
    nice -n 10 python bench/strip.py     # every dataset, 1 seed, 30 s per attack
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from common import (
    BENCH_DIR,
    DEFAULT_DATA_DIR,
    SKLEARN_DATASETS,
    environment,
    fmt,
    load_dataset,
    sklearn_dataset,
    write_json,
)

DATASETS = ("cancer", "wine", "digits:500", "compas:300", "adult:300", "default_credit:300")
MODELS = {"default": {}, "safemodel": {"min_samples_leaf": 5, "bootstrap": True}}
TEST_SHARE = 0.3


def dataset(spec: str, seed: int, data_dir: Path) -> Any:
    """The dataset ``spec`` (rows sampled by ``seed`` with ``name:N``); None when absent."""
    name, _, size = spec.partition(":")
    if name in SKLEARN_DATASETS:
        data = sklearn_dataset(name)
    elif (data_dir / f"{name}.csv").exists():
        data = load_dataset(name, data_dir)
    else:
        return None
    if size:
        data.frame = data.frame.sample(int(size), random_state=seed).reset_index(drop=True)
    return data


def attack(model: Any, train: pd.DataFrame, label: str, schema: Any, time_limit: float
           ) -> dict[str, Any]:
    """The audit's reconstruction and singling out (guesses when the counts were removed)
    on ``model``, scored against the training rows."""
    from treeleaks.report import evidence
    from treeleaks.report.collect import attempt
    from treeleaks.report.evidence import AuditInput, Evidence

    model.label_name = label
    inp = AuditInput(model, "", schema, data=train, label=label, total_budget=time_limit)
    ev = Evidence()
    out: dict[str, Any] = {"rows": None, "recon_status": "counts removed", "error": None,
                           "baseline_error": None, "exact_rows": None}
    if model.counts_released:
        recon = attempt("reconstruct", "", lambda: evidence.reconstruction(inp, time_limit, ev,
                                                                        None))
        f = recon.figures
        out.update(rows=f.get("n_rows"), recon_status=str(f.get("status", recon.status)),
                   error=f.get("error"), baseline_error=f.get("baseline_error"),
                   exact_rows=f.get("exact_rows"), recon_why=recon.why)
    f = attempt("single-out", "", lambda: evidence.singling_out(inp, time_limit, ev)
                if model.counts_released else evidence.guessing(inp, ev)).figures
    out.update(singled_out=f.get("rows_singled_out"), candidates=f.get("n_predicates"),
               candidates_right=f.get("predicates_matching_one_row"))
    return out


def run_one(spec: str, seed: int, n_trees: int, time_limit: float, data_dir: Path
            ) -> list[dict[str, Any]] | None:
    import skops.io
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split

    from treeleaks import FeatureSchema
    from treeleaks.defences.strip import strip
    from treeleaks.frontends.sklearn import from_sklearn

    data = dataset(spec, seed, data_dir)
    if data is None:
        return None
    train, test = train_test_split(data.frame, test_size=TEST_SHARE, random_state=seed,
                                   stratify=data.frame[data.label])
    train = train.reset_index(drop=True)
    X, y = train.drop(columns=[data.label]), train[data.label]
    schema = FeatureSchema.from_frame(X, one_hot_groups=data.one_hot_groups or None,
                                      at_most_one_groups=data.at_most_one_groups or None)
    records = []
    for kind, options in MODELS.items():
        forest = RandomForestClassifier(n_trees, random_state=seed, **options).fit(X, y)
        stripped = strip(forest, "skops", X, n_random=1000)
        safe = skops.io.loads(stripped.content,
                              trusted=skops.io.get_untrusted_types(data=stripped.content))
        for variant, estimator, model in (
                (kind, forest, from_sklearn(forest)),
                (f"{kind} stripped", safe, from_sklearn(safe, counts_removed_ok=True))):
            found = attack(model, train, data.label, schema, time_limit)
            accuracy = float(estimator.score(test.drop(columns=[data.label]),
                                             test[data.label]))
            records.append({"dataset": spec, "seed": seed, "model": variant,
                            "n_train": len(train), "accuracy": accuracy, **found})
            print(f"{spec} seed={seed} {variant}: rows={fmt(found['rows'])} "
                  f"({found['recon_status']}) error={fmt(found['error'])} "
                  f"random={fmt(found['baseline_error'])} singled out="
                  f"{fmt(found['singled_out'])} accuracy={accuracy:.3f}", flush=True)
    return records


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--trees", type=int, default=100)
    p.add_argument("--time-limit", type=float, default=30.0)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "strip.json")
    p.add_argument("--smoke", action="store_true")
    args = p.parse_args(argv)
    if args.smoke:
        args.datasets, args.trees, args.time_limit = "wine", 10, 5.0
        args.out = Path(tempfile.gettempdir()) / "strip_smoke.json"
    runs: list[dict[str, Any]] = []
    for spec in args.datasets.split(","):
        for seed in range(args.seeds):
            records = run_one(spec, seed, args.trees, args.time_limit, args.data_dir)
            if records is None:
                print(f"{spec}: data not found under {args.data_dir}; skipped")
                break
            runs += records
    print("\n| dataset | model | training rows | rows reconstructed (status) | exact rows "
          "| error | random | rows singled out | candidates matching one row | test accuracy |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        right = ("-" if r["candidates"] is None else
                 f"{fmt(r['candidates_right'])} of {r['candidates']}")
        print(f"| {r['dataset']} | {r['model']} | {r['n_train']} | {fmt(r['rows'])} "
              f"({r['recon_status']}) | {fmt(r['exact_rows'])} | {fmt(r['error'])} "
              f"| {fmt(r['baseline_error'])} | {fmt(r['singled_out'])} | {right} "
              f"| {r['accuracy']:.3f} |")
    write_json(args.out, {"environment": environment(), "args": {
        k: str(v) for k, v in vars(args).items()}, "runs": runs})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
