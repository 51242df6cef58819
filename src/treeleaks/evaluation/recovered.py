"""Rows recovered: how many training rows a reconstruction gives back, scored as a multiset.

A reconstruction is a multiset of rows; the positions it returns them at promise nothing.
Returned rows are matched one to one with the true rows at least cost, where pairing true
row i with returned row j costs

    the share of the trees that drew row i (every tree, without bootstrap) in which j falls
    in another leaf than i,
    + `LABEL_COST` when their labels differ (a regressor's: targets not exactly equal),
    + `L1_WEIGHT` times their mean range-normalised absolute difference (`metrics`).

A true row is **recovered** when its match has its label and shares its leaf in at least
`SHARED` of those trees: a row the model can hardly tell from the true one. The matching
recovers as many rows as any one-to-one matching can (a pair that would not count as
recovered costs more than all the others together, `_miss_cost`), and among those it has
the least cost. Beside the count: the rows returned, the matched error (the mean
range-normalised difference over matched pairs), the same for random rows, and for the
true rows' own boxes filled as the engine fills a box (the floor for box fills, which
scores every row recovered).

Up to `DENSE_CELLS` pairs, the matching is one exact linear assignment. Beyond, the pairs
that would count as recovered (one label, `SHARED` of the leaves; found by sparse products
over chunks of true rows, identical returned rows taken once) are matched first, by a
maximum flow of least cost, and the rows left are paired by assignments over blocks of at most
`DENSE_CELLS` pairs: the count is the same as the exact matching's, the matched error an
upper bound on it, and memory follows rows times trees, never rows squared.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.optimize import linear_sum_assignment

from treeleaks.counts.materialize import rows_in_boxes
from treeleaks.evaluation.metrics import _column_codes, _draw, _row_ids, _term_sums
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.ir.schema_columns import FeatureColumns, feature_columns, frame_matrix
from treeleaks.runtime.errors import TreeleaksError

SHARED = 0.9  # share of the drawing trees a recovered row's match shares the leaf in
LABEL_COST = 10.0  # a label apart costs more than any leaf and value difference
L1_WEIGHT = 1e-3  # the values' difference only breaks ties between leaf patterns
DENSE_CELLS = 1 << 22  # true x returned pairs matched exactly in memory (about 100 MB)
_EPS = 1e-9  # shares are ratios of small integers: 0.9 stays 0.9
_COST_UNITS = 1 << 20  # integer cost units per unit of cost, for the min-cost flow


class ScoreError(TreeleaksError, ValueError):
    """The frames or draws given to the score do not fit the model."""


@dataclass(frozen=True)
class RecoveryScore:
    """A reconstruction scored as a multiset against the true rows (see the module doc)."""

    rows_recovered: int  # true rows matched to a row of their label sharing their leaves
    recovered_share: float  # rows_recovered over the true rows
    rows_returned: int
    n_true: int
    matched_error: float  # mean range-normalised difference over matched pairs (nan: none)
    random_error: float  # the same for as many random schema-consistent rows (nan: not drawn)
    true_box_error: float  # the same for the true rows' own boxes, filled (nan: not computed)
    optimal: bool  # the matched error's matching is exact (False: rows left paired in blocks)

    def to_dict(self) -> dict[str, float | int | bool]:
        """Plain values for JSON reports (NaN where a figure was not measured)."""
        return asdict(self)

    def summary(self) -> str:
        """One line for people."""
        return (f"{self.rows_recovered:,} of {self.n_true:,} rows recovered "
                f"({self.recovered_share:.0%}), {self.rows_returned:,} returned; matched error "
                f"{self.matched_error:.3f} (random rows {self.random_error:.3f}, the true "
                f"boxes {self.true_box_error:.3f})")


@dataclass(frozen=True)
class References:
    """What a score is set beside: ``n_random`` sets of random rows (their matched error,
    drawn from ``seed``) and, with ``true_boxes``, the true rows' own boxes (the floor)."""

    n_random: int = 1
    true_boxes: bool = True
    seed: int = 0


