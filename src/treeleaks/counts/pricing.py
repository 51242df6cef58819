"""Search for one feature vector through all trees: the pricing problem of cell generation.

Given a weight for every (tree, leaf) of one class, find the point of the feature space
(within the schema) whose leaves have the least total weight, among points that fall in a
leaf holding rows of that class in every tree. The point's leaves name a cell of the
trees' common refinement, so this finds the best cell without listing the others.

The model is the usual one for optimising over a tree ensemble: one Boolean per leaf
(exactly one per tree), one Boolean ``x <= threshold`` per distinct split of each feature
(ordered along the feature), and each leaf implying the split literals on its path. The
schema adds its ranges (splits outside a column's range are fixed) and its one-hot and
at-most-one groups. OR-Tools CP-SAT solves it; the model is built once per class and only
its objective changes between calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.runtime.clock import seconds_until

_SCALE = 1_000_000_000  # weights become integers: floor(w * _SCALE)


@dataclass
class PricedCell:
    """A point found by pricing: its leaf in every tree and its exact total weight."""

    leaves: np.ndarray
    weight: float


class Pricer:
    """Reusable CP-SAT model of "a point of class ``cls`` through every tree" (through any
    leaf with ``every_leaf``: noisy counts rule no leaf out for a class)."""

    def __init__(self, model: ReleasedModel, schema: FeatureSchema, cls: int,
                 every_leaf: bool = False) -> None:
        self.n_trees = model.n_trees
        self.cp = cp_model.CpModel()
        split = _SplitLiterals(self.cp, model, schema)
        self.leaf_vars: list[np.ndarray] = []  # per tree: leaf index -> var (or None)
        self.leaf_ids: list[np.ndarray] = []  # per tree: allowed leaf indices
        self.feasible = True
        for tree in model.trees:
            allowed = (np.arange(tree.n_leaves) if every_leaf
                       else np.flatnonzero(tree.holds()[:, cls]))
            if not allowed.size:
                self.feasible = False
            leaf_nodes = np.flatnonzero(tree.feature < 0)
            paths = _paths(tree)
            vars_ = []
            for leaf in allowed:
                y = self.cp.new_bool_var("")
                nodes = leaf_nodes[tree.leaf_of_node[leaf_nodes] == leaf]
                # a leaf reached by several paths (`Tree.aliased`) holds a point on one
                ways = [y] if nodes.size == 1 else [self.cp.new_bool_var("") for _ in nodes]
                if nodes.size > 1:
                    self.cp.add_bool_or([~y, *ways])
                    for way in ways:
                        self.cp.add_implication(way, y)
                for way, end in zip(ways, nodes):
                    for node, go_left in paths[int(end)]:
                        lit = split.literal(int(tree.feature[node]),
                                            float(tree.threshold[node]))
                        self.cp.add_implication(way, lit if go_left else ~lit)
                vars_.append(y)
            self.cp.add_exactly_one(vars_)
            self.leaf_vars.append(np.array(vars_, dtype=object))
            self.leaf_ids.append(allowed)

    def best(
        self, weights: list[np.ndarray], deadline: float, seed: int = 0,
        keep: int = 20, cutoff: float | None = None, exclude: list[np.ndarray] = (),
    ) -> tuple[list[PricedCell], float, bool]:
        """Points with the least total weight (``weights[t][leaf]``): up to ``keep`` of those
        found, a sound lower bound on the least total weight over all points, and whether
        the search finished (the bound is then the optimum). With ``cutoff``, only points
        lighter than it are sought and the search stops once ``keep`` are found, which is
        far quicker than proving the optimum. Each of ``exclude`` (a leaf per tree) rules
        out the one cell lying in exactly those leaves. The search stops at ``deadline``
        (``time.perf_counter()``)."""
        if not self.feasible:
            return [], np.inf, True
        seconds = seconds_until(deadline, 0.01)
        terms, coefs = [], []
        for t in range(self.n_trees):
            w = weights[t][self.leaf_ids[t]]
            terms.extend(self.leaf_vars[t])
            coefs.extend(np.floor(w * _SCALE).astype(np.int64).tolist())
        objective = cp_model.LinearExpr.weighted_sum(terms, coefs)
        problem = self.cp.clone()
        problem.minimize(objective)
        # Flooring loses less than one unit per tree, so a point whose floored sum stays
        # ``n_trees`` units under the scaled cutoff truly weighs less than the cutoff.
        scaled_cutoff = None if cutoff is None else int(np.ceil(cutoff * _SCALE))
        if scaled_cutoff is not None:
            problem.add(objective <= scaled_cutoff - 1 - self.n_trees)
        for leaves in exclude:
            problem.add_bool_or([~self._var(t, int(leaf)) for t, leaf in enumerate(leaves)])
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = seconds
        # One worker: pricing is short, and a single CP-SAT worker is deterministic.
        solver.parameters.num_workers = 1
        solver.parameters.catch_sigint_signal = False  # Ctrl-C must reach the CLI
        solver.parameters.random_seed = int(seed) % 2**31
        # Presolve, probing and the LP relaxation do not pay off on these implication-only
        # models. Figures: docs/lab/2026-11-28-constants.md#counts-pricing
        solver.parameters.cp_model_presolve = False
        solver.parameters.cp_model_probing_level = 0
        solver.parameters.linearization_level = 0
        collector = _Collector(self, weights, keep, stop_early=cutoff is not None)
        code = solver.solve(problem, collector)
        if code == cp_model.INFEASIBLE:
            # every point's floored sum, a lower bound on its true weight, is this high
            floor = np.inf if scaled_cutoff is None else (scaled_cutoff - self.n_trees) / _SCALE
            return [], floor, True
        if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return [], -np.inf, False
        # floor(w * S) <= w * S, so the bound on the scaled objective bounds the true one.
        bound = solver.best_objective_bound / _SCALE
        return collector.found, bound, code == cp_model.OPTIMAL


    def _var(self, t: int, leaf: int):
        return self.leaf_vars[t][int(np.searchsorted(self.leaf_ids[t], leaf))]


class PricingTeam:
    """One `Pricer` per class, run side by side.

    A cell of class c lies only in (tree, leaf, c) counts, so the classes' pricing problems
    share nothing and can be solved at once; CP-SAT releases the GIL while it searches, so
    threads give a real speed-up. Results come back in class order, so a run is as
    deterministic with several workers as with one.
    """

    def __init__(
        self, model: ReleasedModel, schema: FeatureSchema, workers: int = 1,
        every_leaf: bool = False,
    ) -> None:
        self.pricers = [Pricer(model, schema, c, every_leaf) for c in range(model.n_classes)]
        self.workers = max(1, min(int(workers), len(self.pricers)))
        self._threads: ThreadPoolExecutor | None = None  # started at the first call

    def __len__(self) -> int:
        return len(self.pricers)

    def __enter__(self) -> PricingTeam:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker threads (kept between calls: starting threads for each call cost
        5 ms per thread while CP-SAT held the cores)."""
        if self._threads is not None:
            self._threads.shutdown()
            self._threads = None

    def best_each(
        self,
        weights: Callable[[int], list[np.ndarray]],
        deadline: float,
        exclude: Callable[[int], list[np.ndarray]],
        skip: Collection[int] = (),
        **options,
    ) -> list[tuple[list[PricedCell], float, bool] | None]:
        """`Pricer.best` for every class not in ``skip`` (``weights(c)``, ``exclude(c)``, the
        same ``options``), concurrently; None for a class skipped or whose turn came after
        ``deadline``."""

        def price(c: int, pricer: Pricer) -> tuple[list[PricedCell], float, bool] | None:
            if c in skip or time.perf_counter() >= deadline:
                return None
            return pricer.best(weights(c), deadline, exclude=exclude(c), **options)

        if self.workers == 1:
            return [price(c, pricer) for c, pricer in enumerate(self.pricers)]
        if self._threads is None:
            self._threads = ThreadPoolExecutor(self.workers)
        return list(self._threads.map(price, range(len(self.pricers)), self.pricers))


