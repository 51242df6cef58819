"""Benchmark: can breast cancer's row classes be settled before per-row's search (issue 28)?

scikit-learn's default forest on breast cancer (569 rows x 30 raw columns, 2 classes),
with its draws known. `RowLeaves.settle_classes` finds the rows' classes from the trees'
class totals (per tree and class: draws and distinct rows); on breast cancer HiGHS finds
none in 60 s. This script measures, per seed, against the true classes:

- ``plain``: that MIP (what `settle_classes` solves): its LP relaxation (share of rows it
  leaves integral, and integral and right) and the MIP under ``--time-limit``;
- ``allocation``: the same, strengthened per (tree, class) by the exact split of the
  class's rows by draw value among its leaves (a leaf of ``d`` rows and weight ``w`` takes
  ``y_v >= 0`` rows drawn v times, ``sum y_v = d``, ``sum v y_v = w``; per draw value v the
  class's rows drawn v times number the sum over its leaves): every sound count bound a
  leaf's (w, d) gives per draw value is implied by it;
- ``capacity``: rows whose class simple bound propagation fixes from "at most / at least
  this many rows of class c drawn v or more times by tree t" (``min(d, (w-d)//(v-1))`` per
  leaf, at least one when ``w > d(v-1)``);
- ``boxes``: rows one of whose classes geometry excludes: per (row, class), the
  intersection over the trees that drew it of the hull of the class's candidate leaves,
  iterated (a leaf missing it closes).

    python bench/cancer_classes.py --seeds 3 --time-limit 15
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from common import BENCH_DIR, environment, write_json
from scipy.optimize import Bounds, LinearConstraint, milp
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier

from treeleaks import from_sklearn
from treeleaks.counts.row_leaves import RowLeaves


def tree_data(leaves: RowLeaves) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draws ``(T, N)``, each leaf's class, each leaf's total weight (pure leaves)."""
    draws = np.zeros((leaves.leaf_tree.max() + 1, leaves.n_rows), dtype=np.int64)
    draws[leaves.pair_tree, leaves.pair_row] = leaves.pair_draw
    assert ((leaves.weight > 0).sum(axis=1) == 1).all(), "full-depth leaves are pure"
    return draws, leaves.weight.argmax(axis=1), leaves.weight.sum(axis=1)


def class_system(leaves: RowLeaves, allocation: bool) -> tuple[sp.csr_matrix, np.ndarray,
                                                                np.ndarray, np.ndarray]:
    """``lo <= A z <= hi`` over z = (x[k, c] for every row and class, then the allocation
    counts), and each variable's upper bound."""
    draws, leaf_cls, total = tree_data(leaves)
    n, n_cls = leaves.n_rows, leaves.n_classes
    entries: list[tuple[list[int], list[float], float]] = []
    upper = [1.0] * (n * n_cls)
    for k in range(n):
        entries.append(([k * n_cls + c for c in range(n_cls)], [1.0] * n_cls, 1.0))
    for t in range(draws.shape[0]):
        drawn = np.flatnonzero(draws[t])
        for c in range(n_cls):
            mine = np.flatnonzero((leaves.leaf_tree == t) & (leaf_cls == c))
            xs = [int(k) * n_cls + c for k in drawn]
            entries.append((xs, list(draws[t, drawn].astype(float)), float(total[mine].sum())))
            entries.append((xs, [1.0] * len(xs), float(leaves.distinct[mine].sum())))
            if not allocation:
                continue
            fixed = np.zeros(draws.max() + 1)
            by_value: dict[int, list[int]] = {}
            for leaf in mine:
                w, d = int(total[leaf]), int(leaves.distinct[leaf])
                if d == 1:
                    fixed[min(w, draws.max())] += 1
                    continue
                top = min(w - d + 1, int(draws.max()))
                ys = list(range(len(upper), len(upper) + top))
                upper += [float(d)] * top
                entries.append((ys, [1.0] * top, float(d)))
                entries.append((ys, [float(v) for v in range(1, top + 1)], float(w)))
                for v, var in enumerate(ys, start=1):
                    by_value.setdefault(v, []).append(var)
            for v in range(1, int(draws.max()) + 1):
                rows = [int(k) * n_cls + c for k in np.flatnonzero(draws[t] == v)]
                ys = by_value.get(v, [])
                entries.append((rows + ys, [1.0] * len(rows) + [-1.0] * len(ys), fixed[v]))
    r = np.concatenate([np.full(len(cols), i) for i, (cols, _, _) in enumerate(entries)])
    cols = np.concatenate([np.asarray(cols, dtype=np.int64) for cols, _, _ in entries])
    vals = np.concatenate([np.asarray(v, dtype=float) for _, v, _ in entries])
    rhs = np.array([b for _, _, b in entries])
    a = sp.csr_matrix((vals, (r, cols)), shape=(len(entries), len(upper)))
    return a, rhs, rhs, np.array(upper)


