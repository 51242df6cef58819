"""Benchmark: the boxes of a forest's cells when its leaves are reached by several paths
(`counts.cells.cell_boxes`, issue 49).

``RandomForestClassifier(n_estimators=100, bootstrap=False, random_state=0)`` on a
synthetic table of N rows (four measurements, three with 15% gaps, a label that reads a
gap and flips 10% of rows, so the trees grow deep): the cells of the training rows (each
row's leaf in every tree) are given their boxes with and without the model's schema,
with each tree's path boxes built anew and cached, three times each; the median is
printed. Run it on an older checkout to compare.

    python bench/path_cells.py              # 2,000 rows
    python bench/path_cells.py --rows 500
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd


def table(n: int, seed: int = 1) -> tuple[pd.DataFrame, np.ndarray]:
    """The measurements with gaps, and the label."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"bill": rng.normal(44, 5, n).round(1),
                          "flipper": rng.normal(200, 14, n).round(0),
                          "mass": rng.normal(4200, 800, n).round(-1),
                          "age": rng.integers(0, 80, n).astype(float)})
    for column in ("bill", "mass", "age"):
        frame.loc[rng.random(n) < 0.15, column] = np.nan
    label = ((frame["bill"].fillna(30) < 43) ^ frame["mass"].isna() ^ (rng.random(n) < 0.1))
    return frame, label.astype(int).to_numpy()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    args = parser.parse_args(argv)
    from sklearn.ensemble import RandomForestClassifier

    from treeleaks import FeatureSchema, from_sklearn
    from treeleaks.counts.cells import cell_boxes

    frame, label = table(args.rows)
    model = from_sklearn(RandomForestClassifier(n_estimators=100, bootstrap=False,
                                                random_state=0).fit(frame, label))
    leaves = model.apply(model.inputs.encode(frame)[list(model.feature_names)]
                         .to_numpy(dtype=float))
    paths = np.mean([int((tree.feature < 0).sum()) for tree in model.trees])
    print(f"{args.rows} rows x {model.n_trees} trees, {model.n_features} features, "
          f"{np.mean([t.n_leaves for t in model.trees]):.0f} leaves and {paths:.0f} paths "
          "per tree")
    for name, schema in (("without schema", None),
                         ("with schema", FeatureSchema.for_model(model).bind(model))):
        for cold in (True, False):  # the per-tree path boxes are cached after a first call
            times = []
            for _ in range(3):
                for tree in model.trees:
                    if cold:
                        tree.__dict__.pop("_path_boxes", None)
                start = time.perf_counter()
                cell_boxes(model, leaves, schema)
                times.append(time.perf_counter() - start)
            print(f"  {name}, path boxes {'built' if cold else 'cached'}: median "
                  f"{statistics.median(times):.3f} s ({', '.join(f'{t:.3f}' for t in times)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
