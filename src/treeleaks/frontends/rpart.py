"""R's ``rpart`` trees (classification and regression) → the IR, read from the saved object.

rpart keeps a data frame ``frame`` with one row per node in depth-first order (its row
names are the node numbers: node k's children are 2k and 2k + 1), each row's ``n``
(training rows through the node), ``yval2`` (a classifier's per-class counts) or ``yval``
and ``dev`` (a regressor's mean target and sum of squared deviations), and a matrix
``splits``: per internal node, in frame order, the primary split and then its
``ncompete`` competing and ``nsurrogate`` surrogate splits. A numerical primary split
sends rows with ``x < index`` left when ``ncat`` is -1 and right when it is +1; the IR
goes left when ``x <= threshold``, so the threshold is the float just below ``index`` and
a +1 split's children swap. A categorical split (``ncat`` > 1) sends the levels ``csplit``
marks 1 left and 3 right (2, a level the node's rows did not hold, goes with the larger
child: rpart would ask a surrogate); a tree with such splits is spelled out over one feature
per level (`gaps.spell_out`, the levels from the ``xlevels`` attribute) with an input map.
IR node i is frame row i (before a spelling out), and the leaves are numbered in frame
order, so ``where`` (each training row's frame row) reads as leaves directly
(`rpart_leaves`). Every node's counts (a regressor's
mean and variance too) are kept as `NodeStats`, so an edited frame shows as a
contradiction. A frame whose counts are all 0 is a stripped file (`treeleaks strip`): its
splits and leaf outputs are read, without counts. Rows with a gap go down surrogates,
which the IR does not follow.
"""

from __future__ import annotations

import numpy as np

from treeleaks.frontends.gaps import Column, Layout, RoutedTree, spell_out
from treeleaks.frontends.r_files import RValue, element, numbers, strings
from treeleaks.ir.model import ModelFormatError, ReleasedModel, Tree
from treeleaks.ir.node_stats import VARIANCE, NodeStats
from treeleaks.runtime.errors import UnsupportedModelError

LEAF = "<leaf>"


def read_rpart(obj: RValue) -> ReleasedModel:
    """The `ReleasedModel` of an rpart tree (a classifier's or a regressor's)."""
    frame = element(obj, "frame", "VEC")
    method = strings(element(obj, "method", "STR"), "method")[0]
    if method not in ("class", "anova"):
        raise UnsupportedModelError(f"rpart method {method!r}: treeleaks reads "
                                    "classification ('class') and regression ('anova') trees")
    var = strings(_column(frame, "var", "STR"), "frame$var")
    nodes = len(var)
    n = numbers(_column(frame, "n"), "frame$n", nodes)
    ids = _row_names(frame, nodes)
    names = element(obj, "ordered", "LGL").names
    *split, categories = _structure(obj, frame, var, ids, names, n)
    is_leaf = split[0] < 0
    leaf_of_node = np.full(nodes, -1, dtype=np.int64)
    leaf_of_node[is_leaf] = np.arange(int(is_leaf.sum()))
    shape, layout = _spelled((*split, leaf_of_node), categories, obj, names)
    stripped = not n.any()  # counts set to 0 (treeleaks strip): the splits and outputs remain
    keep_nodes = not stripped and layout is None  # node i is frame row i
    if method == "class":
        classes = strings(_attr(obj, "ylevels"), "ylevels")
        counts = _class_counts(frame, nodes, len(classes))
        tree = Tree(*shape, counts[is_leaf], n_samples=n[is_leaf],
                    nodes=NodeStats(counts.astype(np.float64), n) if keep_nodes else None)
        _check_sums(counts, n)
        model = ReleasedModel([tree], list(classes), names, source="R rpart",
                              facts={"method": "class"})
    else:
        yval = numbers(_column(frame, "yval"), "frame$yval", nodes, whole=False)
        dev = numbers(_column(frame, "dev"), "frame$dev", nodes, whole=False)
        tree = Tree(*shape, n[is_leaf, None], n_samples=n[is_leaf], values=yval[is_leaf],
                    impurity=None if stripped else dev[is_leaf] / n[is_leaf],
                    nodes=NodeStats(n[:, None].astype(np.float64), n, yval, dev / n,
                                    VARIANCE) if keep_nodes else None)
        model = ReleasedModel([tree], [], names, source="R rpart", task="regression",
                              facts={"method": "anova"})
    if layout is not None:
        model.feature_names, model.inputs = list(layout.names), layout.inputs()
    model.validate()
    return model


