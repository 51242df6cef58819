"""How an ONNX tree ensemble routes a missing value (a gap), for `frontends.gaps`.

ONNX Runtime sends a NaN down a node's true branch when ``nodes_missing_value_tracks_true``
is 1, and down the false branch otherwise (every comparison with NaN is false). The IR goes
left when ``x <= t``, so a NaN goes right unless routed: a file whose gaps all go right
needs nothing. Otherwise, as for XGBoost (`xgboost_routing`): a column whose splits send a
gap both ways held gaps, and gains a gap feature (its trees spelled out); a column whose
splits agree routes a gap like a value past every threshold on that side, which the input
map fills in (LightGBM's exports send every gap to the default side, left).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from treeleaks.frontends.boosting import Nodes
from treeleaks.frontends.gaps import Column, Layout, RoutedTree, spell_out
from treeleaks.ir.inputs import InputMap


@dataclass(frozen=True)
class OnnxRouting:
    """The layout of the file's columns, the value a gap fills in per agreeing column, and
    each tree's gap side per node (True: left, in the IR)."""

    layout: Layout
    fills: dict[int, float]
    gap_left: list[np.ndarray]
    facts: dict[str, Any] = field(default_factory=dict)

    def inputs(self) -> InputMap:
        """How the table's columns become the model's features."""
        return self.layout.inputs(self.fills)

    def spelled(self, index: int, nodes: Nodes) -> tuple[Nodes, np.ndarray]:
        """Tree ``index`` over the layout's features, and the leaves it kept (all, when no
        column needs a gap feature)."""
        n_leaves = int(nodes[4].max(initial=-1)) + 1
        if not self.layout.spelled_out:
            return nodes, np.arange(n_leaves)
        routed = RoutedTree(*nodes, self.gap_left[index])
        return spell_out(routed, self.layout, n_leaves, index)


def onnx_routing(shapes: list[Nodes], gap_left: list[np.ndarray], names: list[str]
                 ) -> OnnxRouting | None:
    """The routing the file's gap sides state; None when every gap goes right, as the IR
    sends a NaN."""
    if not any(sides.any() for sides in gap_left):
        return None
    sides: dict[int, set[bool]] = {}
    low: dict[int, float] = {}
    high: dict[int, float] = {}
    for (feature, threshold, *_), left in zip(shapes, gap_left, strict=True):
        for node in np.flatnonzero(feature >= 0).tolist():
            column = int(feature[node])
            sides.setdefault(column, set()).add(bool(left[node]))
            low[column] = min(low.get(column, np.inf), float(threshold[node]))
            high[column] = max(high.get(column, -np.inf), float(threshold[node]))
    gaps = {j for j, s in sides.items() if len(s) > 1}
    fills = {j: float(np.floor(low[j]) - 1.0 if s == {True} else np.ceil(high[j]) + 1.0)
             for j, s in sides.items() if j not in gaps}
    layout = Layout.of([Column(name, None, j in gaps) for j, name in enumerate(names)])
    facts = {"gaps": "routed as the file says (nodes_missing_value_tracks_true)"}
    return OnnxRouting(layout, fills, gap_left, facts)
