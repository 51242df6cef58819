"""How a ``HistGradientBoosting`` model routes gaps and categories, for `frontends.gaps`.

Each predictor node keeps ``missing_go_to_left``. scikit-learn sets it, for a column whose
training rows held no gap, to the child with more rows (``count``): a split that sends gaps
elsewhere shows the column held gaps. A categorical split keeps, in the predictor's
``raw_left_cat_bitsets``, the categories it sends left. With ``categorical_features`` the
model encodes those columns first (its ``_preprocessor``, an ``OrdinalEncoder`` whose
``categories_`` name the codes) and puts them ahead of the others; the layout puts every
column back in the table's order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from treeleaks.frontends.boosting import Nodes
from treeleaks.frontends.gaps import Column, Layout, RoutedTree, check_kept, spell_out
from treeleaks.ir.inputs import InputMap


@dataclass(frozen=True)
class HistRouting:
    """A model's layout, and per predictor feature its column and known category codes."""

    layout: Layout
    column_of: np.ndarray
    known: tuple[np.ndarray | None, ...]

    def tree(self, predictor: Any, table: np.ndarray, index: int) -> tuple[Nodes, np.ndarray]:
        """One predictor's tree spelled out, and the leaves it kept (in leaf order)."""
        is_leaf = table["is_leaf"].astype(bool)
        leaf = np.full(len(table), -1, dtype=np.int64)
        leaf[is_leaf] = np.arange(int(is_leaf.sum()))
        feature = np.where(is_leaf, -1, table["feature_idx"].astype(np.int64))
        categories: list[frozenset[int] | None] = [None] * len(table)
        for node in np.flatnonzero(~is_leaf & table["is_categorical"].astype(bool)):
            bitset = predictor.raw_left_cat_bitsets[table["bitset_idx"][node]]
            known = self.known[feature[node]]
            assert known is not None
            categories[node] = frozenset(
                code for code, raw in enumerate(known.astype(np.int64))
                if (int(bitset[raw // 32]) >> (raw % 32)) & 1)
        routed = RoutedTree(
            feature=np.where(is_leaf, -1, self.column_of[np.maximum(feature, 0)]),
            threshold=table["num_threshold"].astype(np.float64),
            left=table["left"].astype(np.int64), right=table["right"].astype(np.int64),
            leaf=leaf, gap_left=table["missing_go_to_left"].astype(bool),
            categories_left=categories)
        nodes, kept = spell_out(routed, self.layout, int(is_leaf.sum()), index)
        check_kept(kept, table["count"][is_leaf], f"tree {index}", "count",
                   "missing_go_to_left and raw_left_cat_bitsets")
        return nodes, kept


def hist_routing(estimator: Any, names: list[str], gaps: frozenset[str] = frozenset()
                 ) -> HistRouting | None:
    """The routing of a fitted histogram booster, None when it has no gaps or categories
    (``gaps``: columns known to have held gaps, whatever the splits show)."""
    tables = [p.nodes for per_round in estimator._predictors for p in per_round]
    n = len(names)
    is_categorical = _remapped_categorical(estimator, n)
    gappy = _gap_columns(tables, n) | _encoded_gaps(estimator, is_categorical)
    if not is_categorical.any() and not gappy.any() and not gaps & set(names):
        return None
    column_of = _column_order(estimator, n)
    labels = _category_labels(estimator, is_categorical)
    known = tuple(np.asarray(estimator._bin_mapper.bin_thresholds_[i]) if is_categorical[i]
                  else None for i in range(n))
    feature_of = np.argsort(column_of)  # the predictor feature of each table column
    gappy[feature_of[[j for j, name in enumerate(names) if name in gaps]]] = True
    columns = [Column(name, _shown(known[i], labels.get(i)), bool(gappy[i]))
               for name, i in zip(names, feature_of.tolist(), strict=True)]
    return HistRouting(Layout.of(columns), column_of.astype(np.int64), known)


def _shown(known: np.ndarray | None, labels: list[Any] | None) -> tuple[Any, ...] | None:
    """What a categorical feature's known codes show: their labels, else the codes
    themselves; None for a numeric feature."""
    if known is None:
        return None
    return tuple(labels[r] if labels is not None else int(r) for r in known.astype(np.int64))


def _remapped_categorical(estimator: Any, n: int) -> np.ndarray:
    """Per predictor feature, whether it is categorical (all False for a model without
    categories)."""
    is_categorical = getattr(estimator, "_is_categorical_remapped", None)
    return np.zeros(n, bool) if is_categorical is None else np.asarray(is_categorical, bool)


def _column_order(estimator: Any, n: int) -> np.ndarray:
    """Per predictor feature, its table column: the model's own encoder puts the
    categorical columns first."""
    original = getattr(estimator, "is_categorical_", None)
    if getattr(estimator, "_preprocessor", None) is not None and original is not None:
        original = np.asarray(original, bool)
        return np.concatenate([np.flatnonzero(original), np.flatnonzero(~original)])
    return np.arange(n)


def _gap_columns(tables: list[np.ndarray], n: int) -> np.ndarray:
    """Per predictor feature, whether some split sends gaps away from its larger child."""
    gaps = np.zeros(n, dtype=bool)
    for table in tables:
        inner = np.flatnonzero(~table["is_leaf"].astype(bool))
        children = np.concatenate([table["left"][inner], table["right"][inner]])
        if not np.isin(children, np.arange(len(table))).all():
            continue  # broken nodes: the tree's validation names them
        larger_left = table["count"][table["left"][inner]] > table["count"][table["right"][inner]]
        odd = table["missing_go_to_left"][inner].astype(bool) != larger_left
        gaps[table["feature_idx"][inner[odd]]] = True
    return gaps


def _category_labels(estimator: Any, is_categorical: np.ndarray) -> dict[int, list[Any]]:
    """Per categorical predictor feature, the category each code stands for (from the
    model's own ``OrdinalEncoder``; absent when it was fitted on codes)."""
    preprocessor = getattr(estimator, "_preprocessor", None)
    if preprocessor is None:
        return {}
    encoder = preprocessor.named_transformers_["encoder"]
    features = np.flatnonzero(is_categorical)
    return {int(i): [c.item() if isinstance(c, np.generic) else c for c in categories]
            for i, categories in zip(features, encoder.categories_)}


def _encoded_gaps(estimator: Any, is_categorical: np.ndarray) -> np.ndarray:
    """Per predictor feature, whether the model's own encoder met a gap in that categorical
    column (it lists NaN as the column's last category)."""
    gaps = np.zeros(is_categorical.size, dtype=bool)
    for i, categories in _category_labels(estimator, is_categorical).items():
        last = categories[-1] if categories else None
        gaps[i] = isinstance(last, float) and np.isnan(last)
    return gaps


def routed_columns(estimator: Any, names: list[str], gaps: frozenset[str] = frozenset()
                   ) -> tuple[list[str], InputMap | None]:
    """The model's feature names once its gaps and categories are spelled out, and how the
    table's columns become them (``names`` and None for a model without either)."""
    routing = hist_routing(estimator, names, gaps) if hasattr(estimator, "_predictors") \
        else None
    if routing is None:
        return names, None
    return list(routing.layout.names), routing.layout.inputs()