def _class_counts(frame: RValue, nodes: int, k: int) -> np.ndarray:
    """Every node's class counts, from ``frame$yval2``."""
    yval2 = _column(frame, "yval2").value
    if yval2.ndim != 2 or yval2.shape[0] != nodes or yval2.shape[1] < 1 + k:
        raise ModelFormatError("rpart field 'frame$yval2' must hold a column per class "
                               "for every node")
    return _whole(yval2[:, 1:1 + k], "frame$yval2")


def _spelled(shape: tuple[np.ndarray, ...], categories: list[frozenset[int] | None],
             obj: RValue, names: list[str]) -> tuple[tuple[np.ndarray, ...], Layout | None]:
    """The tree as it is when it splits numbers only; else spelled out over one feature per
    level of each factor it splits (`gaps.spell_out`), with the layout."""
    if all(c is None for c in categories):
        return shape, None
    xlevels = _attr(obj, "xlevels")
    columns = []
    for name in names:
        levels = xlevels.get(name)
        columns.append(Column(name) if levels is None else
                       Column(name, tuple(strings(levels, f"xlevels${name}"))))
    layout = Layout.of(columns)
    feature, threshold, left, right, leaf = shape
    if any(c is not None and layout.columns[feature[node]].categories is None
           for node, c in enumerate(categories)):
        raise ModelFormatError("rpart splits a variable by categories that 'xlevels' does "
                               "not list as a factor")
    routed = RoutedTree(feature, threshold, left, right, leaf,
                        np.zeros(feature.size, dtype=bool), categories)
    n_leaves = int(leaf.max(initial=-1)) + 1
    spelled, kept = spell_out(routed, layout, n_leaves)
    if kept.size != n_leaves:
        raise ModelFormatError("rpart's categorical splits leave a leaf no row can reach: an "
                               "edited file?")
    return spelled, layout


def rpart_leaves(obj: RValue, model: ReleasedModel) -> np.ndarray:
    """Each training row's leaf (IR numbering: the leaves in frame order), in training
    order, from ``where`` (each row's frame row)."""
    where = numbers(element(obj, "where", "INT"), "where") - 1
    var = strings(_column(element(obj, "frame", "VEC"), "var", "STR"), "frame$var")
    is_leaf = np.array([v == LEAF for v in var])
    leaf_of_row = np.where(is_leaf, np.cumsum(is_leaf) - 1, -1)
    if (where < 0).any() or (where >= len(leaf_of_row)).any() or (
            leaf_of_row[where] < 0).any():
        raise ModelFormatError("rpart field 'where' names a frame row that is not a leaf")
    return leaf_of_row[where]


