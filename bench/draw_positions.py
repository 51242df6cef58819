"""What pins a bootstrap row to its training position? Breast cancer's default forest
(issue 38; figures in docs/lab/2026-11-26-draw-positions.md).

Three measurements per seed, each against the truth:

1. *Fingerprints alone*: for each training position k, how many true training points x_j
   (with their class) its draws fit, leaf by leaf, with no other row considered (the draw
   search's admission of a row into an empty forest: class weight, distinct rows, what is
   left reachable). One would mean the draws identify a row by themselves.
2. *The draw search's rows*: for each row it places, the training row whose leaves agree
   with its leaves in most of the trees that drew it, and whether that is the row at the
   position it claims.
3. *Positions from the counts, given the true points*: every true point assigned to a
   position, the summed violation of every leaf's per-class weight and distinct rows
   minimised by swapping two positions' points (best swap for a random position, with a
   Metropolis acceptance at ``--temperature``), started from a random assignment and from
   the truth with 20% of the positions shuffled.

    python bench/draw_positions.py --seeds 3 --search-s 30 --swap-s 30
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from common import BENCH_DIR, environment, fmt, median, write_json

OUT = BENCH_DIR / "results" / "draw_positions.json"


def cancer_forest(seed: int) -> tuple[Any, np.ndarray, np.ndarray]:
    """The default forest on breast cancer as treeleaks reads it, with the training data."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    from treeleaks import from_sklearn

    X, y = load_breast_cancer(return_X_y=True)
    return from_sklearn(RandomForestClassifier(random_state=seed).fit(X, y)), X, y


class Forest:
    """The forest's leaves stacked over trees, the draws by position, the true leaves."""

    def __init__(self, model: Any, X: np.ndarray, y: np.ndarray):
        trees = model.trees
        self.draws = np.vstack([t.draws for t in trees]).T.astype(np.int64)  # (N, T)
        offset = np.cumsum([0] + [t.n_leaves for t in trees])[:-1]
        self.leaf = model.apply(X) + offset  # (N, T) global leaf of each true point
        self.weight = np.vstack([t.counts for t in trees]).astype(np.int64)
        self.distinct = np.concatenate([t.n_samples for t in trees]).astype(np.int64)
        self.y = y.astype(np.int64)


def fingerprint_fits(f: Forest) -> np.ndarray:
    """For each position, the number of true points its draws fit alone (see the doc)."""
    n = len(f.y)
    misfits = np.zeros((n, n), dtype=np.int32)  # [point, position]
    for t in range(f.draws.shape[1]):
        leaf = f.leaf[:, t]
        w, d, b = f.weight[leaf], f.distinct[leaf], f.draws[:, t]
        own = w[np.arange(n), f.y]
        after = own[:, None] - b[None, :]
        classes_after = (w > 0).sum(1)[:, None] - (own > 0)[:, None] + (after > 0)
        rows_left = (d - 1)[:, None]
        fits = ((after >= 0) & (rows_left <= w.sum(1)[:, None] - b[None, :])
                & (rows_left >= classes_after))
        misfits += (~fits & (b[None, :] > 0)).astype(np.int32)
    return (misfits == 0).sum(axis=0)


def search_positions(model: Any, f: Forest, seconds: float, seed: int) -> dict[str, float]:
    """The draw search's rows against the training rows (see the doc)."""
    from treeleaks.counts.draw_search import search_drawn_rows

    found = search_drawn_rows(model, time.perf_counter() + seconds, seed=seed)
    offset = np.cumsum([0] + [t.n_leaves for t in model.trees])[:-1]
    drawn = f.draws[found.positions] > 0
    agree = np.zeros((len(found), len(f.y)), dtype=np.int32)
    for t in range(f.draws.shape[1]):
        agree += drawn[:, t, None] & ((found.paths[:, t] + offset[t])[:, None]
                                      == f.leaf[None, :, t])
    best = agree.argmax(axis=1)
    return {"rows": len(found), "best_is_own": float(np.mean(best == found.positions)),
            "agree_best": float(np.median(agree.max(axis=1) / drawn.sum(axis=1))),
            "agree_own": float(np.median(agree[np.arange(len(found)), found.positions]
                                         / drawn.sum(axis=1))),
            "classes_right": float(np.mean(found.cls == f.y[found.positions])),
            "class_of_best": float(np.mean(found.cls == f.y[best]))}


