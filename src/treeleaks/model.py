"""The framework-neutral model IR: exactly what an adversary sees in a released tree model.

Frontends (scikit-learn, DP forests, ...) translate their models into a `ReleasedModel`;
everything downstream (attacks, verification, reports) reads only this.

A tree is stored as its split structure (Treelite-style nodes: go left when
``x[feature] <= threshold``) with per-leaf class counts. Each leaf's *box* (the per-feature
interval ``lower < x <= upper`` of its root-to-leaf path) is derived from the nodes, so rows
and cells are routed in O(depth) rather than intersected with every leaf.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from treeleaks.errors import TreeleaksError

FORMAT_VERSION = 1


class ModelFormatError(TreeleaksError, ValueError):
    """A serialized model is malformed; the message names the field at fault."""


@dataclass(frozen=True)
class NoiseMechanism:
    """Noise added to released leaf counts (DP forests): Laplace of ``scale`` per count."""

    kind: str
    epsilon: float
    scale: float


@dataclass(eq=False)
class Tree:
    """One tree: nodes (``feature == -1`` marks a leaf) and integer per-class leaf counts.

    ``counts[leaf, class]`` is the multiplicity-weighted number of training rows of that
    class in the leaf (what the model's class frequencies are computed from).
    ``n_samples[leaf]`` is the number of *distinct* training rows, when the framework stores
    it; ``multiplicities[row]`` is how often each training row was drawn for this tree, when
    the release exposes it (scikit-learn bootstrap forests do, through their random state).
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf_of_node: np.ndarray
    counts: np.ndarray
    n_samples: np.ndarray | None = None
    multiplicities: np.ndarray | None = None

    @property
    def n_leaves(self) -> int:
        return int(self.counts.shape[0])

    @property
    def depth(self) -> int:
        depth = np.zeros(len(self.feature), dtype=np.int64)
        for node in range(len(self.feature)):
            if self.feature[node] >= 0:
                depth[self.left[node]] = depth[node] + 1
                depth[self.right[node]] = depth[node] + 1
        return int(depth.max())

    def node_boxes(self, n_features: int) -> tuple[np.ndarray, np.ndarray]:
        """Bounds ``(lower, upper)`` of every node's region, ``(n_nodes, n_features)``:
        lower < x <= upper."""
        lower = np.full((len(self.feature), n_features), -np.inf)
        upper = np.full((len(self.feature), n_features), np.inf)
        for node in self.internal_nodes():
            f, t = self.feature[node], self.threshold[node]
            for child in (self.left[node], self.right[node]):
                lower[child], upper[child] = lower[node], upper[node]
            upper[self.left[node], f] = min(upper[node, f], t)
            lower[self.right[node], f] = max(lower[node, f], t)
        return lower, upper

    def leaf_boxes(self, n_features: int) -> tuple[np.ndarray, np.ndarray]:
        """Each leaf's box ``(lower, upper)``, ``(n_leaves, n_features)``, in leaf order."""
        lower, upper = self.node_boxes(n_features)
        leaf_nodes = np.flatnonzero(self.feature < 0)
        order = np.argsort(self.leaf_of_node[leaf_nodes])
        return lower[leaf_nodes[order]], upper[leaf_nodes[order]]

    def internal_nodes(self) -> list[int]:
        """Internal nodes, each before its children."""
        order, stack = [], [0]
        while stack:
            node = stack.pop()
            if self.feature[node] >= 0:
                order.append(node)
                stack.extend((self.left[node], self.right[node]))
        return order

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf index reached by each row of ``X``."""
        node = np.zeros(X.shape[0], dtype=np.int64)
        active = self.feature[node] >= 0
        while active.any():
            idx = np.flatnonzero(active)
            n = node[idx]
            go_left = X[idx, self.feature[n]] <= self.threshold[n]
            node[idx] = np.where(go_left, self.left[n], self.right[n])
            active[idx] = self.feature[node[idx]] >= 0
        return self.leaf_of_node[node]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "feature": self.feature.tolist(),
            "threshold": [
                float(t) if f >= 0 else None for f, t in zip(self.feature, self.threshold)
            ],
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "leaf_of_node": self.leaf_of_node.tolist(),
            "counts": self.counts.tolist(),
        }
        if self.n_samples is not None:
            out["n_samples"] = self.n_samples.tolist()
        if self.multiplicities is not None:
            out["multiplicities"] = self.multiplicities.tolist()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], n_classes: int) -> Tree:
        try:
            feature = np.asarray(data["feature"], dtype=np.int64)
            threshold = np.array(
                [np.nan if t is None else t for t in data["threshold"]], dtype=np.float64
            )
            counts = np.asarray(data["counts"], dtype=np.float64)
            if counts.size and not np.array_equal(counts, np.round(counts)):
                raise ModelFormatError(
                    "tree 'counts' must be whole numbers of training rows; round or "
                    "re-export the counts before auditing"
                )
            tree = cls(
                feature=feature,
                threshold=threshold,
                left=np.asarray(data["left"], dtype=np.int64),
                right=np.asarray(data["right"], dtype=np.int64),
                leaf_of_node=np.asarray(data["leaf_of_node"], dtype=np.int64),
                counts=counts.astype(np.int64),
                n_samples=_optional_int_array(data.get("n_samples")),
                multiplicities=_optional_int_array(data.get("multiplicities")),
            )
        except KeyError as exc:
            raise ModelFormatError(f"tree is missing the field {exc.args[0]!r}") from exc
        tree.validate(n_classes)
        return tree

    def validate(self, n_classes: int) -> None:
        """Check the node arrays describe one binary tree and the counts fit it."""
        n_nodes = len(self.feature)
        for name in ("threshold", "left", "right", "leaf_of_node"):
            if len(getattr(self, name)) != n_nodes:
                raise ModelFormatError(f"tree field {name!r} has a length other than 'feature'")
        is_leaf = self.feature < 0
        n_leaves = int(is_leaf.sum())
        if self.counts.ndim != 2 or self.counts.shape != (n_leaves, n_classes):
            raise ModelFormatError(
                f"tree 'counts' must have shape (n_leaves={n_leaves}, n_classes={n_classes}), "
                f"got {self.counts.shape}"
            )
        if sorted(self.leaf_of_node[is_leaf].tolist()) != list(range(n_leaves)):
            raise ModelFormatError("tree 'leaf_of_node' must number the leaves 0..n_leaves-1")
        children = np.concatenate([self.left[~is_leaf], self.right[~is_leaf]])
        if sorted(children.tolist()) != list(range(1, n_nodes)):
            raise ModelFormatError("tree nodes must form one binary tree rooted at node 0")


def _optional_int_array(values: Any) -> np.ndarray | None:
    return None if values is None else np.asarray(values, dtype=np.int64)


@dataclass(eq=False)
class ReleasedModel:
    """What a released tree model exposes: its trees, classes, features and training facts."""

    trees: list[Tree]
    classes: list[Any]
    feature_names: list[str]
    label_name: str = "label"
    bootstrap: bool = False
    noise: NoiseMechanism | None = None
    source: str = ""
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def n_trees(self) -> int:
        return len(self.trees)

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def n_rows(self) -> int | None:
        """Training-set size N when every tree saw every row once without noise, else None."""
        if self.bootstrap or self.noise is not None or not self.trees:
            return None
        return int(self.trees[0].counts.sum())

    def thresholds(self) -> list[np.ndarray]:
        """Sorted distinct split thresholds of each feature over all trees."""
        per_feature: list[list[float]] = [[] for _ in range(self.n_features)]
        for tree in self.trees:
            internal = tree.feature >= 0
            for f, t in zip(tree.feature[internal], tree.threshold[internal]):
                per_feature[f].append(float(t))
        return [np.unique(np.asarray(v, dtype=np.float64)) for v in per_feature]

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf index of each row in each tree, shape ``(n_rows, n_trees)``."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(
                f"expected rows with {self.n_features} features, got shape {X.shape}"
            )
        return np.column_stack([tree.apply(X) for tree in self.trees]) if self.trees else (
            np.zeros((X.shape[0], 0), dtype=np.int64)
        )

    def class_index(self, y: Any) -> np.ndarray:
        """Map labels to indices into ``classes``; unknown labels are an error."""
        lookup = {c: i for i, c in enumerate(self.classes)}
        try:
            return np.array([lookup[v] for v in np.asarray(y).tolist()], dtype=np.int64)
        except KeyError as exc:
            raise ValueError(
                f"label {exc.args[0]!r} is not one of the model's classes {self.classes}"
            ) from exc

    def leaf_counts_of(self, X: np.ndarray, y: Any) -> list[np.ndarray]:
        """Per-tree ``(n_leaves, n_classes)`` counts that the rows ``(X, y)`` produce."""
        leaves = self.apply(X)
        cls = self.class_index(y)
        out = []
        for t, tree in enumerate(self.trees):
            counts = np.zeros(tree.counts.shape, dtype=np.int64)
            np.add.at(counts, (leaves[:, t], cls), 1)
            out.append(counts)
        return out

    # --- serialization -------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "treeleaks.ReleasedModel",
            "version": FORMAT_VERSION,
            "source": self.source,
            "classes": [_plain(c) for c in self.classes],
            "feature_names": list(self.feature_names),
            "label_name": self.label_name,
            "bootstrap": self.bootstrap,
            "noise": None if self.noise is None else vars(self.noise).copy(),
            "facts": self.facts,
            "trees": [tree.to_dict() for tree in self.trees],
        }

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict())
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReleasedModel:
        trees = data.get("trees", []) if isinstance(data, dict) else None
        if not isinstance(trees, list) or not all(isinstance(t, dict) for t in trees):
            raise ModelFormatError(
                "a treeleaks model is a JSON object whose 'trees' are objects; "
                "export it with ReleasedModel.to_json"
            )
        if data.get("format") != "treeleaks.ReleasedModel":
            raise ModelFormatError(
                "not a treeleaks model: the JSON needs \"format\": \"treeleaks.ReleasedModel\""
            )
        if data.get("version") != FORMAT_VERSION:
            raise ModelFormatError(
                f"model format version {data.get('version')!r} is not supported "
                f"(this treeleaks reads version {FORMAT_VERSION})"
            )
        try:
            classes = list(data["classes"])
            noise = data.get("noise")
            model = cls(
                trees=[Tree.from_dict(t, len(classes)) for t in data["trees"]],
                classes=classes,
                feature_names=list(data["feature_names"]),
                label_name=data.get("label_name", "label"),
                bootstrap=bool(data.get("bootstrap", False)),
                noise=None if noise is None else NoiseMechanism(**noise),
                source=data.get("source", ""),
                facts=dict(data.get("facts", {})),
            )
        except KeyError as exc:
            raise ModelFormatError(f"model is missing the field {exc.args[0]!r}") from exc
        model.check_features()
        return model

    def check_features(self) -> None:
        """Every split must name one of the model's features."""
        for tree in self.trees:
            used = tree.feature[tree.feature >= 0]
            if used.size and used.max() >= self.n_features:
                raise ModelFormatError(
                    f"a tree splits on feature {int(used.max())} but the model names only "
                    f"{self.n_features} features"
                )

    @classmethod
    def from_json(cls, text_or_path: str | Path) -> ReleasedModel:
        path = Path(text_or_path) if not str(text_or_path).lstrip().startswith("{") else None
        text = path.read_text() if path is not None else str(text_or_path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ModelFormatError(f"model JSON does not parse: {exc}") from exc
        return cls.from_dict(data)


def _plain(value: Any) -> Any:
    """NumPy scalars to plain Python, so class labels survive JSON."""
    return value.item() if isinstance(value, np.generic) else value