def rows_recovered(
    model: ReleasedModel,
    truth: pd.DataFrame,
    reconstruction: pd.DataFrame,
    schema: FeatureSchema,
    label: str | None = None,
    draws: np.ndarray | None = None,
    references: References = References(),
) -> RecoveryScore:
    """Score ``reconstruction`` against ``truth`` by rows recovered (see the module doc).

    Both frames hold the label column (``label``, by default the model's) and either the
    model's features or, for a model read with its input map, the custodian's columns;
    ``schema`` describes the columns the values' difference is measured on. ``draws``
    (``(len(truth), n_trees)``, how often each tree drew each true row) default to the
    model's own when it carries them for these rows; unknown, every tree counts.
    ``references`` says what the score is set beside: random rows' error, the true rows'
    boxes' floor.
    """
    label = model.label_name if label is None else label
    n_random, true_boxes, seed = references.n_random, references.true_boxes, references.seed
    scorer = _scorer(model, truth, reconstruction, schema, label, draws)
    score = scorer.score(reconstruction, label)
    random_error = math.nan
    if n_random > 0:
        rng = np.random.default_rng(seed)
        random_error = float(np.mean([
            scorer.score(_random_rows(scorer.columns, truth[label], rng), label).matched_error
            for _ in range(n_random)]))
    box_error = math.nan
    if true_boxes:
        box_error = scorer.score(true_box_rows(model, truth, label, draws), label
                                 ).matched_error
    return replace(score, random_error=random_error, true_box_error=box_error)


def recovery_matching(
    model: ReleasedModel,
    truth: pd.DataFrame,
    reconstruction: pd.DataFrame,
    schema: FeatureSchema,
    label: str | None = None,
    draws: np.ndarray | None = None,
) -> pd.DataFrame:
    """The matching `rows_recovered` scores, one line per matched pair in true rows' order:
    ``true_row`` and ``returned_row`` (positions in the frames), ``shared`` (the share of
    the true row's drawing trees whose leaf they share), ``recovered`` and ``error`` (their
    mean range-normalised difference). Arguments as for `rows_recovered`."""
    label = model.label_name if label is None else label
    return _scorer(model, truth, reconstruction, schema, label, draws).match(
        reconstruction, label)


def _scorer(model: ReleasedModel, truth: pd.DataFrame, reconstruction: pd.DataFrame,
            schema: FeatureSchema, label: str, draws: np.ndarray | None) -> _Scorer:
    """The true rows as the score sees them, once the frames are checked."""
    for name, frame in (("true", truth), ("reconstruction", reconstruction)):
        if label not in frame.columns:
            raise ScoreError(f"the {name} frame has no label column {label!r}; rows are "
                             "recovered only with their label: pass label=<its column>")
    return _Scorer(model, feature_columns(truth, schema, label), _leaves(model, truth),
                   truth[label].to_numpy(), _drawn(model, draws, len(truth)))


# --- the model's view of the rows --------------------------------------------------------


def _features(model: ReleasedModel, frame: pd.DataFrame) -> np.ndarray:
    """The frame's rows as the model's features (encoded through its input map if needed)."""
    names = list(model.feature_names)
    if all(name in frame.columns for name in names):
        return frame[names].to_numpy(dtype=np.float64, na_value=np.nan)
    if model.inputs is not None and all(name in frame.columns for name in model.inputs.names):
        return model.inputs.encode(frame)[names].to_numpy(dtype=np.float64)
    wanted = names if model.inputs is None else model.inputs.names
    missing = [name for name in wanted if name not in frame.columns]
    raise ScoreError(f"a frame to score lacks the model's column(s) {missing[:5]}; give rows "
                     "with every column the model reads")


def _leaves(model: ReleasedModel, frame: pd.DataFrame) -> np.ndarray:
    """Each row's leaf in every tree, numbered across trees, ``(n_rows, n_trees)``."""
    X = _features(model, frame)
    return model.apply(X) + model.leaf_offsets


