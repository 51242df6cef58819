"""How an XGBoost model file routes gaps and categories, for `frontends.gaps`.

Every split has a side for a gap (``default_left``). Without gaps in a column, XGBoost
gives all its splits the same side (right for a number with ``tree_method='hist'`` or
``'approx'``, left with ``'exact'``; left for a category); with gaps each split takes the
side its gain prefers. So a column whose splits disagree held gaps, and gains a gap
feature. A column whose splits all agree may still have held gaps: a gap then routes
like a value beyond every threshold on that side, so such rows fit the model as such a
value (the input map encodes a gap as one), and come back as one. A categorical column
mostly cannot tell: without gaps every split sends a gap left, like a category no split
lists, so every categorical column a split reads gets a code for a gap; unless a split
sends a gap right (then the column held gaps), that code is a fallback, which a rebuilt
row takes only where the model leaves it no category.

A categorical split (``split_type`` 1) lists, in ``categories`` (cut per node by
``categories_nodes``, ``categories_segments`` and ``categories_sizes``), the codes that go
*right*; every other code goes left, and a gap to its default side. XGBoost 3 keeps each
column's categories in ``gradient_booster.model.cats`` (a pandas category's code is its
position there); an older file, or one fitted on codes, names none, and then the codes
are the column's values: 0 up to the largest a split lists, and one past it standing for
every code no split lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from treeleaks.frontends.boosting import Nodes
from treeleaks.frontends.gaps import Column, Layout, RoutedTree, check_kept, spell_out
from treeleaks.frontends.numbers import checked
from treeleaks.ir.inputs import InputMap
from treeleaks.ir.model import ModelFormatError

FILE = "XGBoost model file"
TREES = "learner.gradient_booster.model.trees"


@dataclass(frozen=True)
class Split:
    """What routing needs of one tree: per node its gap side, and per categorical split
    the codes it sends right."""

    default_left: np.ndarray
    right_codes: dict[int, frozenset[int]]


@dataclass(frozen=True)
class XGBoostRouting:
    """A model's layout, per categorical column its number of codes, and its splits."""

    layout: Layout
    n_codes: dict[int, int]
    splits: list[Split]
    facts: dict[str, Any] = field(default_factory=dict)
    fills: dict[int, float] = field(default_factory=dict)  # a gap past every threshold

    def inputs(self) -> InputMap:
        """How the table's columns become the model's features."""
        return self.layout.inputs(self.fills)

    def tree(self, index: int, nodes: Nodes, cover: np.ndarray) -> tuple[Nodes, np.ndarray]:
        """One tree's IR nodes (numeric splits already ``x <= t``) spelled out, and the
        leaves it kept; a leaf no value can reach must hold no row."""
        feature, threshold, left, right, leaf = nodes
        split = self.splits[index]
        categories: list[frozenset[int] | None] = [None] * feature.size
        for node, codes in split.right_codes.items():
            column = int(feature[node])
            categories[node] = frozenset(range(self.n_codes[column])) - codes
        routed = RoutedTree(feature, threshold, left, right, leaf,
                            split.default_left.astype(bool), categories)
        spelled, kept = spell_out(routed, self.layout, cover.size, index)
        check_kept(kept, cover, f"XGBoost tree {index}", "sum_hessian",
                   "categories (the codes each split sends right)")
        return spelled, kept


def xgboost_routing(learner: dict[str, Any], trees: list[dict[str, Any]], names: list[str]
                    ) -> XGBoostRouting | None:
    """The routing a model file's splits state, None when no column needs a gap feature
    and none is categorical."""
    splits = [_split(tree, index) for index, tree in enumerate(trees)]
    sides, cat_sides, listed = _gap_sides(trees, splits)
    both = sorted(set(sides) & set(cat_sides))
    if both:
        raise ModelFormatError(f"{FILE}: feature {_name(names, both[0])!r} is split both as a "
                               "number and as a category (split_type): an edited file?")
    labels = _labels(learner, len(names))
    categorical = _categorical(learner, cat_sides, labels, len(names))
    gaps = {j for j, s in sides.items() if len(s) > 1}
    if not categorical and not gaps:
        return None
    columns, n_codes, facts = [], {}, {}
    for j, name in enumerate(names):
        if j not in categorical:
            columns.append(Column(name, None, j in gaps))
            continue
        shown = _codes_shown(name, listed.get(j, set()), labels.get(j), facts)
        n_codes[j] = len(shown)
        # a split sending a gap right proves gaps; all left is what a column without any
        # gives, so the file cannot tell
        columns.append(Column(name, shown, j in cat_sides, cat_sides.get(j) == {1}))
    return XGBoostRouting(Layout.of(columns), n_codes, splits, facts,
                          _fills(trees, sides, gaps))


