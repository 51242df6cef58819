"""A randomForest's splits on factors, spelled out as splits the IR holds (`frontends.gaps`).

randomForest splits a factor column of ``ncat`` levels by a set of its levels: the node's
``xbestsplit`` is a bitmask whose bit k (from the lowest) set sends level k + 1 left (its
C code: ``(split >> (x - 1)) & 1``). The levels are the forest's ``xlevels``, by column. A
forest with such splits is read over one 0/1 feature per level of each factor column
(`gaps.Layout`), its trees spelled out, and an input map turns the custodian's column of
level names into those features.
"""

from __future__ import annotations

import numpy as np

from treeleaks.frontends.boosting import Nodes
from treeleaks.frontends.gaps import Column, Layout, RoutedTree, spell_out
from treeleaks.frontends.r_files import RValue, element
from treeleaks.ir.model import ModelFormatError


def factor_layout(forest: RValue, names: list[str], ncat: np.ndarray) -> Layout | None:
    """The columns with each factor's levels (from ``forest$xlevels``), None when no column
    is a factor."""
    if not (ncat > 1).any():
        return None
    xlevels = element(forest, "xlevels", "VEC", within="forest$", owner="randomForest")
    if len(xlevels.value) != len(names):
        raise ModelFormatError("randomForest field 'forest$xlevels' must hold an entry per "
                               f"column ({len(names)})")
    columns = []
    for j, name in enumerate(names):
        levels = xlevels.value[j]
        if ncat[j] <= 1:
            columns.append(Column(name))
            continue
        if levels.kind != "STR" or len(levels.value) != ncat[j]:
            raise ModelFormatError(f"randomForest field 'forest$xlevels' must name the "
                                   f"{int(ncat[j])} levels of {name!r}")
        columns.append(Column(name, tuple(levels.value)))
    return Layout.of(columns)


def spelled_tree(t: int, nodes: Nodes, split: np.ndarray, ncat: np.ndarray, layout: Layout
                 ) -> tuple[Nodes, np.ndarray]:
    """Tree ``t`` (``nodes`` over the columns, ``split`` each node's ``xbestsplit``) over the
    layout's features, and the leaves it kept in order."""
    feature, threshold, left, right, leaf = nodes
    categories: list[frozenset[int] | None] = [None] * feature.size
    for node in np.flatnonzero(feature >= 0).tolist():
        levels = int(ncat[feature[node]])
        if levels > 1:
            categories[node] = _left_levels(t, node, split[node], levels)
    routed = RoutedTree(feature, np.where(feature >= 0, threshold, 0.0), left, right, leaf,
                        np.zeros(feature.size, dtype=bool), categories)
    return spell_out(routed, layout, int(leaf.max(initial=-1)) + 1, t)


def _left_levels(t: int, node: int, mask: float, levels: int) -> frozenset[int]:
    """The level codes (0-based) a factor split's bitmask sends left."""
    if mask != np.round(mask) or not 0 < mask < 2.0 ** levels:
        raise ModelFormatError(f"randomForest tree {t + 1} node {node + 1}: its factor split "
                               f"{mask:g} is no set of the column's {levels} levels")
    return frozenset(k for k in range(levels) if (int(mask) >> k) & 1)
