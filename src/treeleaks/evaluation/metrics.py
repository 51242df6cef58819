"""Measure a reconstruction against the true training rows.

The distance between two rows is the mean, over the schema's features, of a per-feature
disagreement in [0, 1]. True and reconstructed rows are aligned by a minimum-cost matching
and the error is the mean distance over matched pairs.

Identical rows are matched first: the distance obeys the triangle inequality, so some
optimal matching pairs as many identical rows as possible, and only the residual needs a
solver. A small residual is solved as an assignment over its rows; a large one as a
min-cost flow between its distinct vectors (multiplicities as supplies), either over the
complete bipartite graph or, when the columns take few values, over the Cartesian product
of per-column (per-group) graphs, whose shortest paths are the row distances and whose arc
count does not grow with the number of rows (binarized data, random baselines).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from ortools.graph.python import min_cost_flow
from scipy.optimize import linear_sum_assignment

from treeleaks.ir.schema import FeatureSchema
from treeleaks.ir.schema_columns import FeatureColumns, feature_columns, frame_matrix

_LSA_MAX_CELLS = 1 << 22  # residual true rows times residual reconstructed rows (32 MB)
_FLOW_MAX_ARCS = 1 << 22  # arcs of a min-cost-flow network (about 0.5 GB of solver memory)
_COST_UNITS = 1 << 20  # integer cost units per unit of disagreement, when costs are not whole


@dataclass
class ReconstructionScore:
    """How close a reconstruction is to the truth (errors: 0 is perfect, 1 is worst)."""

    error: float  # mean per-feature disagreement over matched rows
    exact_share: float  # share of true rows matched to an identical reconstructed row
    worst_row_error: float  # largest per-row disagreement among matched pairs
    baseline_error: float  # mean error of random schema-consistent guesses (nan: not drawn)
    label_agreement: float  # share of matched pairs whose labels agree (nan: no label)
    n_true: int
    n_reconstructed: int
    n_matched: int

    def to_dict(self) -> dict[str, float | int]:
        """Plain floats and ints for JSON reports (NaN where a field was not measured)."""
        return {
            key: int(value) if key.startswith("n_") else float(value)
            for key, value in asdict(self).items()
        }


def row_distances(true_X: np.ndarray, recon_X: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Distance of every true row to every reconstructed row, shape ``(n_true, n_recon)``.

    The mean over features of ``min(|a - b| / scale, 1)``; a NaN (a value the model says
    nothing about) counts as full disagreement.
    """
    if true_X.shape[1] == 0:
        raise ValueError("rows have no features to compare; give at least one column")
    return _term_sums(true_X, recon_X, scale) / true_X.shape[1]


def evaluate(
    truth: pd.DataFrame,
    reconstruction: pd.DataFrame,
    schema: FeatureSchema,
    label: str | None = None,
    n_baseline_draws: int = 10,
    seed: int = 0,
    error_columns: list[str] | None = None,
) -> ReconstructionScore:
    """Score ``reconstruction`` against ``truth`` on the schema's features (label excluded).

    Rows are matched on every feature; ``error_columns`` (say, those side knowledge did not
    give) restricts the reported ``error``, ``worst_row_error`` and ``baseline_error`` to
    those columns.

    Frames of different lengths are matched on min(n_true, n_reconstructed) pairs. With a
    ``label`` present in both frames, identical feature vectors are paired within equal
    labels first, and ``label_agreement`` is measured over the matched pairs (a label the
    truth lacks is an error, one the reconstruction lacks gives NaN).
    """
    columns = feature_columns(truth, schema, label)
    labels = _label_codes(truth, reconstruction, label)
    recon_X = frame_matrix(reconstruction, columns.names, "reconstruction")
    matching = _match(columns, recon_X, labels)
    n_matched = matching.n_matched
    scored = _scored_columns(columns, error_columns)
    distance = matching.terms[:, scored].sum(axis=1) / scored.size
    baseline_columns = columns if error_columns is None else _columns_among(columns, scored)
    return ReconstructionScore(
        error=float(distance @ matching.count) / n_matched if n_matched else math.nan,
        exact_share=matching.n_identical / len(truth),
        worst_row_error=float(distance.max(initial=0.0)) if n_matched else math.nan,
        baseline_error=_baseline(baseline_columns, n_baseline_draws, seed),
        label_agreement=matching.n_agree / n_matched if labels and n_matched else math.nan,
        n_true=len(truth),
        n_reconstructed=len(reconstruction),
        n_matched=n_matched,
    )


