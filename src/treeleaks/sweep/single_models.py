"""Sweep points on single trees and rule lists: what one interpretable model leaks
(``interpretable``), and the singling-out protocol of Sedlmeyr 2024 with the pruning
defence (``single-out``). Both are fast, so their grids usually run in the worker's own
process (``isolate = false``)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

HELD_OUT = 2000  # rows the random search scores its candidates on
DL85_TIME_LIMIT = 120.0


def run_interpretable(point: dict[str, Any], data_dir: Path | None) -> dict[str, Any]:
    """Fit one tree or rule list on a share of the dataset; its dist_g, dist, accuracy and
    size (splits of a tree, rules of a rule list)."""
    from treeleaks.attacks.probabilistic import rule_list_reconstruction, tree_reconstruction
    from treeleaks.evaluation.entropy import summarize
    from treeleaks.ir.schema import FeatureSchema
    from treeleaks.sweep.datasets import load_dataset

    data = load_dataset(point["dataset"], data_dir)
    train = data.sample(int(len(data.frame) * point["train_share"]), point["seed"])
    X, y = train.drop(columns=[data.label]), train[data.label].to_numpy()
    schema = FeatureSchema.from_frame(X, data.one_hot_groups or None,
                                      data.at_most_one_groups or None)
    min_rows = max(1, math.ceil(point["min_support"] * len(X)))
    depth, learner, timed_out = point["depth"], point["learner"], False
    start = time.perf_counter()
    if learner == "greedy-rl":
        from treeleaks.learners.greedy_rule_list import GreedyRuleListClassifier

        rules = GreedyRuleListClassifier(max_length=depth, max_width=1,
                                         min_support=point["min_support"]).fit(X, y)
        fit_s = time.perf_counter() - start
        reconstruction = rule_list_reconstruction(rules.rule_list_, schema)
        accuracy, size = rules.score(X, y), len(rules.rule_list_.rules)
    else:
        if learner == "cart":
            from sklearn.tree import DecisionTreeClassifier

            from treeleaks.frontends.sklearn import from_sklearn

            tree = DecisionTreeClassifier(max_depth=depth, min_samples_leaf=min_rows,
                                          random_state=0).fit(X, y)
            released, accuracy = from_sklearn(tree), tree.score(X, y)
        else:
            from pydl85 import DL85Classifier

            from treeleaks.frontends.dl85 import from_dl85

            fitted = DL85Classifier(max_depth=depth, min_sup=min_rows,
                                    time_limit=DL85_TIME_LIMIT).fit(X.to_numpy(), y)
            released = from_dl85(fitted.tree_, list(X.columns), X.to_numpy(), y)
            accuracy = float((fitted.predict(X.to_numpy()) == y).mean())
            timed_out = bool(getattr(fitted, "timeout_", False))
        fit_s = time.perf_counter() - start
        reconstruction = tree_reconstruction(released, schema)
        size = released.trees[0].n_leaves - 1
    summary = summarize(reconstruction)
    return {"accuracy": float(accuracy), "size": int(size), "dist_g": summary.dist_g,
            "dist": summary.dist, "fit_s": fit_s, "timed_out": timed_out}


def run_single_out(point: dict[str, Any], data_dir: Path | None) -> dict[str, Any]:
    """Sample a subset, pick a tree by a small random search (max_depth 5-64,
    min_samples_split 2-32, min_samples_leaf 1-16, best on held-out rows), single out its
    rows, prune it to ``min_count`` 2 and attack it again."""
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    from treeleaks.attacks.singling_out import single_out, tries_without_counts
    from treeleaks.defences.prune import prune
    from treeleaks.frontends.sklearn import from_sklearn
    from treeleaks.sweep.datasets import load_dataset

    data = load_dataset(point["dataset"], data_dir)
    regression = data.regression
    rng = np.random.default_rng(point["seed"])
    top = min(point["max_rows"], len(data.frame) - 40)
    n = int(rng.integers(min(point["min_rows"], top), top + 1))
    order = rng.permutation(len(data.frame))
    train, test = data.frame.iloc[order[:n]], data.frame.iloc[order[n:n + HELD_OUT]]
    X, y = train.drop(columns=data.label), train[data.label]
    Xt, yt = test.drop(columns=data.label), test[data.label]
    kind = DecisionTreeRegressor if regression else DecisionTreeClassifier
    best, best_score, best_params = None, -np.inf, {}
    for _ in range(point["search"]):
        params = {"max_depth": int(rng.integers(5, 65)),
                  "min_samples_split": int(rng.integers(2, 33)),
                  "min_samples_leaf": int(rng.integers(1, 17))}
        tree = kind(random_state=point["seed"], **params).fit(X, y)
        score = tree.score(Xt, yt)
        if score > best_score:
            best, best_score, best_params = tree, score, params
    model = from_sklearn(best, allow_regression=regression)
    start = time.perf_counter()
    result = single_out(model)
    attack_s = time.perf_counter() - start
    tries = tries_without_counts(model)
    pruned, summary = prune(best, 2)
    after = single_out(from_sklearn(pruned, allow_regression=regression))
    return {"n_rows": n, **best_params, "nodes": summary.nodes_before,
            "vulnerable_pairs": len(result.predicates), "vulnerable": bool(result.predicates),
            "expected_tries": tries.expected, "tries_in_order": tries.in_order,
            "attack_s": attack_s, "train_before": best.score(X, y),
            "train_after": pruned.score(X, y), "test_before": best_score,
            "test_after": pruned.score(Xt, yt), "nodes_after": summary.nodes_after,
            "vulnerable_after": len(after.predicates)}