def _categorical(learner: dict[str, Any], cat_sides: dict[int, set[int]],
                 labels: dict[int, list[Any]], n_columns: int) -> list[int]:
    """The categorical columns: those a split reads as categories, and those the file
    types ``c`` and names the categories of."""
    types = learner.get("feature_types") or []
    return sorted(set(cat_sides) | {j for j, t in enumerate(types[:n_columns])
                                    if t == "c" and j in labels})


def _gap_sides(trees: list[dict[str, Any]], splits: list[Split]
               ) -> tuple[dict[int, set[int]], dict[int, set[int]], dict[int, set[int]]]:
    """Per column, the gap sides of its numeric splits and of its categorical ones, and
    the codes its categorical splits list."""
    sides: dict[int, set[int]] = {}  # per column, its numeric splits' gap sides
    cat_sides: dict[int, set[int]] = {}
    listed: dict[int, set[int]] = {}
    for index, (tree, split) in enumerate(zip(trees, splits, strict=True)):
        feature = checked(tree.get("split_indices", []), f"{FILE}: {TREES}[{index}]",
                          "split_indices", whole=True, low=0)
        is_leaf = checked(tree.get("left_children", []), f"{FILE}: {TREES}[{index}]",
                          "left_children", whole=True, low=-1) < 0
        for node in np.flatnonzero(~is_leaf[:feature.size]):
            column, side = int(feature[node]), int(split.default_left[node])
            if node in split.right_codes:
                cat_sides.setdefault(column, set()).add(side)
                listed.setdefault(column, set()).update(split.right_codes[node])
            else:
                sides.setdefault(column, set()).add(side)
    return sides, cat_sides, listed


def _codes_shown(name: str, named: set[int], label: list[Any] | None,
                 facts: dict[str, Any]) -> tuple[Any, ...]:
    """A categorical column's categories by code: the file's names (``label``), else the
    codes up to the largest a split lists and one past it; what the reader should know
    about them goes into ``facts``."""
    if label is not None:
        shown: tuple[Any, ...] = tuple(label)
        beyond = sorted(c for c in named if c >= len(shown))
        if beyond:
            facts[f"categories of {name!r} a split lists but the file's cats lack"] = (
                f"codes {', '.join(map(str, beyond))}: no row of the listed categories "
                "holds them")
        return shown
    shown = tuple(range(max(named, default=-1) + 2))
    facts[f"categories of {name!r}"] = (
        f"by code (the file names none); code {len(shown) - 1} stands for every code "
        "no split lists")
    return shown


def _fills(trees: list[dict[str, Any]], sides: dict[int, set[int]], gaps: set[int]
           ) -> dict[int, float]:
    """Per numeric column whose splits all send a gap one way, a value past all its
    thresholds on that side: what a gap in the table routes as."""
    agree = {j: s == {1} for j, s in sides.items() if j not in gaps}
    low: dict[int, float] = {}
    high: dict[int, float] = {}
    for tree in trees:
        for column, at, child in zip(tree["split_indices"], tree["split_conditions"],
                                     tree["left_children"], strict=False):
            if child >= 0 and column in agree:
                low[column] = min(low.get(column, np.inf), float(at))
                high[column] = max(high.get(column, -np.inf), float(at))
    return {j: float(np.floor(low[j]) - 1.0 if left else np.ceil(high[j]) + 1.0)
            for j, left in agree.items() if j in low}