def _scored_columns(columns: FeatureColumns, error_columns: list[str] | None) -> np.ndarray:
    """The positions of the columns the error is reported on (all, by default)."""
    if error_columns is None:
        return np.arange(len(columns.names))
    unknown = [n for n in error_columns if n not in columns.names]
    if unknown or not error_columns:
        raise ValueError(f"error_columns must name features of the schema, got {unknown}"
                         if unknown else "error_columns is empty; give at least one")
    return np.unique([columns.names.index(n) for n in error_columns])


def _columns_among(columns: FeatureColumns, scored: np.ndarray) -> FeatureColumns:
    """``columns`` cut to the positions ``scored`` (a one-hot group kept whole or not)."""
    return FeatureColumns(
        [columns.names[i] for i in scored], columns.kinds[scored], columns.low[scored],
        columns.high[scored], columns.scale[scored],
        [(np.searchsorted(scored, cols), one) for cols, one in columns.groups
         if np.isin(cols, scored).all()],
        columns.true_X[:, scored])


def row_errors(
    truth: pd.DataFrame,
    reconstruction: pd.DataFrame,
    schema: FeatureSchema,
    label: str | None = None,
) -> np.ndarray:
    """Each true row's distance (in truth's order) to the reconstructed row that `evaluate`'s
    optimal matching pairs it with; NaN for true rows left unmatched (fewer reconstructed
    rows). The mean over matched rows is ``evaluate(...).error``."""
    columns = feature_columns(truth, schema, label)
    labels = _label_codes(truth, reconstruction, label)
    return _match(columns, frame_matrix(reconstruction, columns.names, "reconstruction"),
                  labels).row_distance


def column_scores(
    truth: pd.DataFrame,
    reconstruction: pd.DataFrame,
    schema: FeatureSchema,
    label: str | None = None,
) -> pd.DataFrame:
    """Per feature, under `evaluate`'s matching of the rows: ``exact``, the share of matched
    true rows the reconstruction gives that value exactly, and ``error``, the mean
    disagreement (0 to 1, as in `evaluate`); NaN when no row is matched."""
    columns = feature_columns(truth, schema, label)
    labels = _label_codes(truth, reconstruction, label)
    matching = _match(columns, frame_matrix(reconstruction, columns.names, "reconstruction"),
                      labels)
    n_matched = matching.n_matched
    if not n_matched:
        nan = np.full(len(columns.names), np.nan)
        return pd.DataFrame({"exact": nan, "error": nan}, index=columns.names)
    exact = (matching.n_identical + matching.count @ (matching.terms == 0)) / n_matched
    return pd.DataFrame({"exact": exact, "error": matching.count @ matching.terms / n_matched},
                        index=columns.names)


def random_baseline(
    truth: pd.DataFrame,
    schema: FeatureSchema,
    n_draws: int,
    seed: int,
    label: str | None = None,
) -> float:
    """Mean matched error of ``n_draws`` sets of len(truth) uniform schema-consistent guesses.

    The bar an attack must clear: binary columns are fair coins, a one-hot group has one
    uniform member set, an at-most-one group is uniform over its members and none, ordinal
    and numerical columns are uniform over their range (the observed one where the schema's
    is infinite), and unknown columns are left NaN (full disagreement).
    """
    return _baseline(feature_columns(truth, schema, label), n_draws, seed)


# --- inputs ----------------------------------------------------------------------------


