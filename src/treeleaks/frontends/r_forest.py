"""R's ``randomForest`` forests (classification and regression) → the IR, read from the
saved object's ``forest`` list.

Per tree t (a column of each matrix), node i (1-based, the root 1, ``ndbigtree[t]``
nodes used): ``nodestatus`` -1 marks a leaf; an internal node splits column
``bestvar`` at ``xbestsplit`` and sends ``x <= xbestsplit`` to its left daughter
(``treemap[i, 1, t]`` for a classifier, ``leftDaughter[i, t]`` for a regressor) and the
rest right, as the IR does. A leaf's ``nodepred`` is its class (1-based) or its mean
target. A split on a factor (``ncat`` > 1: a bitmask of its levels) is spelled out over one
feature per level (`treeleaks.frontends.r_factors`), with an input map from the level names.

randomForest stores no row counts at any node: the IR's trees have their splits and every
count 0 (what `ReleasedModel.counts_released` reads as a file without counts), each leaf's
output kept apart (`Forest.outputs`) to check routing against R's predictions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from treeleaks.frontends.gaps import Layout
from treeleaks.frontends.r_factors import factor_layout, spelled_tree
from treeleaks.frontends.r_files import RValue, element, numbers, strings
from treeleaks.ir.model import ModelFormatError, ReleasedModel, Tree
from treeleaks.runtime.errors import UnsupportedModelError

TERMINAL = -1  # nodestatus of a leaf, in both kinds of forest


@dataclass(frozen=True)
class Forest:
    """A randomForest read: its IR and each tree's leaf outputs (a classifier's class
    indices into ``model.classes``, a regressor's mean targets), in leaf order."""

    model: ReleasedModel
    outputs: list[np.ndarray]


def read_random_forest(obj: RValue) -> Forest:
    """The IR of a randomForest (see the module doc)."""
    kind = strings(element(obj, "type", "STR"), "type")[0]
    if kind not in ("classification", "regression"):
        raise UnsupportedModelError(f"randomForest of type {kind!r}: treeleaks reads "
                                    "classification and regression forests")
    forest = element(obj, "forest", "VEC")
    ncat_field = _part(forest, "ncat")
    names = ncat_field.names
    ncat = numbers(ncat_field, "forest$ncat", len(names))
    sizes = numbers(_part(forest, "ndbigtree"), "forest$ndbigtree")
    ntree = len(sizes)
    status = _matrix(forest, "nodestatus", ntree)
    nodes = status.shape[0]
    if kind == "classification":
        treemap = np.asarray(_part(forest, "treemap").value)
        if treemap.shape != (nodes, 2, ntree):
            raise ModelFormatError(f"randomForest field 'forest$treemap' must have shape "
                                   f"({nodes}, 2, {ntree})")
        daughters = treemap[:, 0, :], treemap[:, 1, :]
        classes = strings(element(obj, "classes", "STR"), "classes")
    else:
        daughters = (_matrix(forest, "leftDaughter", ntree),
                     _matrix(forest, "rightDaughter", ntree))
        classes = []
    bestvar = _matrix(forest, "bestvar", ntree)
    split = _matrix(forest, "xbestsplit", ntree, whole=False)
    pred = _matrix(forest, "nodepred", ntree, whole=kind == "classification")
    layout = factor_layout(forest, list(names), ncat)
    trees, outputs = [], []
    for t in range(ntree):
        size = int(sizes[t])
        if not 0 < size <= nodes:
            raise ModelFormatError(f"randomForest tree {t + 1}: ndbigtree {size} is not "
                                   f"between 1 and nrnodes {nodes}")
        columns = (status, daughters[0], daughters[1], bestvar, split, pred)
        tree, out = _tree(t, _RNodes(*(c[:size, t] for c in columns)), names, ncat,
                          max(1, len(classes)), layout)
        trees.append(tree)
        outputs.append(out)
    if classes and any(((o < 0) | (o >= len(classes))).any() for o in outputs):
        raise ModelFormatError("randomForest field 'forest$nodepred' names a class the "
                               "forest does not have")
    model = ReleasedModel(trees, list(classes),
                          list(names) if layout is None else list(layout.names),
                          bootstrap=True, source="R randomForest", task=kind,
                          facts={"ntree": ntree, "max_samples": None})
    if layout is not None:
        model.inputs = layout.inputs()
    model.validate()
    return Forest(model, outputs)


class _RNodes(NamedTuple):
    """One tree's nodes as the forest's matrices hold them (a column each, cut to the
    nodes it uses; R's 1-based numbers)."""

    status: np.ndarray
    left: np.ndarray
    right: np.ndarray
    bestvar: np.ndarray
    split: np.ndarray
    pred: np.ndarray


def _tree(t: int, nodes: _RNodes, names: list[str], ncat: np.ndarray, columns: int,
          layout: Layout | None) -> tuple[Tree, np.ndarray]:
    """One tree in the IR (node i is R's node i + 1; spelled out over the layout's
    features when the forest splits factors) and its leaves' outputs."""
    status, left, right, bestvar, split, pred = nodes
    is_leaf = status == TERMINAL
    inner = ~is_leaf
    if ((bestvar[inner] < 1) | (bestvar[inner] > len(names))).any():
        raise ModelFormatError(f"randomForest tree {t + 1}: 'forest$bestvar' names a column "
                               "the forest does not have")
    feature = np.where(is_leaf, -1, bestvar - 1).astype(np.int64)
    leaf_of_node = np.full(len(status), -1, dtype=np.int64)
    leaf_of_node[is_leaf] = np.arange(int(is_leaf.sum()))
    shape = (feature, np.where(is_leaf, 0.0, split), np.where(is_leaf, -1, left - 1),
             np.where(is_leaf, -1, right - 1), leaf_of_node)
    out = pred[is_leaf] - (1 if columns > 1 else 0)  # a classifier's classes: 1-based
    if layout is not None:
        shape, kept = spelled_tree(t, shape, split, ncat, layout)
        out = out[kept]
    tree = Tree(*shape, np.zeros((out.size, columns), dtype=np.int64))
    if columns == 1:
        tree.values = out.astype(np.float64)
    return tree, out


def _matrix(forest: RValue, name: str, ntree: int, whole: bool = True) -> np.ndarray:
    """A ``(nrnodes, ntree)`` matrix of the forest list."""
    value = _part(forest, name)
    array = np.asarray(value.value)
    if array.ndim != 2 or array.shape[1] != ntree:
        raise ModelFormatError(f"randomForest field 'forest${name}' must have one column per "
                               f"tree ({ntree})")
    return numbers(value, f"forest${name}", whole=whole).reshape(array.shape)


def _part(forest: RValue, name: str) -> RValue:
    """An element of the ``forest`` list, refused naming it if missing."""
    return element(forest, name, within="forest$", owner="randomForest")