def swap_search(f: Forest, perm: np.ndarray, seconds: float, temperature: float,
                rng: np.random.Generator) -> tuple[int, int, float]:
    """Swaps of positions' points (see the doc): violation at the start and at the end, and
    the share of positions holding their own point at the end."""
    n, n_classes = len(f.y), f.weight.shape[1]
    weight_left, rows_left = f.weight.copy(), f.distinct.copy()

    def take(position: int, point: int, sign: int) -> None:
        b = f.draws[position]
        np.add.at(weight_left, (f.leaf[point], f.y[point]), -sign * b)
        np.add.at(rows_left, f.leaf[point], -sign * (b > 0))

    for position in range(n):
        take(position, perm[position], 1)
    start = int(np.abs(weight_left).sum() + np.abs(rows_left).sum())
    key = f.leaf * n_classes + f.y[:, None]  # (point, tree): its (leaf, class) cell
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        k1 = int(rng.integers(n))
        j1 = perm[k1]
        flat = weight_left.reshape(-1)
        moved = f.draws - f.draws[k1]  # position k2's draws at j1's leaves, minus k1's
        a, b = key[j1][None, :], key[perm]
        delta = (np.abs(flat[a] - moved) - np.abs(flat[a])
                 + np.abs(flat[b] + moved) - np.abs(flat[b])) * (a != b)
        seen = (f.draws > 0).astype(np.int64) - (f.draws[k1] > 0)
        la, lb = f.leaf[j1][None, :], f.leaf[perm]
        delta += (np.abs(rows_left[la] - seen) - np.abs(rows_left[la])
                  + np.abs(rows_left[lb] + seen) - np.abs(rows_left[lb])) * (la != lb)
        total = delta.sum(axis=1) + rng.random(n) * 1e-3
        total[k1] = np.inf
        k2 = int(np.argmin(total))
        if total[k2] < 0 or rng.random() < np.exp(-total[k2] / temperature):
            j2 = perm[k2]
            take(k1, j1, -1), take(k2, j2, -1), take(k1, j2, 1), take(k2, j1, 1)
            perm[k1], perm[k2] = j2, j1
    end = int(np.abs(weight_left).sum() + np.abs(rows_left).sum())
    return start, end, float(np.mean(perm == np.arange(n)))


def measure(seed: int, search_s: float, swap_s: float, temperature: float) -> dict[str, Any]:
    model, X, y = cancer_forest(seed)
    f = Forest(model, X, y)
    fits = fingerprint_fits(f)
    record: dict[str, Any] = {"seed": seed, "fits_median": float(np.median(fits)),
                              "fits_unique": float(np.mean(fits == 1))}
    record.update({f"search_{k}": v for k, v in
                   search_positions(model, f, search_s, seed).items()})
    rng = np.random.default_rng(seed)
    n = len(y)
    for name, shuffled in (("random", n), ("near", n // 5)):
        perm = np.arange(n)
        some = rng.choice(n, shuffled, replace=False)
        perm[some] = rng.permutation(some)
        start_right = float(np.mean(perm == np.arange(n)))
        start, end, right = swap_search(f, perm, swap_s, temperature, rng)
        record.update({f"swap_{name}_start_right": start_right,
                       f"swap_{name}_violation": [start, end], f"swap_{name}_right": right})
    return record


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--search-s", type=float, default=30.0)
    parser.add_argument("--swap-s", type=float, default=30.0)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    runs = [measure(seed, args.search_s, args.swap_s, args.temperature)
            for seed in range(args.seeds)]
    columns = ["fits_median", "fits_unique", "search_rows", "search_best_is_own",
               "search_agree_best", "search_agree_own", "search_classes_right",
               "search_class_of_best", "swap_random_right", "swap_near_start_right",
               "swap_near_right"]
    print("breast cancer, default forest (569 rows); medians over seeds")
    for column in columns:
        print(f"  {column:24} {fmt(median(run[column] for run in runs))}")
    arguments = {**vars(args), "out": str(args.out)}
    write_json(args.out, {"environment": environment(), "arguments": arguments,
                          "runs": runs})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
