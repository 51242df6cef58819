"""What each framework's file stores, field by field, and what each field gives away: the
readers put these in their model's `ModelDescription`, so every command names them alike.
A stripped file lists what `treeleaks strip` removed from it."""

from __future__ import annotations

from typing import Any

from treeleaks.frontends.boosting import LEAF_VALUES
from treeleaks.frontends.multiclass import LATER_SUMS
from treeleaks.ir.description import StoredField

RANDOM_STATE = StoredField("random_state", "each tree's seed, which repeats its bootstrap "
                           "draws (how often it drew each training row)")
_FIRST_TREE = "per class in tree 0, derived from its leaf values"


def sklearn_tree_fields(regression: bool, bootstrap: bool, trees: list[Any]) -> list[StoredField]:
    """A scikit-learn tree's or forest's fields (``trees``: the IR's, to count the leaves
    that hold one row; none for a stripped file, whose counts are gone)."""
    weighted = ("rows in every node, each counted as often as its tree drew it" if bootstrap
                else "rows in every node")
    fields = [StoredField("n_node_samples", "distinct training rows in every node"),
              StoredField("weighted_n_node_samples", weighted)]
    if regression:
        single = sum(int((t.n_samples == 1).sum()) for t in trees if t.n_samples is not None)
        fields += [StoredField("value", "each node's mean target: " + (
                       f"{single:,} leaves hold one row and give that row's target exactly"
                       if trees else "a leaf of one row gives that row's target")),
                   StoredField("impurity", "each node's variance of its targets (0: its rows "
                               "share one target)")]
    else:
        fields += [StoredField("value", "each node's class fractions: with the weighted "
                               "count, its class counts"),
                   StoredField("impurity", "each node's impurity (Gini or entropy) of its "
                               "class counts")]
    return fields + ([RANDOM_STATE] if bootstrap else [])


def sklearn_booster_fields(hist: bool, regression: bool, multiclass: bool = False
                           ) -> list[StoredField]:
    """A scikit-learn gradient-boosted model's fields."""
    count = "count" if hist else "n_node_samples"
    rows = LATER_SUMS if multiclass else f"rows per leaf in every tree ({count})" + (
        "" if regression else f"; {_FIRST_TREE}")
    return [StoredField(count, rows),
            StoredField("value", LEAF_VALUES if regression else "each leaf's step: with the "
                        "counts, bounds on its rows' gradient sums")]


def lightgbm_fields(regression: bool, multiclass: bool = False) -> list[StoredField]:
    """A LightGBM model text's fields."""
    rows = LATER_SUMS if multiclass else "rows per leaf in every tree" + (
        "" if regression else f"; {_FIRST_TREE}")
    return [StoredField("leaf_count", rows),
            StoredField("leaf_weight", "each leaf's hessian sum"),
            StoredField("internal_count", "rows through every split"),
            StoredField("leaf_value", LEAF_VALUES if regression else "each leaf's step: with "
                        "the hessian sums, its rows' gradient sums"),
            StoredField("feature_infos", "each numerical column's training minimum and "
                        "maximum (a categorical column's: every category seen)"),
            StoredField("bagging_seed", "with the other seeds in its parameters, repeats "
                        "the bagging and feature draws (with bagging: which rows each tree "
                        "drew)")]


def xgboost_fields(regression: bool, multiclass: bool = False) -> list[StoredField]:
    """An XGBoost JSON model's fields."""
    covers = LATER_SUMS if multiclass else "each node's hessian sum (cover): rows per leaf " \
        "in tree 0" + ("" if regression else " and, with its leaf values, per class") + \
        "; later trees: hessian sums, no counts"
    return [StoredField("sum_hessian", covers),
            StoredField("base_weights", "every node's would-be value, from its rows' "
                        "gradient and hessian sums"),
            StoredField("loss_changes", "each split's gain on the training rows"),
            StoredField("split_conditions", "at a leaf, its value: " + (
                LEAF_VALUES if regression else "with the covers, its rows' gradient sums")),
            StoredField("base_score", "the start every row shares, fitted to the training "
                        "rows: " + ("their targets' mean" if regression else
                                    "the positive share, the class balance" if not multiclass
                                    else "each class's log share (centred), the class "
                                    "balance") + "; prediction needs it: strip keeps it")]


def dp_fields() -> list[StoredField]:
    """A treeleaks DP forest's fields."""
    return [StoredField("counts", "each leaf's class counts plus Laplace noise (rounded "
                        "down)"),
            StoredField("schema", "the public domains the random splits were drawn from")]


def removed(fields: list[StoredField]) -> list[StoredField]:
    """``fields`` as a stripped file lists them: every one removed, prediction's own kept."""
    return [StoredField(f.name, f.exposes, removed=f.name in STRIPPED) for f in fields]


# What `treeleaks strip` removes or neutralises (the rest, splits, leaf outputs and the
# start every row shares, prediction needs).
STRIPPED = frozenset({"n_node_samples", "weighted_n_node_samples", "impurity",
                      "random_state", "count", "leaf_count", "leaf_weight", "internal_count",
                      "feature_infos", "sum_hessian", "base_weights", "loss_changes",
                      "_bin_mapper.bin_thresholds_", "_bin_mapper.n_bins_non_missing_",
                      "train_score_", "validation_score_", "_random_seed", "oob_score_",
                      "oob_decision_function_", "oob_prediction_", "oob_improvement_",
                      "oob_scores_", "_n_samples", "bagging_seed"})

