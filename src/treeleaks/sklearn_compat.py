"""What differs between scikit-learn versions, in one low module: the scikit-learn frontend
and the pruning defence both read fitted trees through it, so defences need not import a
frontend."""

from __future__ import annotations

from typing import Any

import numpy as np


def node_class_counts(sk_tree: Any) -> np.ndarray:
    """``(n_nodes, n_classes)`` weighted class counts a classifier's tree stores at every
    node: scikit-learn keeps class fractions (>= 1.4) or raw counts (before)."""
    value = np.asarray(sk_tree.value, dtype=np.float64)[:, 0, :]
    weighted = np.asarray(sk_tree.weighted_n_node_samples, dtype=np.float64)
    fractions = np.allclose(value.sum(axis=1), 1.0)
    return value * weighted[:, None] if fractions else value


def pipeline_steps(step: Any, path: str) -> list[tuple[str, Any]]:
    """The steps inside ``step`` (pipelines and column transformers opened), named by path."""
    kind = type(step).__name__
    if kind == "Pipeline":
        return [leaf for name, inner in step.steps
                for leaf in pipeline_steps(inner, f"{path}/{name}")]
    if kind == "ColumnTransformer":
        return [leaf for name, inner, _ in step.transformers_
                for leaf in pipeline_steps(inner, f"{path}/{name}")]
    return [] if isinstance(step, str) or step is None else [(path, step)]
