"""What singling out hands over: a predicate (conditions on features and a label) that the
model says matches exactly one training row. Shared by the per-tree search
(`treeleaks.attacks.singling_out`) and the forest-cell search
(`treeleaks.attacks.singling_out_cells`), so neither imports the other for its types."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

CELLS_CUT = "forest cells not analysed"  # how a note starts when the forest's cells were cut


class Condition(NamedTuple):
    """``feature op threshold`` with ``op`` ``<=`` or ``>`` (the model's split semantics);
    a named tuple, cheap to build by the thousand."""

    feature: str
    op: str
    threshold: float

    def text(self, binary: bool) -> str:
        """Readable: ``col = 1`` / ``col = 0`` for a 0/1 column cut inside [0, 1)."""
        if binary and 0.0 <= self.threshold < 1.0:
            return f"{self.feature} = {1 if self.op == '>' else 0}"
        return f"{self.feature} {self.op} {self.threshold:g}"

    def to_dict(self) -> dict[str, Any]:
        return {"feature": self.feature, "op": self.op, "threshold": float(self.threshold)}


@dataclass(slots=True)
class Predicate:
    """A conjunction of ``conditions`` and ``label`` (a class, a regression leaf's value, or
    None when the tree's counts pool the classes)
    that the model says matches one training row. ``node`` is the node of tree ``tree`` (or
    the cell index, for a forest cell); ``proven`` and ``how`` say on what grounds.
    ``matches`` (after `singling_out.check_against_data`) are the data rows it selects."""

    tree: int | None
    node: int
    conditions: list[Condition]
    label: Any
    proven: bool
    how: str
    matches: list[int] | None = None

    def selects(self, frame: pd.DataFrame) -> np.ndarray:
        """Which rows of ``frame`` (the model's feature columns) fall in the box."""
        mask = np.ones(len(frame), dtype=bool)
        for cond in self.conditions:
            values = frame[cond.feature].to_numpy(dtype=np.float64)
            mask &= values <= cond.threshold if cond.op == "<=" else values > cond.threshold
        return mask

    def text(self, label_name: str, binary: set[str], inputs: Any = None) -> str:
        """Readable, in the custodian's words where ``inputs`` (a pipeline's `InputMap`)
        says what a feature stands for."""
        parts = [(inputs is not None and inputs.condition_text(c.feature, c.op, c.threshold))
                 or c.text(c.feature in binary) for c in self.conditions]
        if self.label is not None:  # None: a tree that pools the classes (a booster's)
            parts.append(f"{label_name} = {self.label}")
        return " AND ".join(parts)

    def to_dict(self, label_name: str, binary: set[str]) -> dict[str, Any]:
        out = {"conditions": [c.to_dict() for c in self.conditions], "label": self.label,
               "node": self.node, "tree": self.tree, "proven": self.proven, "how": self.how,
               "text": self.text(label_name, binary)}
        if self.matches is not None:
            out["matches"] = self.matches
        return out


def box_conditions(lower: np.ndarray, upper: np.ndarray, names: list[str]) -> list[Condition]:
    """The box ``lower < x <= upper`` as conditions: the tightest bound per feature."""
    conditions = []
    for f, low, high in zip(range(len(names)), lower.tolist(), upper.tolist()):
        if low > -math.inf:
            conditions.append(Condition(names[f], ">", low))
        if high < math.inf:
            conditions.append(Condition(names[f], "<=", high))
    return conditions
