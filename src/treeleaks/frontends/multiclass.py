"""What every multiclass booster's frontend shares: its first round's class counts.

A booster of K classes grows K trees a round, tree k fitting class k's softmax gradient
g = p_k - [y = k] and hessian h ∝ p_k(1 - p_k). In the first round every row starts at the
same scores, so every row has the same p_k and tree k's leaf value is a known function of
the leaf's count of class k: each first-round leaf gives one class's count against the
rest (`Tree.apart`). Later trees keep their row counts pooled over the classes (or none,
XGBoost), and their leaf values give each leaf's sums of g and h, where p follows from the
row's leaves in the earlier rounds through the softmax (`LeafGradients` with a start score
per class): side rows of the solver, as a binary booster's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treeleaks.frontends.boosting import Nodes
from treeleaks.ir.model import Tree
from treeleaks.runtime.errors import UnsupportedModelError

LATER_SUMS = ("first round: each tree's class counts against the rest, derived from its "
              "leaf values; later rounds: rows per leaf pooled over the classes (XGBoost: "
              "none), and each leaf's softmax gradient and hessian sums")


def softmax(scores: np.ndarray) -> np.ndarray:
    """The probabilities of start scores (float64)."""
    shifted = np.exp(np.asarray(scores, dtype=np.float64) - np.max(scores))
    return shifted / shifted.sum()


def multiclass_trees(nodes: list[Nodes], rows: list[np.ndarray | None],
                     class_counts: list[np.ndarray]) -> list[Tree]:
    """The IR's trees, round after round of K = ``len(class_counts)`` trees: the first
    round's tree k counting class k apart from the rest, later trees pooled (a tree of
    ``rows`` None has no counts at all)."""
    n_classes = len(class_counts)
    trees = []
    for index, (shape, count) in enumerate(zip(nodes, rows, strict=True)):
        n_leaves = int(np.unique(shape[4][shape[0] < 0]).size)  # leaves, not paths to them
        counts = np.zeros((n_leaves, n_classes), dtype=np.int64)
        if count is None:
            trees.append(Tree(*shape, counts, counted=False))
            continue
        count = np.asarray(count, dtype=np.int64)
        apart = index if index < n_classes else None
        tree = Tree(*shape, counts, n_samples=count.copy(), pooled=True, apart=apart)
        if apart is None:
            counts[:, 0] = count
        else:
            counts[:, apart] = class_counts[apart]
            counts[:, tree.rest_column] = count - class_counts[apart]
        trees.append(tree)
    return trees


def check_round(class_counts: list[np.ndarray], n_rows: int, framework: str) -> None:
    """The first round's class counts add up to the N rows, one class each; else the
    derivation missed an option, and the model is refused."""
    total = int(sum(int(c.sum()) for c in class_counts))
    if total != n_rows:
        raise UnsupportedModelError(
            f"the first round of this {framework} multiclass booster gives class counts "
            f"adding up to {total} rows, not its {n_rows}: it was trained with an option "
            "the derivation leaves out (weights, an initial score); treeleaks refuses to "
            "guess its classes")


def multiclass_facts(n_classes: int, n_trees: int, **more: Any) -> dict[str, Any]:
    """The facts every multiclass booster states (its fields: `stored.multiclass_counts`)."""
    return {"classes": n_classes, "rounds": n_trees // n_classes, **more}
