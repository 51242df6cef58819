"""Stripping the boosted frameworks' own files: a LightGBM model text file and an XGBoost
JSON model file, edited as text and JSON (no framework needed to strip, only to check).

LightGBM keeps per node what its predictor ignores: ``leaf_count``, ``leaf_weight``
(hessian sums), ``internal_count``, ``internal_weight``, ``internal_value`` and
``split_gain``, all optional when it loads a tree; ``feature_infos`` gives each feature's
training minimum and maximum (``none`` is what LightGBM writes for an unused feature); the
parameters keep the seeds the bagging and feature draws are recomputed from. Each tree's
byte size in ``tree_sizes`` is recomputed, since LightGBM seeks by it.

XGBoost requires every node array, so the ones its predictor ignores are zeroed, not
dropped: ``sum_hessian`` (the covers), ``loss_changes`` (gains) and ``base_weights`` (every
node's would-be value; a leaf's value is in ``split_conditions``).
"""

from __future__ import annotations

import re
from typing import Any

LIGHTGBM_NODE_FIELDS = ("leaf_count", "leaf_weight", "internal_count", "internal_weight",
                        "internal_value", "split_gain")
LIGHTGBM_SEEDS = ("seed", "bagging_seed", "feature_fraction_seed", "extra_seed",
                  "drop_seed", "data_random_seed", "objective_seed")
XGBOOST_NODE_FIELDS = ("sum_hessian", "loss_changes", "base_weights")
XGBOOST_ROUNDS = ("best_iteration", "best_ntree_limit")  # attributes prediction reads
# the learner's attributes kept: the rounds the wrappers predict with, and the wrapper's kind
# (``scikit_learn``: the estimator type ``XGBClassifier.load_model`` checks, nothing learnt)
XGBOOST_ATTRIBUTES = (*XGBOOST_ROUNDS, "scikit_learn")
# what the files keep of the training rows because every prediction starts from it
LIGHTGBM_KEPT = ("the first tree's leaf values, which hold the start every row shares (with "
                 "boost_from_average, fitted to the training labels: the class balance or "
                 "the targets' mean)")
XGBOOST_KEPT = ("base_score, the start every row shares, fitted to the training labels (the "
                "class balance, or the targets' mean)")
_TREE_START = re.compile(r"(?m)^(?=Tree=\d+\s*$)|^(?=end of trees\s*$)")


def strip_lightgbm(text: str) -> tuple[str, list[str]]:
    """A LightGBM model text with the fields its predictor ignores removed (see the module
    doc), and what was removed or neutralised."""
    blocks = _TREE_START.split(text)
    head, trees, tail = blocks[0], blocks[1:-1], blocks[-1]
    dropped = tuple(f"{name}=" for name in LIGHTGBM_NODE_FIELDS)
    trees = ["".join(line for line in block.splitlines(keepends=True)
                     if not line.startswith(dropped)) for block in trees]
    sizes = " ".join(str(len(block.encode("utf-8"))) for block in trees)
    head = re.sub(r"(?m)^tree_sizes=.*$", f"tree_sizes={sizes}", head)
    head = re.sub(r"(?m)^feature_infos=.*$",
                  lambda m: "feature_infos=" + " ".join(
                      "none" for _ in m.group(0).split("=", 1)[1].split()), head)
    for seed in LIGHTGBM_SEEDS:
        tail = re.sub(rf"(?m)^\[{seed}: .*\]$", f"[{seed}: 0]", tail)
    return head + "".join(trees) + tail, [
        f"{', '.join(LIGHTGBM_NODE_FIELDS)} of every tree (removed)",
        "feature_infos, each feature's training minimum and maximum (set to none)",
        f"the seeds in the parameters ({', '.join(LIGHTGBM_SEEDS)}; set to 0)"]


def strip_xgboost(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """An XGBoost JSON model (parsed) with the node fields its predictor ignores zeroed, and
    what was neutralised; the input is left untouched."""
    learner = dict(data["learner"])
    booster = dict(learner["gradient_booster"])
    model = dict(booster["model"])
    model["trees"] = [{**tree, **{name: [0.0] * len(tree[name])
                                  for name in XGBOOST_NODE_FIELDS if name in tree}}
                      for tree in model["trees"]]
    booster["model"], learner["gradient_booster"] = model, booster
    attributes = learner.get("attributes") or {}
    learner["attributes"] = {k: v for k, v in attributes.items() if k in XGBOOST_ATTRIBUTES}
    dropped = sorted(set(attributes) - set(XGBOOST_ATTRIBUTES))
    return {**data, "learner": learner}, [
        f"{', '.join(XGBOOST_NODE_FIELDS)} of every node (set to 0)",
        *([f"the learner's attributes {', '.join(dropped)} (early stopping's scores on its "
           "eval_set: removed)"] if dropped else [])]


def xgboost_rounds_kept(data: dict[str, Any]) -> list[str]:
    """The line naming the round early stopping chose, when the file keeps one: the
    scikit-learn wrapper and ``XGBClassifier.load_model`` predict with the trees up to it."""
    attributes = data.get("learner", {}).get("attributes") or {}
    kept = [k for k in XGBOOST_ROUNDS if k in attributes]
    return [f"{', '.join(kept)}, the round early stopping chose on its eval_set: the "
            "scikit-learn wrapper predicts with the trees up to it"] if kept else []
