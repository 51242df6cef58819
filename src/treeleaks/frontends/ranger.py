"""R's ``ranger`` forests (classification, probability and regression) → the IR, read from the
saved object's ``forest`` list (ranger 0.11 and later).

Per tree t, node i (0-based, the root 0): ``child.nodeIDs[[t]]`` holds the left and right
daughters, both 0 at a leaf; an inner node sends ``x <= split.values[i]`` of column
``split.varIDs[i]`` (0-based into ``independent.variable.names``) left, as the IR does. A
leaf's ``split.values`` is its class value (a classifier: one of ``class.values``, whose
labels are ``levels``) or its mean target (a regressor); a probability forest keeps each
leaf's class fractions of its drawn rows in ``terminal.class.counts``. A split on an
unordered factor (``is.ordered`` false: a bitmask of levels) is refused. A factor coded by
ranger itself (``respect.unordered.factors = "order"``) is read through its
``covariate.levels``; one left to R's own codes (the default, "ignore") keeps no levels, so
the data must give it as numbers.

Like randomForest, ranger keeps no row counts at any node: the trees come with every count 0
(a file without counts) and each leaf's output apart (`Forest.outputs`).
"""

from __future__ import annotations

import numpy as np

from treeleaks.frontends.r_files import RValue, element, numbers, strings
from treeleaks.frontends.r_forest import Forest
from treeleaks.ir.inputs import CodedColumn, InputColumn, InputMap, NumberColumn
from treeleaks.ir.model import ModelFormatError, ReleasedModel, Tree
from treeleaks.runtime.errors import UnsupportedModelError

KINDS = {"Classification": "classification", "Probability estimation": "probability",
         "Regression": "regression"}


def read_ranger(obj: RValue) -> Forest:
    """The IR of a ranger forest (see the module doc); a probability forest's outputs are
    each leaf's class fractions (leaves by classes)."""
    forest = element(obj, "forest", "VEC", owner="ranger")
    kind = _kind(forest)
    if forest.get("dependent.varID") is not None:
        raise UnsupportedModelError("this ranger forest was saved by ranger 0.10 or older "
                                    "(it has forest$dependent.varID); load it in a current "
                                    "ranger and save it again with saveRDS")
    names = strings(_part(forest, "independent.variable.names", "STR"),
                    "forest$independent.variable.names")
    ordered = np.asarray(_part(forest, "is.ordered", "LGL").value).astype(bool)
    children = _per_tree(forest, "child.nodeIDs")
    varids, values = _per_tree(forest, "split.varIDs"), _per_tree(forest, "split.values")
    ntree = len(children)
    if not ntree or not len(varids) == len(values) == ntree:
        raise ModelFormatError("ranger fields 'forest$child.nodeIDs', 'forest$split.varIDs' "
                               "and 'forest$split.values' must have one entry per tree")
    classes, class_values = _classes(forest, kind)
    fractions = _per_tree(forest, "terminal.class.counts") if kind == "probability" else None
    trees, outputs = [], []
    for t in range(ntree):
        tree, out = _tree(t, children[t], varids[t], values[t], names, ordered,
                          class_values, None if fractions is None else fractions[t])
        trees.append(tree)
        outputs.append(out)
    model = ReleasedModel(trees, classes, names, bootstrap=_replaced(obj),
                          source="R ranger", task="regression" if kind == "regression"
                          else "classification", facts={"ntree": ntree, "max_samples": None})
    _coded_factors(model, forest)
    model.validate()
    return Forest(model, outputs)


def _coded_factors(model: ReleasedModel, forest: RValue) -> None:
    """A forest fitted with ``respect.unordered.factors = "order"`` keeps each factor's
    levels in the order it coded them (``covariate.levels``: level k is code k, from 1) and
    splits the codes like numbers: those columns become codes from 0 (every threshold on
    them shifted by one) read from the level names by the input map."""
    levels = forest.get("covariate.levels")
    if levels is None or levels.kind != "VEC" or not any(
            v.kind == "STR" for v in levels.value):
        return
    names = model.feature_names
    if levels.names != names:
        raise ModelFormatError("ranger field 'forest$covariate.levels' must hold an entry per "
                               f"column ({len(names)})")
    mapped: list[InputColumn] = []
    for j, (name, level) in enumerate(zip(names, levels.value, strict=True)):
        if level.kind != "STR":
            mapped.append(NumberColumn(name, j))
            continue
        for tree in model.trees:
            tree.threshold = np.where(tree.feature == j, tree.threshold - 1.0, tree.threshold)
        mapped.append(CodedColumn(name, j, tuple(strings(level, "forest$covariate.levels"))))
    model.inputs = InputMap(tuple(mapped), tuple(names))


def forest_kind(obj: RValue) -> str:
    """``"classification"``, ``"probability"`` or ``"regression"``: the forest's tree type."""
    return _kind(element(obj, "forest", "VEC", owner="ranger"))


def _kind(forest: RValue) -> str:
    kind = strings(_part(forest, "treetype", "STR"), "forest$treetype")[0]
    if kind not in KINDS:
        raise UnsupportedModelError(f"ranger forest of type {kind!r}: treeleaks reads "
                                    f"{', '.join(KINDS)} forests")
    return KINDS[kind]


def _replaced(obj: RValue) -> bool:
    """Whether the trees drew their rows with replacement (ranger's ``replace``)."""
    replace = obj.get("replace")
    return replace is None or bool(np.asarray(replace.value).reshape(-1)[:1].all())


