"""How a LightGBM model text file routes gaps and categories, for `frontends.gaps`.

Each split's ``decision_type`` holds, in bit 0, whether it splits a category, in bit 1
whether a gap goes left, and in bits 2-3 its column's missing type, which LightGBM fixes
per column when it bins the training rows:

- *NaN*: the column held gaps (or, for a category, categories too rare to keep), so a gap
  goes to the split's default side: the file's own statement that the column has gaps;
- *None*: the column held none, and a gap met later is read as the value 0 (``0 <= t``
  decides; the input map encodes a gap as 0); with ``use_missing=false`` gaps were read
  as 0 in training too, so a 0 in a rebuilt row may stand for a gap;
- *Zero* (``zero_as_missing=true``): 0 and a gap both go to the default side; refused.

A categorical split keeps in ``cat_boundaries``/``cat_threshold`` a bitset of the category
codes that go left; a gap, a negative code or a code outside the bitset goes right. Pandas
categories are coded by their position in ``pandas_categorical`` (written at the end of
the file, one list per categorical column in column order); without it the codes are the
column's values, those ``feature_infos`` lists and those the splits name (a code LightGBM
found too rare to keep is routed like a gap, and comes back as one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from treeleaks.frontends.boosting import Nodes
from treeleaks.frontends.gaps import Column, Layout, RoutedTree, check_kept, spell_out
from treeleaks.frontends.numbers import checked
from treeleaks.ir.inputs import InputMap
from treeleaks.ir.model import ModelFormatError
from treeleaks.runtime.errors import UnsupportedModelError

CATEGORICAL, DEFAULT_LEFT, MISSING_SHIFT = 1, 2, 2  # decision_type's bits
NONE, ZERO, NAN = 0, 1, 2  # the missing types


@dataclass(frozen=True)
class LightGBMRouting:
    """A model's layout, and per column the code of each category value (categorical
    columns only) and whether a gap goes by the value 0 (missing type None)."""

    layout: Layout
    index_of: dict[int, dict[int, int]]
    facts: dict[str, Any] = field(default_factory=dict)
    fills: dict[int, float] = field(default_factory=dict)  # a gap read as 0 (type None)

    def inputs(self) -> InputMap:
        """How the table's columns become the model's features."""
        return self.layout.inputs(self.fills)

    def tree(self, block: dict[str, str], index: int, feature: np.ndarray,
             threshold: np.ndarray, decision: np.ndarray, left: np.ndarray,
             right: np.ndarray, count: np.ndarray) -> tuple[Nodes, np.ndarray]:
        """One tree spelled out (nodes numbered internals first, then leaves) and the
        leaves it kept; a leaf no value can reach must hold no row."""
        n_internal, n_leaves = feature.size, count.size
        bitsets = _bitsets(block, index)
        categories: list[frozenset[int] | None] = [None] * (n_internal + n_leaves)
        gap_left = np.zeros(n_internal + n_leaves, dtype=bool)
        for node in range(n_internal):
            column = int(feature[node])
            if decision[node] & CATEGORICAL:
                codes = _codes_of(bitsets, threshold[node], index)
                index_of = self.index_of[column]
                categories[node] = frozenset(index_of[c] for c in codes if c in index_of)
            elif _missing(decision[node]) == NAN:
                gap_left[node] = bool(decision[node] & DEFAULT_LEFT)
            else:  # missing type None: a gap is read as 0
                gap_left[node] = threshold[node] >= 0.0
        routed = RoutedTree(
            feature=np.concatenate([feature, np.full(n_leaves, -1)]),
            threshold=np.concatenate([threshold, np.zeros(n_leaves)]),
            left=np.concatenate([left, np.full(n_leaves, -1)]),
            right=np.concatenate([right, np.full(n_leaves, -1)]),
            leaf=np.concatenate([np.full(n_internal, -1), np.arange(n_leaves)]),
            gap_left=gap_left, categories_left=categories)
        nodes, kept = spell_out(routed, self.layout, n_leaves, index)
        check_kept(kept, count, f"LightGBM tree {index}", "leaf_count",
                   "cat_threshold (the category codes each split sends left)")
        return nodes, kept


def lightgbm_routing(head: dict[str, str], trees: list[dict[str, str]], names: list[str],
                     params: dict[str, str]) -> LightGBMRouting | None:
    """The routing a model file's splits state, None when no split routes a gap or a
    category (every column numeric, missing type None). The categorical columns are those
    the parameters (``categorical_feature``), ``feature_infos`` or a split name."""
    infos = head.get("feature_infos", "").split()
    split_kinds = _split_kinds(trees, len(names), names)
    categorical = _categorical_columns(infos, split_kinds, params)
    gaps = [split_kinds[j][1] for j in range(len(names))]
    if not categorical and not any(gaps):
        return None
    _check_one_kind(categorical, split_kinds, names)
    labels, facts = _labels(head.get("pandas_categorical", ""), categorical, names)
    named = _named_codes(trees)
    columns, index_of = [], {}
    for j, name in enumerate(names):
        if j not in categorical:
            columns.append(Column(name, None, gaps[j]))
            continue
        coded = _category_codes(name, labels.get(j), infos[j] if j < len(infos) else "none",
                                named.get(j, set()), facts)
        if coded is None:  # declared categorical, never split, its codes unlisted
            columns.append(Column(name, None, False))
            continue
        values, shown = coded
        index_of[j] = {value: i for i, value in enumerate(values)}
        columns.append(Column(name, shown, gaps[j]))
    fills = {j: 0.0 for j in range(len(names)) if split_kinds[j][2] and not gaps[j]}
    return LightGBMRouting(Layout.of(columns), index_of, facts, fills)


def _categorical_columns(infos: list[str], split_kinds: list[list[bool]],
                         params: dict[str, str]) -> list[int]:
    """The columns ``feature_infos`` lists categories of, a split reads as a category or
    the parameters declare (``categorical_feature``)."""
    declared = params.get("categorical_feature", "").replace(",", " ").split()
    listed = {int(index) for index in declared if index.isdigit()}
    return [j for j in range(len(split_kinds)) if (j < len(infos) and _is_category_info(
        infos[j])) or split_kinds[j][0] or j in listed]


def _check_one_kind(categorical: list[int], split_kinds: list[list[bool]],
                    names: list[str]) -> None:
    """Refuse a categorical column that a split also reads as a number."""
    for j in categorical:
        if split_kinds[j][2]:
            raise ModelFormatError(
                f"LightGBM model file: feature {names[j]!r} is split both as a number and as "
                "a category (decision_type, feature_infos): an edited file?")


def _category_codes(name: str, label: list[Any] | None, info: str, named: set[int],
                    facts: dict[str, Any]) -> tuple[list[int], tuple[Any, ...]] | None:
    """A categorical column's codes and what each shows: its ``pandas_categorical`` list
    (``label``), else the codes ``feature_infos`` (``info``) and the splits name; None
    when neither names one. What the reader should know goes into ``facts``."""
    if label is not None:
        values = list(range(len(label)))
        unlisted = sorted(c for c in named if c >= len(values))
        if unlisted:
            facts[f"categories of {name!r} a split names but pandas_categorical lacks"] = (
                f"codes {', '.join(map(str, unlisted))}: no row of the listed categories "
                "holds them")
        return values, tuple(label)
    seen = {int(float(c)) for c in info.split(":")} if _is_category_info(info) else set()
    values = sorted(c for c in seen | named if c >= 0)
    return (values, tuple(values)) if values else None


def _missing(decision: int) -> int:
    return (int(decision) >> MISSING_SHIFT) & 3


def _split_kinds(trees: list[dict[str, str]], n_columns: int, names: list[str]
                 ) -> list[list[bool]]:
    """Per column: split as a category, missing type NaN on one of its splits, split as a
    number; a missing type Zero is refused."""
    kinds = [[False, False, False] for _ in range(n_columns)]
    for index, block in enumerate(trees):
        where = f"LightGBM tree {index}"
        feature = checked(block.get("split_feature", "").split(), where, "split_feature",
                          whole=True, low=0, high=n_columns - 1)
        decision = checked(block.get("decision_type", "").split(), where, "decision_type",
                           whole=True, low=0)
        for column, kind in zip(feature, decision, strict=False):
            if _missing(kind) == ZERO:
                raise UnsupportedModelError(
                    f"LightGBM tree {index} splits feature {names[column]!r} with "
                    "zero_as_missing=true (a 0 and a gap both go to one side, neither by its "
                    "value); treeleaks reads LightGBM's default zero_as_missing=false")
            kinds[column][0] |= bool(kind & CATEGORICAL)
            kinds[column][1] |= _missing(kind) == NAN
            kinds[column][2] |= not kind & CATEGORICAL
    return kinds


def _is_category_info(info: str) -> bool:
    """Whether a ``feature_infos`` entry lists categories (``-1:2:0``), not a range
    (``[0:4]``) or an unused column (``none``)."""
    return not info.startswith("[") and info != "none"


def _labels(raw: str, categorical: list[int], names: list[str]
            ) -> tuple[dict[int, list[Any]], dict[str, Any]]:
    """Per categorical column, its pandas categories by code, when the file keeps one list
    per categorical column (``pandas_categorical``)."""
    if not raw.strip() or raw.strip() == "null":
        return {}, {}
    try:
        lists = json.loads(raw)
    except ValueError:
        raise ModelFormatError("LightGBM model file: 'pandas_categorical' is not JSON: an "
                               "edited file?") from None
    if not isinstance(lists, list) or not all(isinstance(x, list) for x in lists):
        raise ModelFormatError("LightGBM model file: 'pandas_categorical' is not a list of "
                               "lists of categories: an edited file?")
    if len(lists) != len(categorical):
        return {}, {"pandas_categorical": (
            f"{len(lists)} lists for {len(categorical)} categorical columns "
            f"({', '.join(names[j] for j in categorical)}): categories are shown by code")}
    return dict(zip(categorical, lists, strict=True)), {}


def _named_codes(trees: list[dict[str, str]]) -> dict[int, set[int]]:
    """Per column, every category code a split of it sends left."""
    named: dict[int, set[int]] = {}
    for index, block in enumerate(trees):
        bitsets = _bitsets(block, index)
        if not bitsets:
            continue
        where = f"LightGBM tree {index}"
        feature, decision = (checked(block.get(key, "").split(), where, key)
                             for key in ("split_feature", "decision_type"))
        # only a categorical split's threshold (its bitset's index) is read here; a numeric
        # one may be inf (a split of the gaps alone), which the tree's reader checks
        threshold = block.get("threshold", "").split()
        for column, kind, at in zip(feature, decision, threshold, strict=False):
            if int(kind) & CATEGORICAL:
                at = checked([at], where, "threshold")[0]
                named.setdefault(int(column), set()).update(_codes_of(bitsets, at, index))
    return named


def _bitsets(block: dict[str, str], index: int) -> list[np.ndarray]:
    """A tree's category bitsets (``cat_threshold`` words between ``cat_boundaries``)."""
    where = f"LightGBM tree {index}"
    n_cat = int(checked([block.get("num_cat", "0")], where, "num_cat", whole=True, low=0)[0])
    if not n_cat:
        return []
    for key in ("cat_boundaries", "cat_threshold"):
        if key not in block:
            raise ModelFormatError(f"{where}: field {key!r} is missing")
    words = checked(block["cat_threshold"].split(), where, "cat_threshold", whole=True,
                    low=0, high=2**32 - 1)
    bounds = checked(block["cat_boundaries"].split(), where, "cat_boundaries", whole=True,
                     low=0, high=words.size)
    if bounds.size != n_cat + 1 or bounds[0] != 0 or (np.diff(bounds) < 0).any():
        raise ModelFormatError(f"{where}: field 'cat_boundaries' does not cut "
                               f"'cat_threshold' into {n_cat} bitsets (num_cat): an edited "
                               "file?")
    return [words[a:b] for a, b in pairwise(bounds)]


def _codes_of(bitsets: list[np.ndarray], threshold: float, index: int) -> set[int]:
    """The codes a categorical split (its threshold the bitset's index) sends left."""
    if threshold != int(threshold) or not 0 <= threshold < len(bitsets):
        raise ModelFormatError(f"LightGBM tree {index}: a categorical split's 'threshold' "
                               f"holds {threshold:g}, not one of its {len(bitsets)} bitsets "
                               "(num_cat): an edited file?")
    words = bitsets[int(threshold)]
    return {32 * w + b for w, word in enumerate(words) for b in range(32)
            if (int(word) >> b) & 1}
