"""DL8.5 frontend: an optimal tree from ``pydl85`` as a one-tree `ReleasedModel`.

DL8.5 trees split binary features (its ``left`` child holds feature = 1) and store each
leaf's error, not its class counts, so the counts are those of the training rows routed
through the tree: what the tree would release if its leaves kept counts as scikit-learn's do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treeleaks.ir.description import StoredField, describe
from treeleaks.ir.model import ReleasedModel, Tree


def from_dl85(root: dict[str, Any], feature_names: list[str], X: np.ndarray,
              y: np.ndarray) -> ReleasedModel:
    """The fitted ``DL85Classifier.tree_`` as the IR, leaf counts from ``(X, y)``."""
    feature: list[int] = []
    left: list[int] = []
    right: list[int] = []

    def add(node: dict[str, Any]) -> int:
        index = len(feature)
        feature.append(node.get("feat", -1))
        left.append(-1)
        right.append(-1)
        if "feat" in node:
            left[index] = add(node["right"])  # x <= 0.5: feature = 0
            right[index] = add(node["left"])
        return index

    add(root)
    feat = np.array(feature)
    leaves = int((feat < 0).sum())
    leaf_of_node = np.full(len(feat), -1)
    leaf_of_node[feat < 0] = np.arange(leaves)
    classes = np.unique(y)
    tree = Tree(feat, np.full(len(feat), 0.5), np.array(left), np.array(right), leaf_of_node,
                np.zeros((leaves, len(classes)), dtype=np.int64))
    model = ReleasedModel([tree], classes.tolist(), list(feature_names), source="pydl85")
    tree.counts = model.leaf_counts_of(X, y)[0]
    model.description = describe(model, "DL8.5", "DL85Classifier", [StoredField(
        "counts", "each leaf's class counts, of the rows given")])
    return model