def _classes(forest: RValue, kind: str) -> tuple[list[str], np.ndarray]:
    """The class labels, in the order of ``class.values`` (the leaves' values)."""
    if kind == "regression":
        return [], np.zeros(0)
    levels = strings(_part(forest, "levels", "STR"), "forest$levels")
    class_values = numbers(_part(forest, "class.values"), "forest$class.values")
    if ((class_values < 1) | (class_values > len(levels))).any() or \
            len(set(class_values.tolist())) != class_values.size:
        raise ModelFormatError("ranger field 'forest$class.values' must name distinct levels "
                               "of 'forest$levels'")
    if kind == "classification":  # predict.ranger labels class.values[k] with levels[k]
        if class_values.size != len(levels):
            raise ModelFormatError("ranger fields 'forest$class.values' and 'forest$levels' "
                                   "must have the same length")
        return list(levels), class_values
    return [levels[int(v) - 1] for v in class_values], class_values


def _tree(t: int, children: RValue, varids: RValue, values: RValue, names: list[str],
          ordered: np.ndarray, class_values: np.ndarray,
          fractions: RValue | None) -> tuple[Tree, np.ndarray]:
    """Tree ``t`` in the IR and its leaves' outputs."""
    if children.kind != "VEC" or len(children.value) != 2:
        raise ModelFormatError(f"ranger tree {t + 1}: 'forest$child.nodeIDs' must hold a left "
                               "and a right daughter per node")
    left, right = (numbers(c, "forest$child.nodeIDs") for c in children.value)
    feature = numbers(varids, "forest$split.varIDs", left.size)
    split = numbers(values, "forest$split.values", left.size, whole=False)
    leaf = (left == 0) & (right == 0)
    _check_splits(t, left, right, feature, leaf, names, ordered)
    leaf_of_node = np.full(left.size, -1, dtype=np.int64)
    leaf_of_node[leaf] = np.arange(int(leaf.sum()))
    tree = Tree(np.where(leaf, -1, feature).astype(np.int64), np.where(leaf, 0.0, split),
                np.where(leaf, -1, left).astype(np.int64),
                np.where(leaf, -1, right).astype(np.int64), leaf_of_node,
                np.zeros((int(leaf.sum()), max(1, class_values.size)), dtype=np.int64))
    if fractions is not None:
        return tree, _leaf_fractions(t, fractions, np.flatnonzero(leaf), class_values.size)
    if not class_values.size:
        tree.values = split[leaf]
        return tree, split[leaf]
    return tree, _leaf_classes(t, split[leaf], class_values)


def _check_splits(t: int, left: np.ndarray, right: np.ndarray, feature: np.ndarray,
                  leaf: np.ndarray, names: list[str], ordered: np.ndarray) -> None:
    """Refuse a split pointing outside the tree or back up it, on a column the forest does
    not have, or on an unordered factor."""
    inner = ~leaf
    size = left.size
    if ((left[inner] <= np.flatnonzero(inner)) | (right[inner] <= np.flatnonzero(inner))
            | (left[inner] >= size) | (right[inner] >= size)).any():
        raise ModelFormatError(f"ranger tree {t + 1}: a split points outside the tree or back "
                               "up it: an edited or damaged file")
    if ((feature[inner] < 0) | (feature[inner] >= len(names))).any():
        raise ModelFormatError(f"ranger tree {t + 1}: 'forest$split.varIDs' names a column "
                               "the forest does not have")
    unordered = inner & ~ordered[np.clip(feature, 0, len(names) - 1)]
    if unordered.any():
        column = names[int(feature[np.argmax(unordered)])]
        raise UnsupportedModelError(
            f"ranger tree {t + 1} splits the unordered factor {column!r} into groups of its "
            "levels; treeleaks reads ranger's numerical and ordered splits only so far")


def _leaf_classes(t: int, values: np.ndarray, class_values: np.ndarray) -> np.ndarray:
    """A classification tree's leaves' classes, as indices into ``class_values``."""
    index = {float(v): k for k, v in enumerate(class_values)}
    if any(float(v) not in index for v in values):
        raise ModelFormatError(f"ranger tree {t + 1}: a leaf predicts a class value not in "
                               "'forest$class.values'")
    return np.array([index[float(v)] for v in values], dtype=np.int64)


def _leaf_fractions(t: int, fractions: RValue, leaves: np.ndarray, k: int) -> np.ndarray:
    """A probability tree's leaves' class fractions (leaves by classes)."""
    if fractions.kind != "VEC" or len(fractions.value) <= int(leaves.max(initial=0)):
        raise ModelFormatError(f"ranger tree {t + 1}: 'forest$terminal.class.counts' must "
                               "hold one entry per node")
    out = np.array([numbers(fractions.value[i], "forest$terminal.class.counts", k,
                            whole=False) for i in leaves.tolist()])
    if (out < 0).any() or not np.allclose(out.sum(axis=1), 1.0, atol=1e-9):
        raise ModelFormatError(f"ranger tree {t + 1}: a leaf's class fractions in "
                               "'forest$terminal.class.counts' do not add up to 1")
    return out


def _per_tree(forest: RValue, name: str) -> list[RValue]:
    """A per-tree list of the forest, refused naming it if missing."""
    return list(_part(forest, name, "VEC").value)


def _part(forest: RValue, name: str, kind: str | None = None) -> RValue:
    """An element of the ``forest`` list, refused naming it if missing."""
    return element(forest, name, kind, within="forest$", owner="ranger")