def _structure(obj: RValue, frame: RValue, var: list[str], ids: np.ndarray,
               names: list[str], n: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every node's feature, threshold and children (IR conventions; see the module doc),
    and the level codes a categorical split sends left (None for a numerical one)."""
    nodes = len(var)
    feature = np.full(nodes, -1, dtype=np.int64)
    threshold = np.zeros(nodes)
    left = np.full(nodes, -1, dtype=np.int64)
    right = np.full(nodes, -1, dtype=np.int64)
    categories: list[frozenset[int] | None] = [None] * nodes
    position = {int(node): row for row, node in enumerate(ids)}
    splits = element(obj, "splits", "REAL") if any(v != LEAF for v in var) else None
    extra = (numbers(_column(frame, "ncompete"), "frame$ncompete", nodes)
             + numbers(_column(frame, "nsurrogate"), "frame$nsurrogate", nodes))
    row = 0
    for node, name in enumerate(var):
        if name == LEAF:
            continue
        split = _primary_split(obj, splits, row, int(ids[node]), name, names, position, n)
        feature[node], threshold[node], left[node], right[node], categories[node] = split
        row += 1 + int(extra[node])
    return feature, threshold, left, right, categories


def _primary_split(obj: RValue, splits: RValue | None, row: int, node_id: int, name: str,
                   names: list[str], position: dict[int, int], n: np.ndarray
                   ) -> tuple[int, float, int, int, frozenset[int] | None]:
    """Node ``node_id``'s split (row ``row`` of ``splits``, on variable ``name``): its
    feature, threshold and children (``position``: each node's frame row), and for a
    categorical split the level codes it sends left."""
    if splits is None or splits.value.ndim != 2 or splits.value.shape[1] < 4 or \
            row >= splits.value.shape[0]:
        raise ModelFormatError("rpart field 'splits' has no primary split for node "
                               f"{node_id}")
    if name not in names:
        raise ModelFormatError(f"rpart node {node_id} splits on {name!r}, which "
                               "is not one of the tree's variables")
    ncat, cut = splits.value[row, 1], splits.value[row, 3]
    kids = [position.get(2 * node_id), position.get(2 * node_id + 1)]
    if None in kids:
        raise ModelFormatError(f"rpart's frame lacks a child of node {node_id}")
    if ncat > 1:
        return (names.index(name), 0.0, kids[0], kids[1],
                _left_levels(obj, int(cut), int(ncat), node_id, n[kids[0]] >= n[kids[1]]))
    if ncat != -1 and ncat != 1:
        raise ModelFormatError(f"rpart node {node_id}: its split's ncat {ncat:g} is neither "
                               "a direction (-1, 1) nor a number of levels")
    low, high = kids if ncat < 0 else kids[::-1]  # the child of x < cut goes left
    return names.index(name), np.nextafter(cut, -np.inf), low, high, None


def _left_levels(obj: RValue, index: int, levels: int, node_id: int, left_larger: bool
                 ) -> frozenset[int]:
    """The level codes (0-based) row ``index`` of ``csplit`` sends to the left child (1:
    left, 3: right, 2: a level no training row of the node held, which goes with the
    larger child here; rpart would ask a surrogate split)."""
    csplit = element(obj, "csplit", "INT")
    table = np.asarray(csplit.value)
    if table.ndim != 2 or not 1 <= index <= table.shape[0] or table.shape[1] < levels:
        raise ModelFormatError(f"rpart node {node_id}: its categorical split names row "
                               f"{index} of 'csplit', which it does not have")
    directions = table[index - 1, :levels]
    if not np.isin(directions, (1, 2, 3)).all():
        raise ModelFormatError(f"rpart field 'csplit' row {index} must hold 1, 2 or 3 per "
                               "level")
    absent_left = left_larger
    return frozenset(k for k, d in enumerate(directions.tolist())
                     if d == 1 or (d == 2 and absent_left))


def _row_names(frame: RValue, nodes: int) -> np.ndarray:
    """The frame's row names: the node numbers."""
    rows = _attr(frame, "row.names")
    values = rows.value if rows.kind != "STR" else [int(r) for r in rows.value if r]
    ids = np.asarray(values, dtype=np.int64)
    if ids.shape != (nodes,) or ids[0] != 1:
        raise ModelFormatError("rpart's frame must name its rows by node number, the root 1")
    return ids


def _check_sums(counts: np.ndarray, n: np.ndarray) -> None:
    if not np.array_equal(counts.sum(axis=1), n):
        node = int(np.argmax(counts.sum(axis=1) != n))
        raise ModelFormatError(f"rpart frame row {node + 1}: its class counts (yval2) do not "
                               "add up to its n")


def _whole(values: np.ndarray, name: str) -> np.ndarray:
    if not np.isfinite(values).all() or (values < 0).any() or (values != np.round(values)).any():
        raise ModelFormatError(f"rpart field {name!r} must hold whole counts")
    return values.astype(np.int64)


def _attr(obj: RValue, name: str) -> RValue:
    value = obj.attr(name)
    if value is None:
        raise ModelFormatError(f"the R object has no attribute {name!r}")
    return value


def _column(frame: RValue, name: str, kind: str | None = None) -> RValue:
    """A column of rpart's ``frame``, refused naming it if missing."""
    return element(frame, name, kind, within="frame$", owner="rpart")