def _drawn(model: ReleasedModel, draws: np.ndarray | None, n_rows: int) -> np.ndarray:
    """Whether each tree drew each true row, ``(n_rows, n_trees)``; a row no tree drew (or
    draws unknown) counts every tree."""
    if draws is None:
        kept = [tree.draws for tree in model.trees]
        if model.bootstrap and all(d is not None and len(d) == n_rows for d in kept):
            draws = np.column_stack(kept)
    if draws is None:
        return np.ones((n_rows, model.n_trees), dtype=bool)
    draws = np.asarray(draws)
    if draws.shape != (n_rows, model.n_trees):
        raise ScoreError(f"draws have shape {draws.shape}, the true rows and trees make "
                         f"{(n_rows, model.n_trees)}; give one count per true row and tree")
    drawn = draws > 0
    drawn[~drawn.any(axis=1)] = True
    return drawn


# --- the matching ------------------------------------------------------------------------


@dataclass
class _Scorer:
    """The true rows as the model and the schema see them; scores returned frames."""

    model: ReleasedModel
    columns: FeatureColumns
    leaves: np.ndarray
    labels: np.ndarray
    drawn: np.ndarray

    def score(self, rows: pd.DataFrame, label: str) -> RecoveryScore:
        pairs = self.match(rows, label)
        recovered = int(pairs["recovered"].sum())
        return RecoveryScore(
            rows_recovered=recovered, recovered_share=recovered / len(self.labels),
            rows_returned=len(rows), n_true=len(self.labels),
            matched_error=float(pairs["error"].mean()) if len(pairs) else math.nan,
            random_error=math.nan, true_box_error=math.nan,
            optimal=len(self.labels) * len(rows) <= DENSE_CELLS)

    def match(self, rows: pd.DataFrame, label: str) -> pd.DataFrame:
        """The matching's pairs (see `recovery_matching`)."""
        n_true, n_rows = len(self.labels), len(rows)
        returned = _Returned(_leaves(self.model, rows), rows[label].to_numpy(),
                             frame_matrix(rows, self.columns.names, "reconstruction"))
        true_codes, row_codes = _label_codes(self.labels, returned.labels)
        miss = _miss_cost(n_true, n_rows)
        if n_true * n_rows <= DENSE_CELLS:
            cost, recoverable = self._cost(np.arange(n_true), np.arange(n_rows), returned,
                                           true_codes, row_codes)
            ti, ri = linear_sum_assignment(cost + miss * ~recoverable)
        else:
            ti, ri = self._sparse(returned, true_codes, row_codes)
        order = np.argsort(ti, kind="stable")
        ti, ri = ti[order], ri[order]
        shared = self._shared(ti, ri, returned)
        return pd.DataFrame({
            "true_row": ti, "returned_row": ri, "shared": shared,
            "recovered": (true_codes[ti] == row_codes[ri]) & (shared >= SHARED - _EPS),
            "error": _pair_terms(self.columns, ti, returned.X[ri])})

    def _shared(self, ti: np.ndarray, ri: np.ndarray, returned: _Returned) -> np.ndarray:
        """Per pair: the share of the true row's drawing trees whose leaf the pair shares."""
        same = (self.leaves[ti] == returned.leaves[ri]) & self.drawn[ti]
        return same.sum(axis=1) / self.drawn[ti].sum(axis=1)

    def _shared_matrix(self, ti: np.ndarray, ri: np.ndarray,
                       returned: _Returned) -> np.ndarray:
        """Shared drawing-tree leaves of every pair of ``ti`` x ``ri``, as shares (dense)."""
        width = int(max(self.leaves.max(initial=0), returned.leaves.max(initial=0))) + 1
        a = _one_hot(self.leaves[ti], self.drawn[ti], width)
        b = _one_hot(returned.leaves[ri], np.ones(returned.leaves[ri].shape, bool), width)
        return (a @ b.T).toarray() / self.drawn[ti].sum(axis=1)[:, None]

    def _cost(self, ti: np.ndarray, ri: np.ndarray, returned: _Returned,
              true_codes: np.ndarray, row_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The dense cost of every pair of ``ti`` x ``ri``, and whether each would count as
        recovered."""
        shared = self._shared_matrix(ti, ri, returned)
        apart = true_codes[ti][:, None] != row_codes[ri][None, :]
        cost = 1.0 - shared + LABEL_COST * apart
        cost += L1_WEIGHT / len(self.columns.names) * _term_sums(
            self.columns.true_X[ti], returned.X[ri], self.columns.scale)
        return cost, ~apart & (shared >= SHARED - _EPS)

    def _sparse(self, returned: _Returned, true_codes: np.ndarray,
                row_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The recoverable pairs matched first, the rest in blocks (see the module doc).
        Identical returned rows (values and label) are one group, so a table of many
        duplicates lists a true row's candidates once per distinct row."""
        group, first = _row_ids(_column_codes(np.column_stack([returned.X, row_codes]))[0])
        ti, ri, cost = self._recoverable(returned, true_codes, row_codes, first)
        mt, mr = _flow_assign(ti, group[ri], cost, group)
        left_t = np.setdiff1d(np.arange(len(true_codes)), mt)
        left_r = np.setdiff1d(np.arange(len(row_codes)), mr)
        pairs_t, pairs_r = [mt], [mr]
        rng = np.random.default_rng(0)
        left_t, left_r = rng.permutation(left_t), rng.permutation(left_r)
        n_blocks = max(1, math.ceil(len(left_t) * len(left_r) / DENSE_CELLS))
        for bt, br in zip(np.array_split(left_t, n_blocks), np.array_split(left_r, n_blocks),
                          strict=True):
            if len(bt) and len(br):
                i, j = linear_sum_assignment(
                    self._cost(bt, br, returned, true_codes, row_codes)[0])
                pairs_t.append(bt[i])
                pairs_r.append(br[j])
        return np.concatenate(pairs_t), np.concatenate(pairs_r)

    def _recoverable(self, returned: _Returned, true_codes: np.ndarray, row_codes: np.ndarray,
                     among: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pairs of a true row and a returned row ``among`` those given, of one label and
        sharing at least `SHARED` of the true row's leaves, with their costs; true rows in
        chunks, so no product holds more than `DENSE_CELLS` pairs."""
        found_t, found_r, found_share = [], [], []
        for code in np.intersect1d(true_codes, row_codes[among]):
            ts, rs = np.flatnonzero(true_codes == code), among[row_codes[among] == code]
            chunk = max(1, DENSE_CELLS // len(rs))
            for start in range(0, len(ts), chunk):
                part = ts[start:start + chunk]
                shared = self._shared_matrix(part, rs, returned)
                i, j = np.nonzero(shared >= SHARED - _EPS)
                found_t.append(part[i])
                found_r.append(rs[j])
                found_share.append(shared[i, j])
        if not found_t:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        ti, ri = np.concatenate(found_t), np.concatenate(found_r)
        cost = 1.0 - np.concatenate(found_share)
        return ti, ri, cost + L1_WEIGHT * _pair_terms(self.columns, ti, returned.X[ri])


@dataclass
class _Returned:
    leaves: np.ndarray
    labels: np.ndarray
    X: np.ndarray


def _pair_terms(columns: FeatureColumns, ti: np.ndarray, recon_X: np.ndarray) -> np.ndarray:
    """Per matched pair, the mean range-normalised difference (a NaN value disagrees fully)."""
    diff = np.abs(columns.true_X[ti] - recon_X) / columns.scale
    return np.nan_to_num(np.minimum(diff, 1.0), nan=1.0).mean(axis=1)


def _label_codes(truth: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shared integer codes of both label arrays (a missing label matches nothing)."""
    codes = pd.factorize(pd.Series(np.concatenate([truth, rows]).tolist()))[0]
    true_codes, row_codes = codes[:len(truth)], codes[len(truth):]
    return true_codes, np.where(row_codes < 0, -2, row_codes)


def _one_hot(leaves: np.ndarray, keep: np.ndarray, width: int) -> sparse.csr_matrix:
    """Rows x numbered leaves: 1 where the row sits in the leaf of a kept tree."""
    rows = np.repeat(np.arange(len(leaves)), keep.sum(axis=1))
    return sparse.csr_matrix((np.ones(len(rows), np.float32), (rows, leaves[keep])),
                             shape=(len(leaves), width))


def _miss_cost(n_true: int, n_rows: int) -> float:
    """What a pair that is not recovered adds to its cost: more than any matching's other
    costs can differ by, so the least-cost matching recovers as many rows as any can."""
    return (LABEL_COST + 1.0 + L1_WEIGHT) * (min(n_true, n_rows) + 1)


def _flow_assign(ti: np.ndarray, gi: np.ndarray, cost: np.ndarray,
                 group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The matching of true rows to groups of identical returned rows (``group``: each
    returned row's) over the recoverable pairs ``(ti, gi)`` that recovers the most rows, at
    least cost: a maximum flow of minimum cost, each group taking as many rows as it holds.
    Returns (true row, returned row) pairs."""
    if not len(ti):
        return ti, ti
    from ortools.graph.python import min_cost_flow

    trues, t_node = np.unique(ti, return_inverse=True)
    size = np.bincount(group)
    n_t, n_g = len(trues), len(size)
    source, sink = n_t + n_g, n_t + n_g + 1
    flow = min_cost_flow.SimpleMinCostFlow()
    flow.add_arcs_with_capacity_and_unit_cost(
        np.concatenate([np.full(n_t, source), t_node, n_t + np.arange(n_g)]),
        np.concatenate([np.arange(n_t), n_t + gi, np.full(n_g, sink)]),
        np.concatenate([np.ones(n_t + len(ti), np.int64), size]),
        np.concatenate([np.zeros(n_t, np.int64), np.rint(cost * _COST_UNITS).astype(np.int64),
                        np.zeros(n_g, np.int64)]))
    flow.set_node_supply(source, n_t)  # as many as can flow: the maximum, at least cost
    flow.set_node_supply(sink, -n_t)
    if flow.solve_max_flow_with_min_cost() != flow.OPTIMAL:
        raise RuntimeError("the recovered rows' min-cost flow did not solve")
    used = flow.flows(n_t + np.arange(len(ti))) > 0
    mt, mg = ti[used], gi[used]
    order = np.argsort(mg, kind="stable")  # each group hands out its rows in turn
    mt, mg = mt[order], mg[order]
    members = np.argsort(group, kind="stable")
    start = np.cumsum(size) - size
    rank = np.arange(len(mg)) - np.searchsorted(mg, mg)
    return mt, members[start[mg] + rank]


# --- the figures beside ------------------------------------------------------------------


def _random_rows(columns: FeatureColumns, labels: pd.Series,
                 rng: np.random.Generator) -> pd.DataFrame:
    """As many uniform schema-consistent rows as the truth has, with its labels shuffled
    (the class totals are in the model's counts)."""
    rows = pd.DataFrame(_draw(columns, rng), columns=columns.names)
    rows[labels.name] = rng.permutation(labels.to_numpy())
    return rows


def true_box_rows(model: ReleasedModel, truth: pd.DataFrame, label: str | None = None,
                  draws: np.ndarray | None = None) -> pd.DataFrame:
    """Each true row's own box (its paths' boxes in the trees that drew it, intersected),
    filled as the engine fills a box (`counts.materialize.rows_in_boxes`), with its label:
    what a reconstruction that found every row's leaves returns. ``draws`` as for
    `rows_recovered`."""
    label = model.label_name if label is None else label
    X = _features(model, truth)
    drawn = _drawn(model, draws, len(truth))
    lower, upper = np.full(X.shape, -np.inf), np.full(X.shape, np.inf)
    for t, tree in enumerate(model.trees):
        node, (node_low, node_high) = tree.apply_nodes(X), tree.node_boxes(model.n_features)
        d = drawn[:, t]
        lower[d] = np.maximum(lower[d], node_low[node[d]])
        upper[d] = np.minimum(upper[d], node_high[node[d]])
    rows = rows_in_boxes(replace(model, classes=[0]), FeatureSchema.for_model(model), lower,
                         upper, np.zeros(len(X), dtype=np.int64),
                         np.zeros(len(X), dtype=bool))["rows"]
    rows = rows[list(model.feature_names)]
    if model.inputs is not None:
        rows = model.inputs.decode(rows)
    rows[label] = truth[label].to_numpy()
    return rows
