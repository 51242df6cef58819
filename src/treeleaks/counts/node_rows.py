"""The certificates' check of internal nodes: the rebuilt rows routed through a tree give
every internal node the numbers the file stores there (`treeleaks.ir.node_stats`).

The leaves are checked on their own by the certificates; an internal node holds the rows
of the leaves below it, so its rows' numbers are summed up from the leaves level by level
(O(depth) array operations a tree, linear in rows). Targets are summed in units of the
largest value involved, so their squares never overflow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from treeleaks.ir.model import Tree
from treeleaks.ir.node_stats import COUNT_RTOL, IMPURITY_RTOL, VALUE_RTOL, NodeStats, sum_up


@dataclass(frozen=True)
class NodeMisses:
    """How many internal-node numbers were checked, how many the rows miss, the first."""

    checked: int = 0
    wrong: int = 0
    first: str = ""


def node_misses(tree: Tree, index: int, leaves: np.ndarray, weight: np.ndarray,
                column: np.ndarray, targets: np.ndarray | None = None,
                complete: bool = True) -> NodeMisses:
    """Compare tree ``index``'s internal nodes with the rows that reach them.

    ``leaves``: each row's leaf in this tree; ``weight``: its draws (0: not drawn);
    ``column``: its column of the tree's counts; ``targets``: a regressor's targets. A
    ``complete`` dataset must give every stored count, mean and variance; a partial one
    may fill no node beyond its stored rows.
    """
    stats = tree.nodes
    inner = np.flatnonzero(tree.left >= 0)
    if stats is None or tree.aliased or not inner.size:
        return NodeMisses()
    n_nodes = len(tree.feature)
    is_leaf = tree.feature < 0
    node_of_leaf = np.empty(tree.n_leaves, dtype=np.int64)
    node_of_leaf[tree.leaf_of_node[is_leaf]] = np.flatnonzero(is_leaf)
    if not _read_with(stats, tree, node_of_leaf):
        return NodeMisses()
    end = node_of_leaf[leaves]
    n_columns = stats.weighted.shape[1]
    parts = [np.bincount(end * n_columns + column, weights=weight,
                         minlength=n_nodes * n_columns).reshape(n_nodes, n_columns),
             np.bincount(end, weights=weight > 0, minlength=n_nodes)[:, None]]
    means = complete and targets is not None and stats.values is not None
    if means:  # in units of the largest target or value: no square overflows
        scale = max(float(np.abs(targets).max(initial=0.0)),
                    float(np.abs(stats.values[inner]).max()), np.finfo(float).tiny)
        y = targets / scale
        parts += [np.bincount(end, weights=weight * y, minlength=n_nodes)[:, None],
                  np.bincount(end, weights=weight * y * y, minlength=n_nodes)[:, None]]
    # one pass up the tree for every sum: internal nodes only from here on
    summed = sum_up(tree.left, tree.right, np.hstack(parts))[inner]
    weighted = summed[:, :n_columns]
    checks, sums = _row_checks(stats, inner, weighted, summed[:, n_columns], complete)
    if means:
        _add_targets(checks, sums, stats, inner, weighted.sum(axis=1),
                     summed[:, n_columns + 1], summed[:, n_columns + 2], scale)
    wrong, first = _tally(checks, sums, index, inner, complete)
    return NodeMisses(len(checks) * inner.size, wrong, first)


def _row_checks(stats: NodeStats, inner: np.ndarray, weighted: np.ndarray,
                distinct: np.ndarray, complete: bool
                ) -> tuple[dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """The internal nodes' weighted (and, where stored, distinct) rows against the rows'
    sums: per check, the nodes the rows miss (a partial dataset misses only by excess),
    and the released and rebuilt numbers."""
    stored = stats.weighted[inner]
    slack = COUNT_RTOL * np.maximum(np.abs(stored), 1.0)
    checks = {"weighted rows": ((np.abs(weighted - stored) if complete
                                 else weighted - stored) > slack).any(axis=1)}
    sums = {"weighted rows": (stored.sum(axis=1), weighted.sum(axis=1))}
    if stats.distinct is not None:
        released = stats.distinct[inner]
        checks["distinct rows"] = (distinct != released) if complete else distinct > released
        sums["distinct rows"] = (released, distinct)
    return checks, sums


def _tally(checks: dict[str, np.ndarray], sums: dict[str, tuple[np.ndarray, np.ndarray]],
           index: int, inner: np.ndarray, complete: bool) -> tuple[int, str]:
    """How many node numbers the rows miss, and the first miss in the checks' order."""
    first, wrong = "", 0
    for what, off in checks.items():
        wrong += int(off.sum())
        if off.any() and not first:
            i = int(np.argmax(off))
            released, rebuilt = (a[i] for a in sums[what])
            first = (f"tree {index} node {inner[i]} {what}: released {released:.10g}, "
                     f"{'reconstructed' if complete else 'the partial'} rows give "
                     f"{rebuilt:.10g}")
    return wrong, first


def _read_with(stats: NodeStats, tree: Tree, node_of_leaf: np.ndarray) -> bool:
    """Whether the tree's leaf counts are those its node numbers were read with.

    An attack's view of the file (known rows taken out, a regressor's targets read as
    classes) keeps the nodes but changes the leaves: its internal nodes are the file's,
    checked by the file's own certificate, not the view's.
    """
    leaf = stats.weighted[node_of_leaf]
    return leaf.shape == tree.counts.shape and bool(
        (np.abs(leaf - tree.counts) <= COUNT_RTOL * np.maximum(leaf, 1.0)).all())


def _add_targets(checks: dict[str, np.ndarray], sums: dict[str, tuple[np.ndarray, np.ndarray]],
                 stats: NodeStats, inner: np.ndarray, rows: np.ndarray, total: np.ndarray,
                 squares: np.ndarray, scale: float) -> None:
    """The internal nodes' means and (where stored) variances against their rows' sums
    of targets and squared targets, taken in units of ``scale``."""
    mean = np.divide(total, rows, out=np.full(inner.size, np.nan), where=rows > 0)
    checks["value"] = ~(np.abs(mean - stats.values[inner] / scale) <= VALUE_RTOL)
    sums["value"] = (stats.values[inner], mean * scale)
    if stats.impurity is None:
        return
    variance = np.divide(squares, rows, out=np.full(inner.size, np.nan),
                         where=rows > 0) - mean ** 2
    checks["impurity"] = ~(np.abs(variance - stats.impurity[inner] / scale / scale)
                           <= IMPURITY_RTOL * 10)
    sums["impurity"] = (stats.impurity[inner], variance * scale * scale)