def _split(tree: dict[str, Any], index: int) -> Split:
    """A tree's gap sides and categorical splits, every field checked."""
    where = f"{FILE}: {TREES}[{index}]"
    n = len(tree.get("left_children", []))
    side = checked(tree.get("default_left", [0] * n), where, "default_left", whole=True,
                   low=0, high=1)
    kinds = checked(tree.get("split_type", [0] * n), where, "split_type", whole=True, low=0,
                    high=1)
    if side.size != n or kinds.size != n:
        raise ModelFormatError(f"{where}: its node fields differ in length (a truncated or "
                               "edited file?)")
    if not kinds.any():
        return Split(side, {})
    right = _right_codes(tree, where)
    _check_categorical_nodes(kinds, right, n, where)
    return Split(side, right)


def _right_codes(tree: dict[str, Any], where: str) -> dict[int, frozenset[int]]:
    """Per categorical split, the codes it sends right: ``categories`` cut node by node."""
    nodes, segments, sizes = (checked(tree.get(key, []), where, key, whole=True, low=0)
                              for key in ("categories_nodes", "categories_segments",
                                          "categories_sizes"))
    codes = checked(tree.get("categories", []), where, "categories", whole=True, low=0)
    if not (nodes.size == segments.size == sizes.size) or (segments + sizes > codes.size).any():
        raise ModelFormatError(f"{where}: fields 'categories_nodes', 'categories_segments' "
                               "and 'categories_sizes' do not cut 'categories' node by node "
                               "(a truncated or edited file?)")
    return {int(node): frozenset(int(c) for c in codes[start:start + size])
            for node, start, size in zip(nodes, segments, sizes, strict=True)}


def _check_categorical_nodes(kinds: np.ndarray, right: dict[int, frozenset[int]], n: int,
                             where: str) -> None:
    """Refuse codes listed for a node that is not a categorical split, a categorical
    split without codes, or a node past the tree."""
    missing = sorted(set(np.flatnonzero(kinds == 1).tolist()) - set(right))
    if missing or any(kinds[node] != 1 for node in right if node < n):
        node = missing[0] if missing else next(k for k in right if kinds[k] != 1)
        raise ModelFormatError(f"{where}: node {node} has split_type "
                               f"{int(kinds[node])} but 'categories_nodes' "
                               f"{'lacks' if missing else 'lists'} it: an edited file?")
    if any(node >= n for node in right):
        raise ModelFormatError(f"{where}: field 'categories_nodes' names a node past the "
                               f"tree's {n} nodes: an edited file?")


def _labels(learner: dict[str, Any], n_columns: int) -> dict[int, list[Any]]:
    """Per categorical column, its categories by code, as XGBoost 3 keeps them
    (``gradient_booster.model.cats``: strings as UTF-8 bytes cut by ``offsets``, numbers as
    ``values``); empty for a file that names none."""
    cats = learner.get("gradient_booster", {}).get("model", {}).get("cats")
    if not isinstance(cats, dict) or not isinstance(cats.get("enc"), list):
        return {}
    out: dict[int, list[Any]] = {}
    where = f"{FILE}: learner.gradient_booster.model.cats.enc"
    for j, column in enumerate(cats["enc"][:n_columns]):
        if not isinstance(column, dict) or not column.get("values"):
            continue
        values = checked(column["values"], f"{where}[{j}]", "values", whole=True)
        if "offsets" in column:
            offsets = checked(column["offsets"], f"{where}[{j}]", "offsets", whole=True,
                              low=0, high=values.size)
            raw = bytes(int(v) & 0xFF for v in values)
            try:
                out[j] = [raw[a:b].decode("utf-8") for a, b in pairwise(offsets)]
            except UnicodeDecodeError:
                raise ModelFormatError(f"{where}[{j}]: its category names are not UTF-8: an "
                                       "edited file?") from None
        else:
            out[j] = [int(v) for v in values]
    return out


def _name(names: list[str], column: int) -> str:
    return names[column] if column < len(names) else str(column)
