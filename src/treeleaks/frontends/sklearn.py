"""The scikit-learn frontend.

DecisionTreeClassifier, ExtraTreeClassifier (one random-split tree), RandomForestClassifier,
ExtraTreesClassifier, and on request their regressor counterparts; the gradient-boosted
classifiers are read by `treeleaks.frontends.sklearn_boosting`.

Reads each fitted tree's nodes and turns its stored class frequencies into integer counts (a
regression tree: its leaves' row counts and predicted values). The reading that differs
between scikit-learn versions lives in `treeleaks.sklearn_compat`, shared with the pruning
defence.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treeleaks.frontends.boosting import Nodes
from treeleaks.frontends.hist_routing import hist_routing, routed_columns
from treeleaks.frontends.sklearn_boosting import (
    BOOSTERS,
    REGRESSION_BOOSTERS,
    booster_model,
    booster_regression_model,
    predictor_tree,
    tree_nodes,
)
from treeleaks.frontends.sklearn_extras import sklearn_extras, with_extras
from treeleaks.frontends.sklearn_multiclass import multiclass_booster_model
from treeleaks.frontends.stored import sklearn_booster_fields, sklearn_tree_fields
from treeleaks.frontends.stripped import (
    Stripped,
    counts_removed,
    structure_only,
    zeroed_trees,
)
from treeleaks.frontends.tree_routing import gap_layout, spelled, spelled_nodes
from treeleaks.ir.description import ModelKind, describe
from treeleaks.ir.inputs import InputMap
from treeleaks.ir.model import ModelFormatError, ReleasedModel, Tree
from treeleaks.ir.node_stats import ENTROPY, GINI, VARIANCE, NodeStats
from treeleaks.runtime.errors import UnsupportedModelError
from treeleaks.sklearn_compat import node_class_counts

SUPPORTED = ("DecisionTreeClassifier", "ExtraTreeClassifier", "RandomForestClassifier",
             "ExtraTreesClassifier")
REGRESSORS = ("DecisionTreeRegressor", "ExtraTreeRegressor", "RandomForestRegressor",
              "ExtraTreesRegressor")
# one tree, not a forest: a random-split tree is stored as a decision tree is
SINGLE_TREES = ("DecisionTreeClassifier", "ExtraTreeClassifier", "DecisionTreeRegressor",
                "ExtraTreeRegressor")
_COUNT_TOLERANCE = 1e-6


def from_sklearn(
    estimator: Any,
    feature_names: list[str] | None = None,
    label_name: str = "label",
    allow_regression: bool = False,
    counts_removed_ok: bool = False,
    gaps: frozenset[str] = frozenset(),
) -> ReleasedModel:
    """Translate a fitted scikit-learn tree model into a `ReleasedModel`.

    Reads DecisionTreeClassifier, ExtraTreeClassifier, RandomForestClassifier,
    ExtraTreesClassifier and the gradient-boosted classifiers; with ``allow_regression``,
    their regressor counterparts.

    Parameters
    ----------
    estimator : sklearn.base.BaseEstimator
        The fitted, single-output estimator.
    feature_names : list of str or None, default None
        The columns' names; None: the estimator's ``feature_names_in_``, else ``x0``,
        ``x1``, ...
    label_name : str, default "label"
        The name of the label column of reconstructed rows; suffixed ``_1``, ``_2``, ...
        when a feature has it.
    allow_regression : bool, default False
        Read a regressor too, for the attacks that take one.
    counts_removed_ok : bool, default False
        Return a model whose counts were removed (``treeleaks strip``) as its structure
        alone (every count 0), instead of raising.
    gaps : frozenset of str, default empty
        Columns known to have held gaps in training (a pipeline's encoder saw them): each
        gets a gap feature routed as the splits send gaps, even where no split shows it.

    Returns
    -------
    ReleasedModel
        The model, validated.

    Raises
    ------
    UnsupportedModelError
        The estimator is unsupported, unfitted, multi-output, altered after fitting, or a
        regressor without ``allow_regression``.
    CountsRemovedError
        Its counts were removed and ``counts_removed_ok`` is False.
    """
    kind = type(estimator).__name__
    regression = kind in REGRESSORS + REGRESSION_BOOSTERS
    _check_estimator(estimator, kind, regression, allow_regression)
    names = _feature_names(estimator, feature_names)
    label_name = _free_name(label_name, names)
    if _counts_zeroed(estimator):
        if not counts_removed_ok:
            raise counts_removed(kind, "every node's row count is 0", random_states=bool(
                getattr(estimator, "bootstrap", False)))
        return _structure(estimator, kind, names, label_name, regression, gaps)
    if kind in BOOSTERS:
        read = multiclass_booster_model if len(estimator.classes_) > 2 else booster_model
        model = read(estimator, names, label_name, gaps)
    elif kind in REGRESSION_BOOSTERS:
        model = booster_regression_model(estimator, names, label_name, gaps)
    else:
        model = _tree_model(estimator, kind, names, label_name, regression, gaps)
    return with_extras(model, estimator, names)


def _check_estimator(estimator: Any, kind: str, regression: bool,
                     allow_regression: bool) -> None:
    """Refuse what `from_sklearn` does not read.

    A regressor unasked, another estimator, an unfitted or a multi-output one.
    """
    if regression and not allow_regression:
        raise UnsupportedModelError(
            f"{kind} is a regressor, read only when asked: from_sklearn(..., "
            "allow_regression=True) for the attacks that take regressors (reconstruct: "
            "fully grown RandomForestRegressor, ExtraTreesRegressor and "
            "DecisionTreeRegressor; single-out and prune: those and the boosted regressors "
            f"{', '.join(REGRESSION_BOOSTERS)})"
        )
    if kind not in SUPPORTED + BOOSTERS and not regression:
        raise UnsupportedModelError(
            f"unsupported estimator {kind}; treeleaks reads {', '.join(SUPPORTED + BOOSTERS)}, "
            "or a treeleaks JSON model"
        )
    if not hasattr(estimator, "n_features_in_" if regression else "classes_"):
        raise UnsupportedModelError(
            f"the {kind} is not fitted: call fit(X, y) before auditing it"
        )
    if getattr(estimator, "n_outputs_", 1) != 1:
        raise UnsupportedModelError(
            f"this {kind} predicts several outputs; treeleaks audits single-output models"
        )


def _tree_model(estimator: Any, kind: str, names: list[str], label_name: str,
                regression: bool, gaps: frozenset[str] = frozenset()) -> ReleasedModel:
    """A decision tree's or a forest's model.

    Each tree's counts, with the forest's draws when it bootstraps.
    """
    estimators, bootstrap, samples = _members(estimator, kind)
    trees = _member_trees(estimator, estimators, samples, kind, regression)
    classes = [] if regression else [c.item() if isinstance(c, np.generic) else c
                                     for c in estimator.classes_]
    # the file's own nodes checked before spelling gaps out renumbers them
    edited = tuple(f"tree {index} {why}" for index, tree in enumerate(trees)
                   if (why := tree.node_contradiction(classes)))
    layout = gap_layout([m.tree_ for m in estimators], names, gaps)
    if layout is not None:  # fitted on gaps: each gap split spelled out
        trees = [spelled(tree, m.tree_, layout, index)
                 for index, (tree, m) in enumerate(zip(trees, estimators))]
        names = list(layout.names)
    model = ReleasedModel(
        trees=trees,
        task="regression" if regression else "classification",
        classes=classes,
        feature_names=names,
        label_name=label_name,
        bootstrap=bootstrap,
        source=f"sklearn.{kind}",
        facts=_tree_facts(estimator, kind, bootstrap, regression),
        inputs=None if layout is None else layout.inputs(),
        contradictions=edited,
    )
    model.validate()
    model.description = describe(model, "scikit-learn", kind,
                                 sklearn_tree_fields(regression, bootstrap, trees))
    return model


def _members(estimator: Any, kind: str) -> tuple[list[Any], bool, list[Any] | None]:
    """The model's fitted trees, whether it bootstraps, and each tree's draws when it does.

    A single tree is its own member; a model holding no tree, or something else where a
    tree belongs, is refused.
    """
    if kind in SINGLE_TREES:
        estimators, bootstrap, samples = [estimator], False, None
    else:
        estimators = list(estimator.estimators_)
        bootstrap = bool(estimator.bootstrap)
        samples = _bootstrap_draws(estimator) if bootstrap else None
    if not estimators:
        raise UnsupportedModelError(f"this {kind} holds no trees (it was never fitted): audit the "
                                    "fitted model's file")
    strangers = [type(m).__name__ for m in estimators if not hasattr(m, "tree_")]
    if strangers:
        raise UnsupportedModelError(
            f"this {kind} holds a {strangers[0]} where a fitted tree belongs; it was altered "
            "after fitting, so its counts cannot be trusted"
        )
    return estimators, bootstrap, samples


def _member_trees(estimator: Any, estimators: list[Any], samples: list[Any] | None,
                  kind: str, regression: bool) -> list[Tree]:
    """Each fitted tree in the IR, with its draws and node statistics."""
    trees = []
    criterion = str(getattr(estimator, "criterion", "squared_error" if regression else ""))
    clipped = getattr(estimator, "monotonic_cst", None) is not None
    for index, member in enumerate(estimators):
        draws = None if samples is None else samples[index]
        stats = _node_stats(member.tree_, regression, criterion, clipped)
        tree = (_regression_tree(member.tree_, index, kind, draws, criterion, stats)
                if regression else _tree(member.tree_, index, kind, draws, stats=stats))
        trees.append(tree)
    return trees


def _tree_facts(estimator: Any, kind: str, bootstrap: bool, regression: bool
                ) -> dict[str, Any]:
    """The training options the model shows.

    A bootstrapping forest's ``max_samples``, a regressor's growth limits.
    """
    facts: dict[str, Any] = {}
    if kind not in SINGLE_TREES and bootstrap:
        facts["max_samples"] = estimator.max_samples
    if regression:
        facts.update(_growth(estimator))
    return facts


def _counts_zeroed(estimator: Any) -> bool:
    """Whether every tree of the model has every node's row count at 0.

    A fitted tree holds rows at its root, so its counts were removed (`treeleaks strip`
    zeroes every tree's). A tree without nodes, or some trees zeroed and others not, is a
    damaged or edited file, refused naming the tree.
    """
    if hasattr(estimator, "_predictors"):
        counts = [np.asarray(p.nodes["count"])
                  for per_round in estimator._predictors for p in per_round]
    else:
        members = np.asarray(getattr(estimator, "estimators_", [estimator])).ravel()
        counts = [np.asarray(m.tree_.n_node_samples) for m in members if hasattr(m, "tree_")]
    zeroed = zeroed_trees(counts, "row counts")
    return bool(zeroed) and all(zeroed)


def _structure(estimator: Any, kind: str, names: list[str], label_name: str,
               regression: bool, gaps: frozenset[str] = frozenset()) -> ReleasedModel:
    """A stripped model's splits and leaf values, every count 0."""
    if hasattr(estimator, "_predictors"):
        routing = hist_routing(estimator, names, gaps)
        read = [predictor_tree(p, t, names, routing) for t, per_round in
                enumerate(estimator._predictors) for p in per_round]
        nodes, values = [r[0] for r in read], read[0][2]
    else:
        members = np.asarray(getattr(estimator, "estimators_", [estimator])).ravel()
        nodes = [tree_nodes(m.tree_) for m in members]
        first = members[0].tree_
        values = np.asarray(first.value, dtype=np.float64)[
            np.asarray(first.children_left) < 0, 0, 0]
        layout = gap_layout([m.tree_ for m in members], names, gaps)
        if layout is not None:  # fitted on gaps (or any split sends them off): spelled out
            spelled = [spelled_nodes(m.tree_, layout, t) for t, m in enumerate(members)]
            nodes, values = [s[0] for s in spelled], values[spelled[0][1]]
            return _structure_of(estimator, kind, (list(layout.names), layout.inputs()),
                                 label_name, regression, nodes, values, names)
    return _structure_of(estimator, kind, routed_columns(estimator, names, gaps), label_name,
                         regression, nodes, values, names)


def _structure_of(estimator: Any, kind: str, routed: tuple[list[str], InputMap | None],
                  label_name: str, regression: bool, nodes: list[Nodes], values: np.ndarray,
                  names: list[str]) -> ReleasedModel:
    """The structure-only model of ``nodes`` over ``features``, described as stripped.

    ``routed`` holds the model's features and how the table's columns become them.
    """
    features, inputs = routed
    classes = [] if regression else [c.item() if isinstance(c, np.generic) else c
                                     for c in estimator.classes_]
    boosted = kind in BOOSTERS + REGRESSION_BOOSTERS
    bootstrap = bool(getattr(estimator, "bootstrap", False))
    fields = (sklearn_booster_fields(hasattr(estimator, "_predictors"), regression) if boosted
              else sklearn_tree_fields(regression, bootstrap, []))
    fields += sklearn_extras(estimator, names)[0]
    about = Stripped("scikit-learn", kind, fields,
                     ModelKind.GRADIENT_BOOSTED if boosted else None, bootstrap)
    model = structure_only(nodes, classes, features, label_name, f"sklearn.{kind}", about,
                           values if regression else None)
    model.inputs = inputs
    return model


def _free_name(wanted: str, taken: list[str]) -> str:
    """``wanted``, or ``wanted_1``, ``wanted_2``, ... when a feature already has the name."""
    names, name, suffix = set(taken), wanted, 0
    while name in names:
        suffix += 1
        name = f"{wanted}_{suffix}"
    return name


def _feature_names(estimator: Any, given: list[str] | None) -> list[str]:
    n = int(estimator.n_features_in_)
    if given is not None:
        if len(given) != n:
            raise UnsupportedModelError(
                f"{len(given)} feature names given but the model was fitted on {n} features"
            )
        return list(given)
    if hasattr(estimator, "feature_names_in_"):
        return [str(c) for c in estimator.feature_names_in_]
    return [f"x{j}" for j in range(n)]


def _tree(
    sk_tree: Any, index: int, kind: str, draws: np.ndarray | None,
    counts: np.ndarray | None = None, stats: NodeStats | None = None,
) -> Tree:
    """A tree's nodes with its leaves' class counts (or the ``counts`` given).

    Every node's stored numbers come along as ``stats``.
    """
    is_leaf = np.asarray(sk_tree.children_left) < 0
    if counts is None:
        leaf_raw = node_class_counts(sk_tree)[is_leaf]
        counts = np.round(leaf_raw)
        if np.abs(leaf_raw - counts).max(initial=0.0) > _COUNT_TOLERANCE:
            _refuse_edited(sk_tree, stats, index, kind)
            raise UnsupportedModelError(
                f"tree {index} of this {kind} stores class counts that are not integers, so "
                "it was trained with sample_weight or class_weight; treeleaks needs "
                "unweighted training (ask whoever trained it for the model fitted without "
                "weights)"
            )
    return Tree(
        *tree_nodes(sk_tree),
        counts=counts.astype(np.int64),
        n_samples=np.asarray(sk_tree.n_node_samples, dtype=np.int64)[is_leaf],
        draws=draws,
        nodes=stats,
    )


def _node_stats(sk_tree: Any, regression: bool, criterion: str, clipped: bool) -> NodeStats:
    """What a scikit-learn tree stores at every node.

    Its weighted rows (per class for a classifier), distinct rows, a regressor's mean
    (unless the criterion's value is another, or monotonic constraints clipped it) and the
    impurity its criterion names.
    """
    distinct = np.asarray(sk_tree.n_node_samples, dtype=np.int64)
    impurity = np.asarray(sk_tree.impurity, dtype=np.float64)
    if not regression:
        named = {"gini": GINI, "entropy": ENTROPY, "log_loss": ENTROPY}.get(criterion, "")
        return NodeStats(node_class_counts(sk_tree), distinct,
                         impurity=impurity if named else None, criterion=named)
    weighted = np.asarray(sk_tree.weighted_n_node_samples, dtype=np.float64)[:, None]
    means = criterion in MEAN_CRITERIA and not clipped
    variance = criterion in VARIANCE_CRITERIA and means
    return NodeStats(weighted, distinct,
                     np.asarray(sk_tree.value, dtype=np.float64)[:, 0, 0] if means else None,
                     impurity if variance else None, VARIANCE if variance else "")


def _refuse_edited(sk_tree: Any, stats: NodeStats | None, index: int, kind: str) -> None:
    """Refuse a tree whose nodes contradict each other: the file was edited.

    Checked before its leaves' counts are blamed on weighted training.
    """
    if stats is None or not np.isfinite(stats.weighted).all():
        return
    columns = [f"weighted rows of class column {c}" for c in range(stats.weighted.shape[1])]
    left = np.asarray(sk_tree.children_left, dtype=np.int64)
    right = np.asarray(sk_tree.children_right, dtype=np.int64)
    if (why := stats.contradiction(left, right, columns)):
        raise ModelFormatError(f"tree {index} of this {kind}: {why}, so the file was edited "
                               "after training; no dataset gives it")


def _regression_tree(
    sk_tree: Any, index: int, kind: str, draws: np.ndarray | None, criterion: str,
    stats: NodeStats | None = None,
) -> Tree:
    """A regressor's tree.

    The rows (with their draws) in each leaf, its predicted value and, under a variance
    criterion, its impurity (the weighted variance of its targets).
    """
    is_leaf = np.asarray(sk_tree.children_left) < 0
    weighted = np.asarray(sk_tree.weighted_n_node_samples, dtype=np.float64)[is_leaf]
    rows = np.round(weighted)
    if np.abs(weighted - rows).max(initial=0.0) > _COUNT_TOLERANCE:
        _refuse_edited(sk_tree, stats, index, kind)
        raise UnsupportedModelError(
            f"tree {index} of this {kind} stores row counts that are not integers, so it was "
            "trained with sample_weight; treeleaks needs unweighted training"
        )
    shape = _tree(sk_tree, index, kind, draws, counts=rows[:, None], stats=stats)
    shape.values = np.asarray(sk_tree.value, dtype=np.float64)[is_leaf, 0, 0]
    if criterion in VARIANCE_CRITERIA:
        shape.impurity = np.asarray(sk_tree.impurity, dtype=np.float64)[is_leaf]
    return shape


# The criteria whose stored impurity is the weighted variance of the node's targets.
VARIANCE_CRITERIA = ("squared_error", "friedman_mse")
# The criteria whose stored value is the mean of the node's targets.
MEAN_CRITERIA = (*VARIANCE_CRITERIA, "poisson")
# What a regressor's leaf values mean and how far its trees grew: the mean of the leaf's
# targets under these criteria, and one target a leaf unless a rule stopped the growth.
GROWTH = ("criterion", "max_depth", "min_samples_split", "min_samples_leaf",
          "min_weight_fraction_leaf", "max_leaf_nodes", "min_impurity_decrease", "ccp_alpha")


def _growth(estimator: Any) -> dict[str, Any]:
    """A tree regressor's criterion and growth limits, as the model file's facts."""
    return {name: getattr(estimator, name) for name in GROWTH if hasattr(estimator, name)}


def _bootstrap_draws(forest: Any) -> list[np.ndarray]:
    """How often each training row was drawn for each tree (recomputed from the random state)."""
    n_rows = int(forest._n_samples)
    return [np.bincount(idx, minlength=n_rows) for idx in forest.estimators_samples_]