def _label_codes(
    truth: pd.DataFrame, reconstruction: pd.DataFrame, label: str | None
) -> tuple[np.ndarray, np.ndarray] | None:
    """Shared integer codes of both frames' labels; None when there is nothing to compare."""
    if label is None:
        return None
    if label not in truth.columns:
        raise ValueError(f"the true frame has no label column {label!r}; pass the name of its "
                         "label column, or label=None")
    if label not in reconstruction.columns:
        return None
    both = pd.concat([truth[label], reconstruction[label]], ignore_index=True)
    codes = pd.factorize(both)[0]
    true_codes, recon_codes = codes[: len(truth)], codes[len(truth) :]
    return true_codes, np.where(recon_codes < 0, -2, recon_codes)  # a missing label never agrees


# --- matching --------------------------------------------------------------------------


@dataclass
class _Matching:
    """Identical pairs, counted, and residual pairs as (distance, count, labels agree)."""

    n_identical: int
    n_identical_agree: int
    terms: np.ndarray  # per residual pair and feature: the disagreement, 0 to 1
    count: np.ndarray
    agree: np.ndarray
    pair_of_row: np.ndarray  # per true row: its residual pair, _IDENTICAL or _UNMATCHED

    @property
    def distance(self) -> np.ndarray:
        return self.terms.mean(axis=1) if self.terms.shape[1] else self.terms.sum(axis=1)

    @property
    def n_matched(self) -> int:
        return self.n_identical + int(self.count.sum())

    @property
    def n_agree(self) -> int:
        return self.n_identical_agree + int(self.count[self.agree].sum())

    @property
    def error(self) -> float:
        return float(self.distance @ self.count) / self.n_matched if self.n_matched else math.nan

    @property
    def row_distance(self) -> np.ndarray:
        """Per true row: 0 if paired with an identical row, its pair's distance, or NaN."""
        pair = self.pair_of_row
        out = np.where(pair == _IDENTICAL, 0.0, np.nan)
        matched = pair >= 0
        out[matched] = self.distance[pair[matched]]
        return out


_IDENTICAL, _UNMATCHED = -1, -2


def _match(
    columns: FeatureColumns,
    recon_X: np.ndarray,
    labels: tuple[np.ndarray, np.ndarray] | None = None,
    solver: str = "auto",
) -> _Matching:
    """Minimum-cost matching of the true rows to ``recon_X``.

    Identical (features and label) rows pair first, then identical features across labels,
    then the residual by ``solver``: "lsa", "dense" or "graph", or "auto" to pick by size.
    """
    n_true = len(columns.true_X)
    rows = np.vstack([columns.true_X, recon_X]) + 0.0  # + 0.0 turns -0.0 into 0.0
    codes, values = _column_codes(rows)
    vector = _row_ids(codes)[0]
    label = np.zeros(len(rows), dtype=np.int64) if labels is None else np.concatenate(labels)
    group, first = _row_ids(np.column_stack([vector, label]))
    true_left = np.bincount(group[:n_true], minlength=len(first))
    recon_left = np.bincount(group[n_true:], minlength=len(first))
    same_label = np.minimum(true_left, recon_left)
    true_left, recon_left = true_left - same_label, recon_left - same_label
    group_vector = vector[first]
    other_label = np.minimum(
        np.bincount(group_vector, true_left), np.bincount(group_vector, recon_left)
    ).astype(np.int64)
    true_left -= _take(true_left, group_vector, other_label)
    recon_left -= _take(recon_left, group_vector, other_label)

    t, r = np.flatnonzero(true_left), np.flatnonzero(recon_left)
    true_rows, recon_rows = rows[first[t]], rows[first[r]]
    ti, ri, count = _residual(
        _Side(true_rows, true_left[t], codes[first[t]]),
        _Side(recon_rows, recon_left[r], codes[first[r]]),
        values, columns, solver,
    )
    return _Matching(
        n_identical=int(same_label.sum() + other_label.sum()),
        n_identical_agree=int(same_label.sum()),
        terms=_term(true_rows[ti], recon_rows[ri], columns.scale),
        count=count,
        agree=label[first[t]][ti] == label[first[r]][ri],
        pair_of_row=_pair_of_row(group[:n_true], true_left, t[ti], count),
    )