def solve(leaves: RowLeaves, truth: np.ndarray, allocation: bool,
          time_limit: float) -> dict[str, Any]:
    """LP relaxation and MIP of `class_system`, scored against ``truth``."""
    a, lo, hi, upper = class_system(leaves, allocation)
    n, n_cls = leaves.n_rows, leaves.n_classes
    out: dict[str, Any] = {"variables": a.shape[1], "rows": a.shape[0]}
    fixed_lo, fixed_hi = np.zeros(a.shape[1]), upper.copy()
    fixed_lo[: n * n_cls] = fixed_hi[: n * n_cls] = np.eye(n_cls)[truth].ravel()
    check = milp(np.zeros(a.shape[1]), constraints=LinearConstraint(a, lo, hi),
                 integrality=np.ones(a.shape[1]), bounds=Bounds(fixed_lo, fixed_hi),
                 options={"time_limit": time_limit})
    out["truth_feasible"] = check.x is not None
    start = time.perf_counter()
    lp = milp(np.zeros(a.shape[1]), constraints=LinearConstraint(a, lo, hi),
              integrality=np.zeros(a.shape[1]), bounds=Bounds(0, upper),
              options={"time_limit": time_limit})
    out["lp_s"] = round(time.perf_counter() - start, 2)
    if lp.x is not None:
        x = lp.x[: n * n_cls].reshape(n, n_cls)
        integral = (np.abs(x - np.round(x)) < 1e-6).all(axis=1)
        right = x.argmax(axis=1) == truth
        out["lp_integral"] = round(float(integral.mean()), 3)
        out["lp_integral_right"] = round(float((integral & right).mean()), 3)
    start = time.perf_counter()
    mip = milp(np.zeros(a.shape[1]), constraints=LinearConstraint(a, lo, hi),
               integrality=np.ones(a.shape[1]), bounds=Bounds(0, upper),
               options={"time_limit": time_limit})
    out["mip_s"] = round(time.perf_counter() - start, 2)
    out["mip_found"] = mip.x is not None
    if mip.x is not None:
        found = mip.x[: n * n_cls].reshape(n, n_cls).argmax(axis=1)
        out["mip_right"] = round(float((found == truth).mean()), 3)
    return out


