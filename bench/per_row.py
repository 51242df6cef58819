"""Benchmark: the per-row formulation that issue 5 asked to measure beside cell generation.

One CP-SAT model holds every training row: per row, the split literals of the pricing model
(`treeleaks.counts.pricing`), one Boolean per tree node the row may pass through (a node is taken
by exactly one of its children; a child implies its split literal), and per (tree, leaf,
class) the equation "rows of that class in that leaf = the released count". Symmetry is
broken by placing the rows in the first tree's leaves up front. It is a satisfaction model:
any dataset reproducing the counts. The engine does not use it (see docs/engine.md); this
script reproduces the comparison.

    python bench/per_row.py --runs onehot100:100:None,default_credit:100:2 --seeds 3

Per run: build time, solve time, status, and how many rows have the leaf signature of a true
training row (the share of rows recovered up to values no tree pins).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from common import (
    BENCH_DIR,
    DEFAULT_DATA_DIR,
    environment,
    fmt,
    median,
    one_hot_dataset,
    sklearn_dataset,
    write_json,
)
from common import load_dataset as load_shared
from ortools.sat.python import cp_model
from sklearn.ensemble import RandomForestClassifier

from treeleaks import FeatureSchema, from_sklearn
from treeleaks.counts.pricing import _SplitLiterals
from treeleaks.ir.model import ReleasedModel, Tree

N_TREES = 100


def load(name: str):
    if name.startswith("onehot"):
        return one_hot_dataset(int(name[len("onehot"):]))
    if name in ("wine", "cancer", "digits"):
        return sklearn_dataset(name)
    return load_shared(name, DEFAULT_DATA_DIR)


def leaf_literals(cp: cp_model.CpModel, tree: Tree, split: _SplitLiterals, cls: int) -> dict:
    """Node-flow encoding of one row through one tree: ``{leaf: literal}`` over the leaves
    holding rows of ``cls``; subtrees without such a leaf are cut."""
    is_leaf = tree.feature < 0
    holds = np.zeros(len(tree.feature), dtype=bool)
    leaves = np.flatnonzero(is_leaf)
    holds[leaves] = tree.counts[tree.leaf_of_node[leaves], cls] > 0
    internal = list(tree.internal_nodes())
    for node in reversed(internal):
        holds[node] = holds[tree.left[node]] or holds[tree.right[node]]
    taken = {0: cp.new_constant(1)}
    for node in internal:
        if not holds[node]:
            continue
        lit = split.literal(int(tree.feature[node]), float(tree.threshold[node]))
        left, right = int(tree.left[node]), int(tree.right[node])
        if holds[left] and holds[right]:
            taken[left], taken[right] = cp.new_bool_var(""), cp.new_bool_var("")
            cp.add(taken[left] + taken[right] == taken[node])
            cp.add_implication(taken[left], lit)
            cp.add_implication(taken[right], ~lit)
        else:
            child = left if holds[left] else right
            cp.add_implication(taken[node], lit if child == left else ~lit)
            taken[child] = taken[node]
    return {int(tree.leaf_of_node[n]): taken[int(n)] for n in leaves if holds[n]}


def solve_per_row(model: ReleasedModel, schema: FeatureSchema, time_limit: float, seed: int):
    """Build and solve the per-row model; the leaf of every row in every tree, or None."""
    tick = time.perf_counter()
    cp = cp_model.CpModel()
    per_class = model.trees[0].counts.sum(axis=0).astype(int)
    row_class = np.repeat(np.arange(model.n_classes), per_class)
    rows = []
    for cls in row_class:
        split = _SplitLiterals(cp, model, schema)
        rows.append([leaf_literals(cp, tree, split, int(cls)) for tree in model.trees])
    for t, tree in enumerate(model.trees):
        for cls in range(model.n_classes):
            members = np.flatnonzero(row_class == cls)
            for leaf in np.flatnonzero(tree.counts[:, cls] > 0):
                cp.add(sum(rows[r][t][int(leaf)] for r in members) == int(tree.counts[leaf, cls]))
    for cls in range(model.n_classes):  # symmetry: rows fill the first tree's leaves in order
        members = iter(np.flatnonzero(row_class == cls))
        for leaf in np.flatnonzero(model.trees[0].counts[:, cls] > 0):
            for _ in range(int(model.trees[0].counts[leaf, cls])):
                cp.add(rows[next(members)][0][int(leaf)] == 1)
    build_s = time.perf_counter() - tick
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 2
    solver.parameters.random_seed = seed
    tick = time.perf_counter()
    code = solver.solve(cp)
    solve_s = time.perf_counter() - tick
    leaves = None
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        leaves = np.array([[next(leaf for leaf, lit in tree_lits.items()
                                 if solver.boolean_value(lit)) for tree_lits in row]
                           for row in rows])
    return solver.status_name(code), build_s, solve_s, row_class, leaves


def run(name: str, n: int, depth: int | None, seed: int, time_limit: float) -> dict:
    data = load(name)
    train = data.sample(n, seed)
    X, y = train.drop(columns=[data.label]), train[data.label]
    schema = FeatureSchema.from_frame(data.features, data.one_hot_groups or None,
                                      data.at_most_one_groups or None)
    forest = RandomForestClassifier(n_estimators=N_TREES, bootstrap=False, max_depth=depth,
                                    random_state=seed, n_jobs=2).fit(X, y)
    model = from_sklearn(forest, label_name=data.label)
    status, build_s, solve_s, row_class, leaves = solve_per_row(
        model, schema.bind(model), time_limit, seed)
    out = {"dataset": name, "n": n, "depth": depth, "seed": seed, "status": status,
           "build_s": build_s, "solve_s": solve_s, "true_signature_share": None}
    if leaves is not None:
        nodes = forest.apply(X)
        true = Counter(
            (int(c), *(int(model.trees[t].leaf_of_node[nodes[i, t]]) for t in range(N_TREES)))
            for i, c in enumerate(np.searchsorted(forest.classes_, y.to_numpy())))
        found = Counter((int(c), *map(int, row)) for c, row in zip(row_class, leaves))
        out["true_signature_share"] = sum((true & found).values()) / n
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="onehot100:100:None,default_credit:100:2",
                        help="comma-separated dataset:N:depth")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "per_row.json")
    args = parser.parse_args()
    results = []
    for spec in args.runs.split(","):
        name, n, depth = spec.split(":")
        for seed in range(args.seeds):
            result = run(name, int(n), None if depth == "None" else int(depth), seed,
                         args.time_limit)
            results.append(result)
            print(f"{name} N={n} depth={depth} seed={seed}: {result['status']} build "
                  f"{result['build_s']:.1f}s solve {result['solve_s']:.1f}s true signatures "
                  f"{fmt(result['true_signature_share'], 2)}", flush=True)
            write_json(args.out, {"environment": environment(), "runs": results})
    print("\n| run | seeds | solved | build s (median) | solve s (median) |\n|---|---|---|---|---|")
    for spec in args.runs.split(","):
        name, n, depth = spec.split(":")
        mine = [r for r in results if (r["dataset"], str(r["n"]), str(r["depth"])) ==
                (name, n, depth)]
        solved = [r for r in mine if r["status"] in ("OPTIMAL", "FEASIBLE")]
        build = fmt(median(r["build_s"] for r in mine), 1)
        solve = fmt(median(r["solve_s"] for r in mine), 1)
        print(f"| {spec} | {len(mine)} | {len(solved)} | {build} | {solve} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
