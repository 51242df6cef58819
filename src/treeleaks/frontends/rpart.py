"""R's ``rpart`` trees (classification and regression) → the IR, read from the saved object.

rpart keeps a data frame ``frame`` with one row per node in depth-first order (its row
names are the node numbers: node k's children are 2k and 2k + 1), each row's ``n``
(training rows through the node), ``yval2`` (a classifier's per-class counts) or ``yval``
and ``dev`` (a regressor's mean target and sum of squared deviations), and a matrix
``splits``: per internal node, in frame order, the primary split and then its
``ncompete`` competing and ``nsurrogate`` surrogate splits. A numerical primary split
sends rows with ``x < index`` left when ``ncat`` is -1 and right when it is +1; the IR
goes left when ``x <= threshold``, so the threshold is the float just below ``index`` and
a +1 split's children swap. A categorical split (``ncat`` > 1) is refused. IR node i is
frame row i, and the leaves are numbered in frame order, so ``where`` (each training row's
frame row) reads as leaves directly (`rpart_leaves`). Every node's counts (a regressor's
mean and variance too) are kept as `NodeStats`, so an edited frame shows as a
contradiction. A frame whose counts are all 0 is a stripped file (`treeleaks strip`): its
splits and leaf outputs are read, without counts. Rows with a gap go down surrogates,
which the IR does not follow.
"""

from __future__ import annotations

import numpy as np

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
    feature, threshold, left, right = _structure(obj, frame, var, ids, names)
    is_leaf = feature < 0
    leaf_of_node = np.full(nodes, -1, dtype=np.int64)
    leaf_of_node[is_leaf] = np.arange(int(is_leaf.sum()))
    stripped = not n.any()  # counts set to 0 (treeleaks strip): the splits and outputs remain
    if method == "class":
        classes = strings(_attr(obj, "ylevels"), "ylevels")
        yval2 = _column(frame, "yval2").value
        if yval2.ndim != 2 or yval2.shape[0] != nodes or yval2.shape[1] < 1 + len(classes):
            raise ModelFormatError("rpart field 'frame$yval2' must hold a column per class "
                                   "for every node")
        counts = _whole(yval2[:, 1:1 + len(classes)], "frame$yval2")
        tree = Tree(feature, threshold, left, right, leaf_of_node, counts[is_leaf],
                    n_samples=n[is_leaf],
                    nodes=None if stripped else NodeStats(counts.astype(np.float64), n))
        _check_sums(counts, n)
        model = ReleasedModel([tree], list(classes), names, source="R rpart",
                              facts={"method": "class"})
    else:
        yval = numbers(_column(frame, "yval"), "frame$yval", nodes, whole=False)
        dev = numbers(_column(frame, "dev"), "frame$dev", nodes, whole=False)
        tree = Tree(feature, threshold, left, right, leaf_of_node, n[is_leaf, None],
                    n_samples=n[is_leaf], values=yval[is_leaf],
                    impurity=None if stripped else dev[is_leaf] / n[is_leaf],
                    nodes=None if stripped else NodeStats(n[:, None].astype(np.float64), n,
                                                          yval, dev / n, VARIANCE))
        model = ReleasedModel([tree], [], names, source="R rpart", task="regression",
                              facts={"method": "anova"})
    model.validate()
    return model


def rpart_leaves(obj: RValue, model: ReleasedModel) -> np.ndarray:
    """Each training row's leaf (IR numbering), in training order, from ``where``."""
    where = numbers(element(obj, "where", "INT"), "where") - 1
    leaf_of_row = model.trees[0].leaf_of_node
    if (where < 0).any() or (where >= len(leaf_of_row)).any() or (
            leaf_of_row[where] < 0).any():
        raise ModelFormatError("rpart field 'where' names a frame row that is not a leaf")
    return leaf_of_row[where]


def _structure(obj: RValue, frame: RValue, var: list[str], ids: np.ndarray,
               names: list[str]) -> tuple[np.ndarray, ...]:
    """Every node's feature, threshold and children (IR conventions; see the module doc)."""
    nodes = len(var)
    feature = np.full(nodes, -1, dtype=np.int64)
    threshold = np.zeros(nodes)
    left = np.full(nodes, -1, dtype=np.int64)
    right = np.full(nodes, -1, dtype=np.int64)
    position = {int(node): row for row, node in enumerate(ids)}
    splits = element(obj, "splits", "REAL") if any(v != LEAF for v in var) else None
    extra = (numbers(_column(frame, "ncompete"), "frame$ncompete", nodes)
             + numbers(_column(frame, "nsurrogate"), "frame$nsurrogate", nodes))
    row = 0
    for node, name in enumerate(var):
        if name == LEAF:
            continue
        if splits is None or splits.value.ndim != 2 or splits.value.shape[1] < 4 or \
                row >= splits.value.shape[0]:
            raise ModelFormatError("rpart field 'splits' has no primary split for node "
                                   f"{int(ids[node])}")
        if name not in names:
            raise ModelFormatError(f"rpart node {int(ids[node])} splits on {name!r}, which "
                                   "is not one of the tree's variables")
        ncat, cut = splits.value[row, 1], splits.value[row, 3]
        if abs(ncat) != 1:
            raise UnsupportedModelError(
                f"rpart node {int(ids[node])} splits the categorical variable {name!r} into "
                "groups of categories; treeleaks reads rpart's numerical splits only so far")
        kids = [position.get(2 * int(ids[node])), position.get(2 * int(ids[node]) + 1)]
        if None in kids:
            raise ModelFormatError(f"rpart's frame lacks a child of node {int(ids[node])}")
        low, high = kids if ncat < 0 else kids[::-1]  # the child of x < cut goes left
        feature[node], threshold[node] = names.index(name), np.nextafter(cut, -np.inf)
        left[node], right[node] = low, high
        row += 1 + int(extra[node])
    return feature, threshold, left, right


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