def capacity(leaves: RowLeaves, truth: np.ndarray) -> dict[str, Any]:
    """Rows fixed by propagating per (tree, class, v) bounds on the class's rows drawn v
    or more times."""
    draws, leaf_cls, total = tree_data(leaves)
    n_trees, top, n_cls = draws.shape[0], int(draws.max()), leaves.n_classes
    lo = np.zeros((n_trees, n_cls, top + 1))
    hi = np.zeros((n_trees, n_cls, top + 1))
    for leaf in range(leaves.leaf_tree.size):
        t, c, w, d = leaves.leaf_tree[leaf], leaf_cls[leaf], total[leaf], leaves.distinct[leaf]
        for v in range(1, top + 1):
            hi[t, c, v] += d if v == 1 else min(d, (w - d) // (v - 1))
            lo[t, c, v] += d if v == 1 else int(w > d * (v - 1))
    allowed = np.ones((leaves.n_rows, n_cls), dtype=bool)
    changed = True
    while changed:
        changed = False
        for t in range(n_trees):
            for v in range(1, top + 1):
                rows = np.flatnonzero(draws[t] >= v)
                open_ = allowed[rows].sum(axis=1) > 1
                for c in range(n_cls):
                    fixed_c = (allowed[rows, c] & ~open_).sum()
                    free = rows[allowed[rows, c] & open_]
                    if not free.size:
                        continue
                    if fixed_c == hi[t, c, v]:
                        allowed[free, c], changed = False, True
                    elif allowed[rows, c].sum() == lo[t, c, v]:
                        allowed[free], changed = False, True
                        allowed[free, c] = True
    one = allowed.sum(axis=1) == 1
    return {"fixed": int(one.sum()),
            "true_kept": bool(allowed[np.arange(leaves.n_rows), truth].all())}


def boxes(leaves: RowLeaves, truth: np.ndarray) -> dict[str, Any]:
    """Per (row, class) boxes from the class's candidate leaves, iterated."""
    n, n_cls, m = leaves.n_rows, leaves.n_classes, leaves.lower.shape[1]
    n_pairs = leaves.pair_row.size
    pp, pl, pc = leaves.place_pair, leaves.place_leaf, leaves.place_cls
    pr = leaves.pair_row
    open_ = np.ones(pp.size, dtype=bool)
    per_row = np.bincount(pr, minlength=n)
    while True:
        before = int(open_.sum())
        has = np.zeros(n_pairs * n_cls, dtype=bool)
        has[pp[open_] * n_cls + pc[open_]] = True
        ok = np.stack([np.bincount(pr, weights=has[c::n_cls], minlength=n)
                       for c in range(n_cls)], axis=1) == per_row[:, None]
        open_ &= ok[pr[pp], pc]
        j = np.flatnonzero(open_)
        key = pp[j] * n_cls + pc[j]
        order = np.argsort(key, kind="stable")
        j, key = j[order], key[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        hull_lo = np.minimum.reduceat(leaves.lower[pl[j]], starts, axis=0)
        hull_hi = np.maximum.reduceat(leaves.upper[pl[j]], starts, axis=0)
        rc = pr[key[starts] // n_cls] * n_cls + key[starts] % n_cls
        order = np.argsort(rc, kind="stable")
        rc, hull_lo, hull_hi = rc[order], hull_lo[order], hull_hi[order]
        first = np.flatnonzero(np.r_[True, rc[1:] != rc[:-1]])
        low = np.full((n * n_cls, m), -np.inf)
        high = np.full((n * n_cls, m), np.inf)
        low[rc[first]] = np.maximum.reduceat(hull_lo, first, axis=0)
        high[rc[first]] = np.minimum.reduceat(hull_hi, first, axis=0)
        j = np.flatnonzero(open_)
        at = pr[pp[j]] * n_cls + pc[j]
        meets = (np.maximum(low[at], leaves.lower[pl[j]])
                 < np.minimum(high[at], leaves.upper[pl[j]])).all(axis=1)
        open_[j[~meets]] = False
        if int(open_.sum()) == before:
            break
    return {"rows_with_a_class_excluded": int((ok.sum(axis=1) < n_cls).sum()),
            "true_kept": bool(ok[np.arange(n), truth].all()),
            "open_placements": int(open_.sum()), "placements": int(pp.size)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=15.0)
    parser.add_argument("--out", default=str(BENCH_DIR / "results" / "cancer_classes.json"))
    args = parser.parse_args()
    x, y = load_breast_cancer(return_X_y=True)
    runs = []
    for seed in range(args.seeds):
        model = from_sklearn(RandomForestClassifier(random_state=seed).fit(x, y))
        leaves = RowLeaves.of(model)
        run = {"seed": seed, "capacity": capacity(leaves, y), "boxes": boxes(leaves, y)}
        for name in ("plain", "allocation"):
            run[name] = solve(leaves, y, name == "allocation", args.time_limit)
        print(run, flush=True)
        runs.append(run)
    write_json(Path(args.out), {"environment": environment(), "time_limit": args.time_limit,
                          "runs": runs})


if __name__ == "__main__":
    main()
