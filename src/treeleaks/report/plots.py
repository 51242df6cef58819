"""The audit's pictures as base64 PNG, to embed in the HTML: per-row exposure, the error
beside the random baseline, and a single tree drawn with its vulnerable nodes marked.

Figures are drawn on matplotlib's Agg canvas through `matplotlib.figure.Figure`, never
pyplot, so nothing global changes and no display is needed.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Sequence
from typing import Any

VULNERABLE = "#d62728"  # nodes that single out a training row
SAFE = "#f2f2f2"
TREE_DEPTH_SHOWN = 4  # levels of a tree drawn; deeper vulnerable nodes are counted instead


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)  # plot_tree measures text on the figure's canvas
    return figure


def exposure_png(values: Sequence[float], xlabel: str, title: str) -> str:
    """A histogram of one exposure figure per training row over [0, 1]."""
    figure = _figure(6.4, 3.0)
    ax = figure.add_subplot()
    ax.hist(values, bins=20, range=(0.0, 1.0), color="#1f77b4", edgecolor="white")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("training rows")
    ax.set_title(title, fontsize=10)
    return _png(figure)


def error_png(bars: dict[str, float]) -> str:
    """Reconstruction error beside the errors it should be judged against."""
    figure = _figure(6.4, 0.6 + 0.45 * len(bars))
    ax = figure.add_subplot()
    names = list(bars)
    colours = [VULNERABLE if i == 0 else "#7f7f7f" for i in range(len(names))]
    ax.barh(names[::-1], [bars[n] for n in names][::-1], color=colours[::-1])
    for y, name in enumerate(names[::-1]):
        ax.text(bars[name], y, f" {bars[name]:.3f}", va="center", fontsize=9)
    ax.set_xlim(0, max(max(bars.values()) * 1.25, 0.05))
    ax.set_xlabel("mean error per value (0 = every value right)")
    return _png(figure)


def tree_png(estimator: Any, vulnerable: Sequence[int], feature_names: list[str],
             class_names: list[str] | None) -> tuple[str, int]:
    """A scikit-learn tree drawn to `TREE_DEPTH_SHOWN` levels with its vulnerable nodes in
    red; also how many vulnerable nodes lie deeper than the drawing."""
    from sklearn.tree import plot_tree

    depth = int(estimator.get_depth())
    shown = min(depth, TREE_DEPTH_SHOWN)
    figure = _figure(min(2.2 * 2 ** shown, 22.0), 1.3 * (shown + 1))
    ax = figure.add_subplot()
    labels = plot_tree(estimator, ax=ax, max_depth=shown, feature_names=feature_names,
                       class_names=class_names, node_ids=True, impurity=False, fontsize=7)
    marked = set(vulnerable)
    drawn = set()
    for label in labels:
        found = re.search(r"node #(\d+)", label.get_text())
        if found is None:
            continue
        node = int(found.group(1))
        drawn.add(node)
        box = label.get_bbox_patch()
        if box is not None:
            box.set_facecolor(VULNERABLE if node in marked else SAFE)
            if node in marked:
                label.set_color("white")
    return _png(figure), len(marked - drawn)