def _pair_of_row(
    true_group: np.ndarray, residual: np.ndarray, pair_group: np.ndarray, count: np.ndarray
) -> np.ndarray:
    """Spread the counted matching over the true rows: within each group of identical true
    rows (``true_group``), the first rows were paired with identical reconstructed rows,
    the next ``residual[group]`` take the group's residual pairs (``pair_group``, ``count``)
    in turn, and any left over are unmatched. Rows of a group are interchangeable, so this
    is one optimal row-level matching."""
    order = np.argsort(true_group, kind="stable")
    size = np.bincount(true_group, minlength=len(residual))
    n_identical = size - residual
    start = np.cumsum(size) - size
    rank = np.empty(len(true_group), dtype=np.int64)
    rank[order] = np.arange(len(true_group)) - start[true_group[order]]
    pair_of_row = np.where(rank < n_identical[true_group], _IDENTICAL, _UNMATCHED)
    by_group = np.argsort(pair_group, kind="stable")
    unit_pair = np.repeat(by_group, count[by_group])  # one entry per matched residual row
    unit_group = pair_group[unit_pair]
    k = np.arange(len(unit_pair)) - np.searchsorted(unit_group, unit_group)
    pair_of_row[order[start[unit_group] + n_identical[unit_group] + k]] = unit_pair
    return pair_of_row


