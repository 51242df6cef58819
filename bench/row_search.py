"""Benchmark: partial datasets by the per-row search (`counts/row_search.py`, issue 29 step 3).

For every (dataset, forest, seed): fit the forest on the training table (``--forest
no-bootstrap``: ``RandomForestClassifier(bootstrap=False)``; ``extra-trees``:
``ExtraTreesClassifier()``; every other parameter default), convert it with ``from_sklearn``
and run ``search_rows`` for the time limit, in this process, one run after the other. Recorded:
the rows within every count held at 10/30/60/120 s (when the limit reaches them), when the
first came, and a check of the final rows through every tree (`verify.verify_within`: a point
of each row's box routed through the model, no leaf above its count).

Datasets as in ``bench/default_forest.py``: ``cancer`` (569 x 30 raw), ``wine`` (178 x 13),
``digits`` (first 500 rows x 64), ``onehotW:N`` (N rows of ``common.one_hot_dataset(W)``).

    python bench/row_search.py --datasets cancer --forests no-bootstrap,extra-trees --seeds 3
    python bench/row_search.py --datasets wine --seeds 1 --time-limit 10
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from common import BENCH_DIR, DEFAULT_DATA_DIR, environment, median, write_json
from default_forest import CHECKPOINTS, FORESTS, fit_forest, training_table


def one_run(spec: str, forest_kind: str, seed: int, time_limit: float,
            data_dir: Path) -> dict[str, Any]:
    """Fit, search, check; the figures of one run."""
    from treeleaks import from_sklearn
    from treeleaks.counts.row_search import row_points, search_rows
    from treeleaks.counts.verify import verify_within

    train, data, _ = training_table(spec, seed, data_dir)
    X, y = train.drop(columns=[data.label]), train[data.label]
    model = from_sklearn(fit_forest(forest_kind, X, y, seed), label_name=data.label)
    found: list[tuple[float, int]] = []
    start = time.monotonic()
    leaves, cls = search_rows(model, start + time_limit, seed=seed,
                              on_better=lambda _, c: found.append((time.monotonic() - start,
                                                                   len(c))))
    elapsed = time.monotonic() - start
    points = row_points(model, leaves)
    rows = pd.DataFrame(points, columns=list(model.feature_names)).assign(
        **{model.label_name: np.asarray(model.classes, dtype=object)[cls]})
    certificate = verify_within(model, rows)
    at = {f"rows_at_{s}s": max([n for t, n in found if t <= s], default=0)
          for s in CHECKPOINTS if s <= time_limit}
    return {"dataset": spec, "forest": forest_kind, "seed": seed, "n": len(train),
            "rows": len(cls), "share": len(cls) / len(train), "elapsed_s": elapsed,
            "first_s": found[0][0] if found else None, **at,
            "verified": certificate.verified, "n_counts_wrong": certificate.n_counts_wrong}


def print_table(runs: list[dict[str, Any]]) -> None:
    stamps = [k for k in runs[0] if k.startswith("rows_at_")] if runs else []
    print(f"{'dataset':<14}{'forest':<14}{'seed':>5}{'N':>6}"
          + "".join(f"{k[8:]:>8}" for k in stamps) + f"{'share':>8}{'first s':>9}  verified")
    for r in runs:
        print(f"{r['dataset']:<14}{r['forest']:<14}{r['seed']:>5}{r['n']:>6}"
              + "".join(f"{r[k]:>8}" for k in stamps)
              + f"{r['share']:>8.1%}{r['first_s']:>9.1f}  {r['verified']}")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["dataset"], r["forest"]), []).append(r)
    for (spec, kind), rs in groups.items():
        print(f"median {spec} {kind}: {median([r['rows'] for r in rs]):g} rows "
              f"({median([r['share'] for r in rs]):.1%}), per seed "
              f"{', '.join(str(r['rows']) for r in rs)}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default="cancer")
    p.add_argument("--forests", default="no-bootstrap,extra-trees")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--time-limit", type=float, default=120.0)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "row_search.json")
    args = p.parse_args(argv)
    runs = []
    meta = {"forests": {k: FORESTS[k] for k in args.forests.split(",")},
            "time_limit": args.time_limit, "environment": environment()}
    for spec in args.datasets.split(","):
        for kind in args.forests.split(","):
            for seed in range(args.seeds):
                runs.append(one_run(spec, kind, seed, args.time_limit, args.data_dir))
                print(f"{spec} {kind} seed {seed}: {runs[-1]['rows']}/{runs[-1]['n']} "
                      f"in {runs[-1]['elapsed_s']:.0f} s", file=sys.stderr, flush=True)
                write_json(args.out, {**meta, "runs": runs})
    print_table(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