class _Collector(cp_model.CpSolverSolutionCallback):
    """Solution callback keeping the last ``keep`` leaf vectors CP-SAT passes through."""

    def __init__(
        self, pricer: Pricer, weights: list[np.ndarray], keep: int, stop_early: bool
    ) -> None:
        super().__init__()
        self.pricer, self.weights, self.keep, self.stop_early = pricer, weights, keep, stop_early
        self.found: list[PricedCell] = []

    def on_solution_callback(self) -> None:
        p = self.pricer
        leaves = np.array([
            p.leaf_ids[t][next(i for i, y in enumerate(p.leaf_vars[t]) if self.boolean_value(y))]
            for t in range(p.n_trees)
        ])
        weight = float(sum(self.weights[t][leaves[t]] for t in range(p.n_trees)))
        self.found.append(PricedCell(leaves, weight))
        if len(self.found) > self.keep:
            self.found.pop(0)
        if self.stop_early and len(self.found) >= self.keep:
            self.stop_search()


class _SplitLiterals:
    """The literal ``x[f] <= threshold`` for each distinct split, ordered along each feature
    and fixed where the schema's range decides it."""

    def __init__(self, cp, model: ReleasedModel, schema: FeatureSchema) -> None:
        self.cp = cp
        self.kinds = schema.kind_array()
        self.low, self.high = schema.range_arrays()
        self.literals: dict[tuple[int, float], object] = {}
        self.binary: dict[int, object] = {}
        for f, thresholds in enumerate(model.thresholds()):
            if not thresholds.size:
                continue
            if self.kinds[f] == "binary":
                self.binary[f] = cp.new_bool_var(f"x{f}")
                continue
            keys = np.unique(self._key(f, thresholds))
            previous = None
            for key in keys:
                lit = self._fixed(f, key)
                if lit is None:
                    lit = cp.new_bool_var("")
                self.literals[(f, float(key))] = lit
                if previous is not None:
                    cp.add_implication(previous, lit)
                previous = lit
        for cols, exactly_one in schema.group_indices():
            lits = [self._one(int(c)) for c in cols]
            if exactly_one:
                cp.add_exactly_one(lits)
            else:
                cp.add_at_most_one(lits)

    def _one(self, f: int):
        if f not in self.binary:
            self.binary[f] = self.cp.new_bool_var(f"x{f}")
        return self.binary[f]

    def _key(self, f: int, threshold):
        """Ordinal splits between the same integers are the same split."""
        return np.floor(threshold) if self.kinds[f] == "ordinal" else threshold

    def _fixed(self, f: int, key: float):
        """A constant literal when the range decides ``x <= key``, else None."""
        if self.high[f] <= key:
            return self.cp.new_constant(1)
        if self.low[f] > key:
            return self.cp.new_constant(0)
        return None

    def literal(self, f: int, threshold: float):
        if f in self.binary:
            return ~self.binary[f]
        return self.literals[(f, float(self._key(f, threshold)))]


def _paths(tree) -> dict[int, list[tuple[int, bool]]]:
    """Each node's root path as (ancestor, went_left) pairs."""
    paths: dict[int, list[tuple[int, bool]]] = {0: []}
    for node in tree.internal_nodes():
        paths[int(tree.left[node])] = [*paths[node], (node, True)]
        paths[int(tree.right[node])] = [*paths[node], (node, False)]
    return paths
