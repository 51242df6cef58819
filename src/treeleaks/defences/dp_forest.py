"""A differentially private random forest: random splits from public domains, Laplace counts.

The random-tree forest of Jagannathan, Pillaipakkamnatt and Wright (2012), the DP forest
whose training sets Gorgé, Ferry, Gambs and Vidal (SaTML 2026) reconstruct. Its splits are
drawn from the columns' domains alone; only the per-leaf class counts read the data, and they
are released through the Laplace mechanism. `treeleaks.frontends.dp` turns a fitted forest
into the model IR the attacks read.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from treeleaks.ir.model import Tree
from treeleaks.ir.schema import FeatureSchema, FeatureSpec

BINARY_CUT = 0.5  # every split on a 0/1 column


class DPRandomForestClassifier(ClassifierMixin, BaseEstimator):
    """Random-tree forest whose released leaf counts are ε-differentially private.

    Each of the ``n_estimators`` trees is a complete binary tree of depth ``max_depth``
    whose splits are drawn at random from the schema's domains, never from the data. Every
    tree counts the whole training set per leaf and class and releases
    ``int(count + Laplace(scale=n_estimators / epsilon))``, truncated toward zero (counts
    may be negative). ``epsilon=inf`` releases the exact counts: no privacy, for testing.

    Guarantee: the released trees (splits and counts) are pure ε-DP for neighbouring
    datasets that differ by adding or removing one row. The splits do not read the data, so
    they cost no budget. A row lands in exactly one leaf and one class of a tree, so adding
    or removing it changes one count of that tree by 1 (parallel composition over leaves and
    classes): Laplace noise of scale T/ε makes each tree ε/T-DP, and sequential composition
    over the T trees gives ε. Truncation to integers is post-processing.

    Assumptions: the schema's domains are public, not derived from the training data, and
    the training-set size N is public (the attack assumes it; the noisy counts reveal it
    approximately anyway). With ``schema=None`` the domains are inferred from the data, and
    the columns a partial schema leaves out are made binary when the data are 0/1 there:
    what that inference reveals (ranges, which columns are 0/1) is a leak the guarantee
    does not cover. Pass a schema of public domains.

    Fitted attributes: ``trees_`` (`Tree` objects holding the released counts),
    ``classes_``, ``n_features_in_``, ``feature_names_in_`` (DataFrame input only),
    ``schema_`` (the complete schema used), ``n_rows_`` (N) and ``epsilon_`` (the budget
    the counts were released with, whatever ``set_params`` does later).

    Parameters
    ----------
    n_estimators : int, default 10
        The number of trees T.
    max_depth : int, default 5
        Each tree's depth d: 2**d leaves.
    epsilon : float, default 1.0
        The total privacy budget ε > 0; inf releases exact counts.
    schema : FeatureSchema or None, default None
        The columns' public domains. A partial one, from JSON, is completed as above; None
        infers every domain from the data.
    random_state : int or numpy.random.Generator or None, default None
        The source of randomness; a seeded fit is reproducible.
    """

    def __init__(
        self,
        n_estimators: int = 10,
        max_depth: int = 5,
        epsilon: float = 1.0,
        schema: FeatureSchema | None = None,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.epsilon = epsilon
        self.schema = schema
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> DPRandomForestClassifier:
        """Draw every tree's splits from the schema, then release its noisy leaf counts.

        Parameters
        ----------
        X : array_like
            Training rows, shape ``(N, M)``, within the schema's domains.
        y : array_like
            Class labels, one per row.

        Returns
        -------
        DPRandomForestClassifier
            The fitted forest (``self``).

        Raises
        ------
        ValueError
            A parameter is out of range, the schema does not fit the columns, or a value
            lies outside its domain.
        """
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        names = [str(c) for c in getattr(self, "feature_names_in_", ())] or [
            f"x{j}" for j in range(X.shape[1])
        ]
        schema = _complete_schema(self.schema, X, names)
        _check_in_domain(schema, X)
        classes, labels = np.unique(y, return_inverse=True)
        n_classes = len(classes)
        rng = np.random.default_rng(self.random_state)
        trees = [
            _random_tree(schema, self.max_depth, n_classes, rng)
            for _ in range(self.n_estimators)
        ]
        # The noise is drawn after every split, so the splits depend neither on the number
        # of classes nor on epsilon.
        scale = self.n_estimators / self.epsilon
        for tree in trees:
            true = np.bincount(tree.apply(X) * n_classes + labels, minlength=tree.counts.size)
            noisy = true.reshape(tree.counts.shape) + rng.laplace(0.0, scale, tree.counts.shape)
            tree.counts = np.trunc(noisy).astype(np.int64)
        self.trees_, self.classes_, self.schema_ = trees, classes, schema
        self.n_rows_ = X.shape[0]
        self.epsilon_ = float(self.epsilon)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Predict class probabilities by a soft vote of the noisy counts.

        The counts of each row's leaves (negatives clipped to 0) are summed over the trees
        and normalised per row; uniform where they sum to 0.

        Parameters
        ----------
        X : array_like
            Rows, shape ``(n_rows, M)``.

        Returns
        -------
        numpy.ndarray
            Probabilities, shape ``(n_rows, n_classes)``, columns in ``classes_`` order.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        votes = np.zeros((X.shape[0], len(self.classes_)))
        for tree in self.trees_:
            votes += np.clip(tree.counts, 0, None)[tree.apply(X)]
        total = votes.sum(axis=1, keepdims=True)
        uniform = np.full_like(votes, 1.0 / votes.shape[1])
        return np.divide(votes, total, out=uniform, where=total > 0)

    def predict(self, X: Any) -> np.ndarray:
        """Predict the class with the largest soft vote.

        Parameters
        ----------
        X : array_like
            Rows, shape ``(n_rows, M)``.

        Returns
        -------
        numpy.ndarray
            One class label per row.
        """
        winner = self.predict_proba(X).argmax(axis=1)
        return self.classes_[winner]

    def _check_params(self) -> None:
        for name in ("n_estimators", "max_depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        eps = self.epsilon
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps > 0:
            raise ValueError(
                f"epsilon must be a number > 0 (inf for exact counts, no privacy), got {eps!r}"
            )


def _random_tree(
    schema: FeatureSchema, depth: int, n_classes: int, rng: np.random.Generator
) -> Tree:
    """A complete tree of ``depth`` whose splits read only the schema and ``rng``, counts 0.

    Nodes are in breadth-first order (node i's children are 2i+1 and 2i+2), so the leaves
    are the last 2**depth nodes, numbered left to right.
    """
    lower = np.full((1, len(schema.features)), -np.inf)
    upper = np.full((1, len(schema.features)), np.inf)
    features, thresholds = [], []
    for _ in range(depth):
        feature, threshold = _draw_splits(schema, lower, upper, rng)
        features.append(feature)
        thresholds.append(threshold)
        left = 2 * np.arange(len(feature))
        lower, upper = np.repeat(lower, 2, axis=0), np.repeat(upper, 2, axis=0)
        upper[left, feature] = np.minimum(upper[left, feature], threshold)
        lower[left + 1, feature] = np.maximum(lower[left + 1, feature], threshold)
    n_internal, n_leaves = 2**depth - 1, 2**depth
    pad = np.full(n_leaves, -1, dtype=np.int64)
    left_child = np.concatenate([2 * np.arange(n_internal, dtype=np.int64) + 1, pad])
    return Tree(
        feature=np.concatenate([*features, pad]),
        threshold=np.concatenate([*thresholds, np.full(n_leaves, np.nan)]),
        left=left_child,
        right=np.where(left_child < 0, -1, left_child + 1),
        leaf_of_node=np.concatenate([np.full(n_internal, -1, dtype=np.int64),
                                     np.arange(n_leaves, dtype=np.int64)]),
        counts=np.zeros((n_leaves, n_classes), dtype=np.int64),
    )


def _draw_splits(
    schema: FeatureSchema, lower: np.ndarray, upper: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One split per box ``lower < x <= upper``.

    A feature drawn uniformly among those that cut the box into two feasible halves, with a
    threshold drawn uniformly among its cut points; where none cuts, any feature, with a
    threshold that leaves one half empty.
    """
    kinds = schema.kind_array()
    low, high = schema.range_arrays()
    n_boxes, n_features = lower.shape
    # Ordinal: the integers first..last remain; numerical: the open interval (a, b) does.
    first, last = np.maximum(low, np.floor(lower) + 1), np.minimum(high, np.floor(upper))
    a, b = np.maximum(low, lower), np.minimum(high, upper)
    can0, can1 = schema.binary_options(lower, upper)
    cuts = np.select(
        [kinds == "binary", kinds == "ordinal"], [can0 & can1, last > first],
        np.nextafter(a, np.inf) < b,
    )
    cuts &= schema.feasible(lower, upper)[:, None]
    grouped = np.array([j for cols, _ in schema.group_indices() for j in cols], dtype=np.int64)
    if grouped.size:
        cuts[:, grouped] &= _both_halves_feasible(schema, lower, upper, grouped)
    stuck = ~cuts.any(axis=1)
    feature = np.where(
        stuck,
        rng.integers(n_features, size=n_boxes),
        np.where(cuts, rng.random(cuts.shape), -1.0).argmax(axis=1),
    )
    rows, kind, u = np.arange(n_boxes), kinds[feature], rng.random(n_boxes)
    fc, lc = first[rows, feature], last[rows, feature]
    ac, bc = a[rows, feature], b[rows, feature]
    ordinal = np.minimum(fc + np.floor(u * (lc - fc)), lc - 1) + 0.5
    numerical = np.clip(ac + u * (bc - ac), np.nextafter(ac, np.inf), np.nextafter(bc, -np.inf))
    is_binary, is_ordinal = kind == "binary", kind == "ordinal"
    inside = np.select([is_binary, is_ordinal], [BINARY_CUT, ordinal], numerical)
    top = high[feature]  # a threshold at or above the domain sends every row left
    outside = np.select([is_binary, is_ordinal], [BINARY_CUT, top + 0.5], top)
    return feature, np.where(stuck, outside, inside)


def _both_halves_feasible(
    schema: FeatureSchema, lower: np.ndarray, upper: np.ndarray, cols: np.ndarray
) -> np.ndarray:
    """Whether splitting each box on each grouped binary column leaves an allowed row.

    ``(n_boxes, len(cols))``: a row the groups allow must lie on both sides. A column
    outside every group needs only to be unfixed in a feasible box, so only grouped columns
    pay for this check.
    """
    n_boxes, k = len(lower), len(cols)
    box_lower, box_upper = np.repeat(lower, k, axis=0), np.repeat(upper, k, axis=0)
    rows, col = np.arange(n_boxes * k), np.tile(cols, n_boxes)
    left_upper, right_lower = box_upper.copy(), box_lower.copy()
    left_upper[rows, col] = np.minimum(box_upper[rows, col], BINARY_CUT)
    right_lower[rows, col] = np.maximum(box_lower[rows, col], BINARY_CUT)
    both = schema.feasible(box_lower, left_upper) & schema.feasible(right_lower, box_upper)
    return both.reshape(n_boxes, k)


def _complete_schema(
    schema: FeatureSchema | None, X: np.ndarray, names: list[str]
) -> FeatureSchema:
    """The schema over exactly ``names`` in their order, every column with a finite domain."""
    if schema is None:
        schema = FeatureSchema.from_frame(pd.DataFrame(X, columns=names))
    _refuse_strangers(schema, names)
    features = {name: _column_spec(schema, name, X[:, j]) for j, name in enumerate(names)}
    return FeatureSchema(
        features,
        [list(g) for g in schema.one_hot_groups],
        [list(g) for g in schema.at_most_one_groups],
    )


def _refuse_strangers(schema: FeatureSchema, names: list[str]) -> None:
    """One line for the columns the schema (or its groups) names that X does not have."""
    grouped = [n for group in schema.one_hot_groups + schema.at_most_one_groups for n in group]
    strangers = sorted(set(schema.features).union(grouped) - set(names))
    if strangers:
        raise ValueError(
            f"the schema describes column(s) {', '.join(map(repr, strangers[:5]))} that X "
            f"does not have (X has {', '.join(names[:5])}{', ...' if len(names) > 5 else ''})"
        )


def _column_spec(schema: FeatureSchema, name: str, column: np.ndarray) -> FeatureSpec:
    """Column ``name``'s spec with a finite domain; one line when it has none.

    The schema's spec, or binary when a partial schema leaves out a 0/1 column.
    """
    spec = schema.features.get(name)
    if spec is None and (schema.complete or not np.isin(column, (0.0, 1.0)).all()):
        raise ValueError(
            f"the schema does not describe column {name!r}"
            f"{'' if schema.complete else ' and its values are not all 0/1'}; "
            "give its range (numerical/ordinal) in the schema"
        )
    if spec is None or spec.kind == "binary":
        return FeatureSpec("binary", 0.0, 1.0)
    if spec.kind == "unknown" or not np.isfinite([spec.low, spec.high]).all():
        raise ValueError(
            f"column {name!r} has no finite domain in the schema; the trainer draws "
            "splits from the domains, give its range (numerical/ordinal) or make it binary"
        )
    return spec


def _check_in_domain(schema: FeatureSchema, X: np.ndarray) -> None:
    """Every training row must be one the schema allows: the attacks search that domain."""
    low, high = schema.range_arrays()
    for j, (name, spec) in enumerate(schema.features.items()):
        column = X[:, j]
        bad = (column < low[j]) | (column > high[j])
        if spec.kind != "numerical":
            bad |= column != np.round(column)
        if bad.any():
            domain = "0 or 1" if spec.kind == "binary" else (
                f"{spec.kind} in [{spec.low:g}, {spec.high:g}]")
            raise ValueError(
                f"column {name!r} holds {column[bad][0]:g}, outside its domain in the schema "
                f"({domain}); fix the schema or the data"
            )
    for cols, exactly_one in schema.group_indices():
        ones = X[:, cols].sum(axis=1)
        bad = ones != 1 if exactly_one else ones > 1
        if bad.any():
            group = [schema.names[c] for c in cols]
            kind = "one-hot" if exactly_one else "at-most-one"
            raise ValueError(
                f"a training row has {ones[bad][0]:g} ones in the {kind} group {group}; "
                "fix the schema's groups or the data"
            )