def _column_codes(rows: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each column's values as integer codes (all NaNs share one), and the coded values."""
    codes = np.empty(rows.shape, dtype=np.int64)
    values = []
    for j in range(rows.shape[1]):
        codes[:, j], column_values = pd.factorize(rows[:, j], use_na_sentinel=False)
        values.append(column_values)
    return codes, values


def _row_ids(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An id per row of an integer matrix, equal for equal rows, and each id's first row.

    Columns are folded in one at a time and refactorised, so ids stay below the row count
    (hashing is much faster than sorting rows).
    """
    ids = np.zeros(len(codes), dtype=np.int64)
    for column in codes.T:
        low = int(column.min())
        ids = pd.factorize(ids * (int(column.max()) - low + 1) + (column - low))[0]
    return ids, np.unique(ids, return_index=True)[1]


def _take(counts: np.ndarray, keys: np.ndarray, want: np.ndarray) -> np.ndarray:
    """How many units to take from each entry so that ``want[key]`` leave each key."""
    order = np.argsort(keys, kind="stable")
    sorted_keys, sorted_counts = keys[order], counts[order]
    before = np.cumsum(sorted_counts) - sorted_counts
    before -= before[np.searchsorted(sorted_keys, sorted_keys)]
    taken = np.empty_like(counts)
    taken[order] = np.clip(want[sorted_keys] - before, 0, sorted_counts)
    return taken


@dataclass(frozen=True)
class _Side:
    """One side of the residual (the true or the reconstructed rows left unpaired): its
    distinct vectors, how many rows of each, and their value codes."""

    rows: np.ndarray
    counts: np.ndarray
    codes: np.ndarray


def _residual(
    true: _Side,
    recon: _Side,
    values: list[np.ndarray],
    columns: FeatureColumns,
    solver: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Optimal pairs (true index, reconstructed index, count) of distinct residual vectors."""
    n_true, n_recon = int(true.counts.sum()), int(recon.counts.sum())
    if n_true == 0 or n_recon == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    if solver == "lsa" or (solver == "auto" and n_true * n_recon <= _LSA_MAX_CELLS):
        return _assignment(true.rows, true.counts, recon.rows, recon.counts, columns.scale)
    graph = None if solver == "dense" else _product_graph(true.codes, recon.codes, values,
                                                          columns)
    if solver == "graph" or (graph is not None
                             and len(graph[0]) < len(true.rows) * len(recon.rows)):
        return _flow(true.counts, recon.counts, *graph)
    return _dense_flow(true, recon, columns.scale)


def _dense_flow(true: _Side, recon: _Side, scale: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The flow over every (true, reconstructed) pair of distinct vectors; one line past
    the arc cap."""
    n_dense = len(true.rows) * len(recon.rows)
    if n_dense > _FLOW_MAX_ARCS:
        raise ValueError(
            f"after pairing identical rows, {int(true.counts.sum())} true and "
            f"{int(recon.counts.sum())} reconstructed rows "
            f"remain ({len(true.rows)} x {len(recon.rows)} distinct, over columns with many "
            "distinct values): too many for an exact matching in memory; evaluate on a "
            "random subset of the rows"
        )
    return _flow(true.counts, recon.counts, *_dense_graph(true.rows, recon.rows, scale))


def _assignment(
    true_rows: np.ndarray,
    true_counts: np.ndarray,
    recon_rows: np.ndarray,
    recon_counts: np.ndarray,
    scale: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact matching of the residual expanded to single rows (a linear assignment)."""
    ti = np.repeat(np.arange(len(true_rows)), true_counts)
    ri = np.repeat(np.arange(len(recon_rows)), recon_counts)
    cost = _term_sums(true_rows, recon_rows, scale)[np.ix_(ti, ri)]
    rows, cols = linear_sum_assignment(cost)
    return ti[rows], ri[cols], np.ones(len(rows), dtype=np.int64)


_Network = tuple[np.ndarray, np.ndarray, np.ndarray, int]  # tails, heads, costs, extra nodes


def _dense_graph(true_rows: np.ndarray, recon_rows: np.ndarray, scale: np.ndarray) -> _Network:
    """Every residual true vector (nodes 0..m-1) linked to every reconstructed one (m..)."""
    m, n = len(true_rows), len(recon_rows)
    tails = np.repeat(np.arange(m), n)
    heads = m + np.tile(np.arange(n), m)
    return tails, heads, _term_sums(true_rows, recon_rows, scale).ravel(), 0


def _product_graph(
    true_codes: np.ndarray,
    recon_codes: np.ndarray,
    values: list[np.ndarray],
    columns: FeatureColumns,
) -> _Network | None:
    """The product of per-block complete graphs, or None when it exceeds the arc cap.

    Blocks are the schema's groups and the remaining single columns; a node is one value
    per block, and an arc changes one block at that block's distance. Shortest paths are
    the row distances, so a flow over it is the transport problem on the distinct vectors.
    Blocks that cost every true-reconstructed pair the same (an all-NaN reconstructed
    column) only shift the cost and are left out.
    """
    m, n = len(true_codes), len(recon_codes)
    codes = np.vstack([true_codes, recon_codes])
    found = _block_distances(codes, m, values, columns)
    if found is None:
        return None
    digits, distances = found
    sizes = [len(distance) for distance in distances]
    n_nodes = math.prod(sizes)
    if n_nodes * sum(size - 1 for size in sizes) + m + n > _FLOW_MAX_ARCS:
        return None
    strides = np.cumprod([1, *sizes])[:-1]
    node = m + n + (np.column_stack(digits) @ strides if digits else np.zeros(m + n, np.int64))
    tails, heads = [np.arange(m), node[m:]], [node[:m], m + np.arange(n)]
    costs = [np.zeros(m + n)]
    for arcs in _block_arcs(distances, sizes, strides, m + n, n_nodes):
        tails.append(arcs[0])
        heads.append(arcs[1])
        costs.append(arcs[2])
    return np.concatenate(tails), np.concatenate(heads), np.concatenate(costs), n_nodes


def _block_distances(codes: np.ndarray, m: int, values: list[np.ndarray],
                     columns: FeatureColumns
                     ) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
    """Per block that sets rows apart (the schema's groups, then each other column): every
    row's value id in it and the distances between its values; None past the arc cap."""
    digits, distances = [], []
    for block in _blocks(columns, codes.shape[1]):
        digit, first = _row_ids(codes[:, block])
        true_levels, recon_levels = np.unique(digit[:m]), np.unique(digit[m:])
        if len(true_levels) * len(recon_levels) > _FLOW_MAX_ARCS:
            return None
        points = np.column_stack([values[j][codes[first, j]] for j in block])
        scale = columns.scale[block]
        if np.ptp(_term_sums(points[true_levels], points[recon_levels], scale)) == 0:
            continue
        if len(first) * (len(first) - 1) > _FLOW_MAX_ARCS:
            return None
        digits.append(digit)
        distances.append(_term_sums(points, points, scale))
    return digits, distances


def _blocks(columns: FeatureColumns, n_columns: int) -> list[np.ndarray]:
    """The column blocks a row's distance adds up over: the schema's groups, then each
    other column on its own."""
    grouped = {int(j) for members, _ in columns.groups for j in members}
    return [members for members, _ in columns.groups] + [
        np.array([j]) for j in range(n_columns) if j not in grouped
    ]


def _block_arcs(distances: list[np.ndarray], sizes: list[int], strides: np.ndarray,
                offset: int, n_nodes: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The product graph's arcs (tails, heads, costs): from every node, one per other value
    of each block, at that block's distance."""
    nodes = np.arange(n_nodes)
    arcs = []
    for distance, size, stride in zip(distances, sizes, strides, strict=True):
        digit = nodes // stride % size
        for shift in range(1, size):
            other = (digit + shift) % size
            arcs.append((offset + nodes, offset + nodes + (other - digit) * stride,
                         distance[digit, other]))
    return arcs


def _flow(
    true_counts: np.ndarray,
    recon_counts: np.ndarray,
    tails: np.ndarray,
    heads: np.ndarray,
    costs: np.ndarray,
    n_extra: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimum-cost flow of min(sum true, sum recon) units from true vectors (nodes 0..m-1)
    to reconstructed ones (m..m+n-1) over the given arcs, split into matched pairs.

    The solver takes integer costs: whole costs (binary data) are used as they are, others
    are rounded to 2^-20 of a unit of disagreement.
    """
    m, n = len(true_counts), len(recon_counts)
    units = min(int(true_counts.sum()), int(recon_counts.sum()))
    whole = np.array_equal(costs, np.round(costs))
    integer_costs = np.rint(costs * (1 if whole else _COST_UNITS)).astype(np.int64)
    integer_costs = np.maximum(integer_costs, costs > 0)  # positive costs: an acyclic flow
    source, sink = m + n + n_extra, m + n + n_extra + 1
    solver = min_cost_flow.SimpleMinCostFlow()
    solver.add_arcs_with_capacity_and_unit_cost(
        np.concatenate([np.full(m, source), tails, m + np.arange(n)]),
        np.concatenate([np.arange(m), heads, np.full(n, sink)]),
        np.concatenate([true_counts, np.full(len(tails), units), recon_counts]),
        np.concatenate([np.zeros(m, np.int64), integer_costs, np.zeros(n, np.int64)]),
    )
    supplies = np.zeros(sink + 1, dtype=np.int64)
    supplies[source], supplies[sink] = units, -units
    solver.set_nodes_supplies(np.arange(sink + 1), supplies)
    status = solver.solve()
    if status != solver.OPTIMAL:
        raise RuntimeError(f"the matching's min-cost flow ended with status {status}")
    flows = solver.flows(np.arange(solver.num_arcs()))
    middle = flows[m : m + len(tails)]
    used = middle > 0
    return _paths(tails[used], heads[used], middle[used], flows[:m], m)


def _paths(
    tails: np.ndarray, heads: np.ndarray, flows: np.ndarray, sent: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split an acyclic flow into paths from the true vectors (nodes < m, sending ``sent``)
    to the reconstructed ones (nodes m.., no arcs out): (true, reconstructed, count)."""
    order = np.argsort(tails, kind="stable")
    tails, heads, flows = tails[order].tolist(), heads[order].tolist(), flows[order].tolist()
    first_arc = _first_arcs(tails)
    indegree = Counter(heads)
    pending: dict[int, list[tuple[int, int]]] = defaultdict(list)
    ready = [i for i, amount in enumerate(sent.tolist()) if amount > 0]
    for i in ready:
        pending[i].append((i, int(sent[i])))
    pairs = []
    while ready:
        node = ready.pop()
        chunks = pending.pop(node)
        if node not in first_arc:
            pairs.extend((origin, node - m, amount) for origin, amount in chunks)
            continue
        k, arc = 0, first_arc[node]
        while arc < len(tails) and tails[arc] == node:
            head = heads[arc]
            k = _send(chunks, k, flows[arc], pending[head])
            indegree[head] -= 1
            if indegree[head] == 0:
                ready.append(head)
            arc += 1
    triples = np.array(pairs, dtype=np.int64).reshape(-1, 3)
    return triples[:, 0], triples[:, 1], triples[:, 2]


def _first_arcs(tails: list[int]) -> dict[int, int]:
    """Per node with arcs out, the index of its first arc (``tails`` sorted)."""
    first_arc: dict[int, int] = {}
    for arc, tail in enumerate(tails):
        first_arc.setdefault(tail, arc)
    return first_arc


def _send(chunks: list[tuple[int, int]], k: int, need: int,
          into: list[tuple[int, int]]) -> int:
    """Pass ``need`` units of a node's ``chunks`` (origin, amount), from chunk ``k`` on,
    down one arc into ``into``, splitting a chunk where the arc takes part of it; the
    index of the first chunk not used up."""
    while need:
        origin, amount = chunks[k]
        moved = min(need, amount)
        into.append((origin, moved))
        need -= moved
        if moved == amount:
            k += 1
        else:
            chunks[k] = (origin, amount - moved)
    return k


def _term(a: np.ndarray, b: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Per-feature disagreement in [0, 1]; a NaN on either side disagrees fully."""
    return np.nan_to_num(np.minimum(np.abs(a - b) / scale, 1.0), nan=1.0)


def _term_sums(a: np.ndarray, b: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Summed per-feature disagreement of every row of ``a`` with every row of ``b``."""
    total = np.zeros((len(a), len(b)))
    for j, width in enumerate(scale):
        total += _term(a[:, j, None], b[None, :, j], width)
    return total


# --- random baseline -------------------------------------------------------------------


def _baseline(columns: FeatureColumns, n_draws: int, seed: int) -> float:
    if n_draws < 0:
        raise ValueError(f"n_baseline_draws must be 0 or more, got {n_draws}")
    if n_draws == 0:
        return math.nan
    rng = np.random.default_rng(seed)
    try:
        errors = [_match(columns, _draw(columns, rng)).error for _ in range(n_draws)]
    except ValueError as exc:
        raise ValueError(f"random baseline: {exc}, or pass n_baseline_draws=0") from exc
    return float(np.mean(errors))


def _draw(columns: FeatureColumns, rng: np.random.Generator) -> np.ndarray:
    """As many uniform schema-consistent rows as the truth has (unknown columns NaN)."""
    n = len(columns.true_X)
    draws = np.full((n, len(columns.names)), np.nan)
    for j, kind in enumerate(columns.kinds):
        if kind == "binary":
            draws[:, j] = rng.integers(0, 2, n)
        elif kind == "ordinal":
            low = math.ceil(columns.low[j])
            draws[:, j] = rng.integers(low, max(low, math.floor(columns.high[j])) + 1, n)
        elif kind == "numerical":
            draws[:, j] = rng.uniform(columns.low[j], columns.high[j], n)
    for members, exactly_one in columns.groups:
        pick = rng.integers(0, len(members) + (not exactly_one), n)
        hit = pick < len(members)
        draws[:, members] = 0.0
        draws[np.flatnonzero(hit), members[pick[hit]]] = 1.0
    return draws
