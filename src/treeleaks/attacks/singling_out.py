"""Predicate singling out (Sedlmeyr 2024).

The predicates a released tree gives away that match exactly one training row.

A node of a tree whose stored counts hold exactly one row of some class is *vulnerable*: the
conjunction of its path's conditions and "label = that class" matches one training row and
no other. For a regression tree the same holds for a leaf with one row (its value is that
row's target). Counts of internal nodes are the sums of the leaves below them, so the IR's
leaf counts give every node's.

Which predicates are proven: a tree that saw every training row once (a single tree, a
no-bootstrap forest) counts rows exactly, so its predicates are proofs. A bootstrap tree
counts only its sample, so its predicate may also match out-of-bag rows; noisy (DP) counts
may be noise. In a no-bootstrap forest the certainty analysis proves further cells with
exactly one row of a class (`treeleaks.attacks.singling_out_cells`).

Without counts (stripped by the publisher) an adversary tries leaves deepest first with
every label; `tries_without_counts` gives the expected number of tries to a valid one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from treeleaks.attacks.predicates import CELLS_CUT, Predicate, box_conditions
from treeleaks.ir.model import ReleasedModel, Tree
from treeleaks.runtime.clock import RunClock
from treeleaks.runtime.errors import TreeleaksError
from treeleaks.runtime.vocabulary import Status

if TYPE_CHECKING:
    from treeleaks.ir.schema import FeatureSchema

PROVEN_TREE = "the tree counts every training row once"
NOT_PROVEN_BOOTSTRAP = (
    "bootstrap: the count covers this tree's sample only, so the predicate may also match "
    "out-of-bag rows")
NOT_PROVEN_NOISE = "noisy (DP) counts: a count of 1 may be noise"
COUNTS_STRIPPED = (
    "this model releases no counts (stripped, or a format that keeps none: ONNX, R's "
    "randomForest), so no predicate can be proven from it; only the no-counts ranking is "
    "available (single-out --no-counts), or check it against the training data (--data)")


class CountsUnavailableError(TreeleaksError):
    """The model's counts were stripped: no predicate can be proven from it alone."""


class DataMismatchError(TreeleaksError):
    """Data given to check predicates do not have the model's columns or labels."""


@dataclass
class SinglingOut:
    """Every vulnerable (node, label) pair of a model, shortest predicate first.

    `single_out` builds it.

    Parameters
    ----------
    predicates : list of Predicate
        The predicates, each matching one training row, shortest first.
    notes : list of str, optional
        Remarks for people: why predicates are not proven, or where the analysis stopped.
    label_name : str, default "label"
        The model's label column, for the predicates' text.
    binary_columns : frozenset of str, default frozenset()
        The model's binary columns, for the predicates' text.
    status : Status, default Status.DONE
        ``done``, or ``partial`` when the forest's cells were not all analysed (the
        predicates are then a lower bound).
    """

    predicates: list[Predicate]
    notes: list[str] = field(default_factory=list)
    label_name: str = "label"
    binary_columns: frozenset[str] = frozenset()
    status: Status = Status.DONE

    @classmethod
    def of(cls, model: ReleasedModel, predicates: list[Predicate],
           notes: list[str]) -> SinglingOut:
        """Collect the predicates found on a model, with its label and binary columns.

        Parameters
        ----------
        model : ReleasedModel
            The model the predicates were found on.
        predicates : list of Predicate
            The predicates, shortest first.
        notes : list of str
            Remarks for people; a note of a cut cell analysis makes the status partial.

        Returns
        -------
        SinglingOut
            The result.
        """
        from treeleaks.ir.schema import FeatureSchema

        features = FeatureSchema.infer(model).features
        binary = frozenset(name for name, spec in features.items() if spec.kind == "binary")
        cut = any(note.startswith(CELLS_CUT) for note in notes)
        return cls(predicates, notes, model.label_name, binary,
                   Status.PARTIAL if cut else Status.DONE)

    @property
    def n_proven(self) -> int:
        """The number of proven predicates."""
        return sum(p.proven for p in self.predicates)

    def summary(self) -> dict[str, Any]:
        """Summarize the result as plain JSON.

        Returns
        -------
        dict
            The status, every predicate, how many are proven, and the notes.
        """
        return {
            "status": self.status,
            "predicates": [p.to_dict(self.label_name, set(self.binary_columns))
                           for p in self.predicates],
            "n_predicates": len(self.predicates),
            "n_proven": self.n_proven,
            "notes": self.notes,
        }


def node_counts(tree: Tree) -> np.ndarray:
    """``(n_nodes, n_columns)``: every node's counts, the sums of its leaves'.

    A node that holds only some paths of a leaf (`Tree.whole_nodes`) holds an unknown
    share of its rows: its counts are -1, which no predicate takes for one row.
    """
    counts = np.zeros((len(tree.feature), tree.counts.shape[1]), dtype=np.int64)
    leaves = np.flatnonzero(tree.feature < 0)
    # each leaf counted once, at its first path: a whole node holds all its paths
    _, first = np.unique(tree.leaf_of_node[leaves], return_index=True)
    counts[leaves[first]] = tree.counts[tree.leaf_of_node[leaves[first]]]
    for node in reversed(tree.internal_nodes()):
        counts[node] = counts[tree.left[node]] + counts[tree.right[node]]
    counts[~tree.whole_nodes()] = -1
    return counts


def node_depths(tree: Tree) -> np.ndarray:
    """Every node's depth, the root's 0."""
    depth = np.zeros(len(tree.feature), dtype=np.int64)
    for node in tree.internal_nodes():
        depth[tree.left[node]] = depth[tree.right[node]] = depth[node] + 1
    return depth


def grounds(model: ReleasedModel) -> tuple[bool, str]:
    """Whether the model's per-tree counts prove their predicates, and why (not)."""
    if model.contradictions:  # an edited file: no dataset gives its counts
        return False, ("the file contradicts itself, so its counts prove nothing: "
                       f"{model.contradictions[0]}")
    if model.noise is not None:
        return False, NOT_PROVEN_NOISE
    if model.bootstrap:
        return False, NOT_PROVEN_BOOTSTRAP
    return True, PROVEN_TREE


def tree_predicates(model: ReleasedModel, index: int) -> list[Predicate]:
    """Every vulnerable (node, label) pair of tree ``index``."""
    tree = model.trees[index]
    proven, how = grounds(model)
    lower, upper = tree.node_boxes(model.n_features)
    out: list[Predicate] = []
    for node, cls in _lone_rows(model, tree):
        same_node = out and out[-1].node == node  # another class of the node just listed
        conditions = out[-1].conditions if same_node else box_conditions(
            lower[node], upper[node], model.feature_names)
        out.append(Predicate(index, node, conditions, _label(model, tree, node, cls),
                             proven, how))
    return out


def _lone_rows(model: ReleasedModel, tree: Tree) -> list[tuple[int, int]]:
    """The (node, class) pairs holding exactly one row of the class.

    A regressor's whole leaves of one row (class 0), a classifier's nodes of count 1 (with
    the rows of pooled classes apart, only where that row is alone in its node).
    """
    if model.is_regression:
        rows = tree.n_samples if tree.n_samples is not None else tree.counts[:, 0]
        leaves = np.flatnonzero((tree.feature < 0) & tree.whole_nodes())
        return [(int(n), 0) for n in leaves if rows[tree.leaf_of_node[n]] == 1]
    counts = node_counts(tree)
    hits = [(int(n), int(c)) for n, c in zip(*np.nonzero(counts == 1))]
    if tree.apart is not None:  # one row of the other classes is alone only in its node
        hits = [(n, c) for n, c in hits if c == tree.apart or counts[n].sum() == 1]
    return hits


def _label(model: ReleasedModel, tree: Tree, node: int, cls: int) -> object:
    """What a predicate on (``node``, ``cls``) says of its row's label.

    The class, the leaf's value for a regressor, None where the tree pools the labels or
    has no values.
    """
    return (model.classes[cls] if tree.apart is not None and cls == tree.apart
            else None if tree.pooled or (model.is_regression and tree.values is None)
            else float(tree.values[tree.leaf_of_node[node]]) if model.is_regression
            else model.classes[cls])


def require_counts(model: ReleasedModel) -> None:
    """Refuse a model whose counts were stripped."""
    if not model.counts_released:
        raise CountsUnavailableError(COUNTS_STRIPPED)


def single_out(model: ReleasedModel, schema: FeatureSchema | None = None, *,
               cells: bool = True, time_limit: float = 30.0) -> SinglingOut:
    """Find every predicate the model gives away that matches exactly one training row.

    Every vulnerable (node, label) pair of every tree, shortest predicate first. A tree
    that saw every row once proves its predicates; a bootstrap or noisy one does not.

    Parameters
    ----------
    model : ReleasedModel
        The model, classifier or regressor, with its counts.
    schema : FeatureSchema or None, default None
        The columns' domains for the cell analysis; None: what the splits imply.
    cells : bool, default True
        For a no-bootstrap forest of classifiers, also the cells its certainty analysis
        proves to hold one row of a class.
    time_limit : float, default 30.0
        Seconds for the cell analysis.

    Returns
    -------
    SinglingOut
        The predicates, with notes on what is not proven.

    Raises
    ------
    CountsUnavailableError
        The model's counts were stripped.
    """
    require_counts(model)
    clock = RunClock(time_limit)
    predicates = [p for t in range(model.n_trees) for p in tree_predicates(model, t)]
    proven, how = grounds(model)
    notes = [] if proven else [f"not proven: {how}"]
    if cells and model.n_trees > 1 and proven and not model.is_regression:
        from treeleaks.attacks.singling_out_cells import cell_predicates

        found, note = cell_predicates(model, schema, clock.deadline)
        predicates += found
        notes += [note] if note else []
    predicates.sort(key=lambda p: (len(p.conditions), p.tree is None, p.tree or 0, p.node))
    return SinglingOut.of(model, predicates, notes)


# --- checking against the training data ------------------------------------------------------


@dataclass
class Exposure:
    """What the predicates do on the data: rows each selects, which are singled out."""

    n_rows: int
    singled_out: list[int]
    n_valid: int
    n_checked: int

    @property
    def share_exposed(self) -> float:
        """The share of rows singled out."""
        return len(self.singled_out) / self.n_rows if self.n_rows else 0.0


def split_data(model: ReleasedModel, frame: pd.DataFrame, label: str
               ) -> tuple[pd.DataFrame, np.ndarray]:
    """The model's feature columns and the label of ``frame``; refuses other columns."""
    _refuse_other_columns(model, frame, label)
    X = frame[model.feature_names]
    text = [str(c) for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    if text:
        raise DataMismatchError(
            f"the data's column {text[0]!r} holds text where the model reads numbers; give "
            "it as the numbers the model was fitted on (a category's code, such as R's "
            "1, 2, ... for a factor's levels in their order)")
    y = frame[label].to_numpy()
    if model.is_regression:
        return X, y.astype(np.float64)
    try:
        return X, model.class_index(y)
    except ValueError as exc:
        raise DataMismatchError(f"the data's {exc}") from None


def _refuse_other_columns(model: ReleasedModel, frame: pd.DataFrame, label: str) -> None:
    """Refuse data without the label column, or whose columns are not the model's."""
    if label not in frame.columns:
        raise DataMismatchError(f"the data have no label column {label!r}; name it with --label")
    missing = [c for c in model.feature_names if c not in frame.columns]
    extra = [str(c) for c in frame.columns if c != label and c not in model.feature_names]
    if missing or extra:
        what = (f"lack the model's columns {', '.join(missing[:5])}" if missing else
                f"have columns the model does not know: {', '.join(extra[:5])}")
        raise DataMismatchError(f"the data {what}; give the data the model was trained on, "
                                f"with the columns {', '.join(model.feature_names[:5])}...")


def check_against_data(result: SinglingOut, model: ReleasedModel, frame: pd.DataFrame,
                       label: str) -> Exposure:
    """Fill each predicate's ``matches`` and list the rows singled out.

    ``matches``: the rows of its label a predicate selects in ``frame``. A row is singled
    out when some predicate selects it alone.
    """
    X, y = split_data(model, frame, label)
    singled: set[int] = set()
    valid = 0
    for p in result.predicates:
        if p.label is None:  # a pooled tree's predicate selects rows of any class
            of_label = np.ones(len(y), dtype=bool)
        elif model.is_regression:
            of_label = np.isclose(y, p.label, rtol=1e-9, atol=1e-12)
        else:
            of_label = y == model.classes.index(p.label)
        p.matches = np.flatnonzero(p.selects(X) & of_label).tolist()
        if len(p.matches) == 1:
            valid += 1
            singled.add(p.matches[0])
    return Exposure(len(frame), sorted(singled), valid, len(result.predicates))


# --- without counts: leaves deepest first, every label ----------------------------------------


@dataclass(frozen=True)
class Tries:
    """The deepest-first ranking's cost.

    ``expected`` tries to the first valid predicate with ties in depth broken at random
    (None: no candidate is valid), ``in_order`` the tries in the listed order, over
    ``n_candidates`` of which ``n_valid`` are valid.
    """

    expected: float | None
    in_order: int | None
    n_candidates: int
    n_valid: int


def no_counts_ranking(model: ReleasedModel, tree: int = 0) -> list[tuple[int, int, int]]:
    """The adversary's candidates in tree ``tree`` without counts.

    ``(node, label index, depth)`` for every leaf and label, deepest leaves first (for a
    regressor the one label is the leaf's value).
    """
    t = model.trees[tree]
    depth = node_depths(t)
    leaves = np.flatnonzero(t.feature < 0)
    leaves = leaves[np.argsort(-depth[leaves], kind="stable")]
    labels = 1 if model.is_regression else model.n_classes
    return [(int(n), c, int(depth[n])) for n in leaves for c in range(labels)]


def no_counts_guesses(model: ReleasedModel) -> SinglingOut:
    """The no-counts adversary's candidates as (unproven) predicates, in the order tried.

    Every tree's leaves deepest first, every label (a regressor's: the leaf's value). What
    a stripped file still allows (``single-out --no-counts``).
    """
    guesses = []
    for t, tree in enumerate(model.trees):
        lower, upper = tree.node_boxes(model.n_features)
        for rank, (node, c, _) in enumerate(no_counts_ranking(model, t), start=1):
            value = (model.classes[c] if not model.is_regression else None
                     if tree.values is None else float(tree.values[tree.leaf_of_node[node]]))
            guesses.append(Predicate(t, node, box_conditions(lower[node], upper[node],
                                                             model.feature_names),
                                     value, False, f"no-counts guess {rank} of tree {t}"))
    return SinglingOut.of(model, guesses,
                          ["no counts used: these are guesses, deepest leaves first"])


def open_guesses(model: ReleasedModel) -> int:
    """How many of the no-counts guesses (`no_counts_guesses`) the file's counts leave open.

    A classifier's tree whose exact per-class counts cover every training row (no
    bootstrap, no noise, neither pooled nor uncounted) settles each guess: its leaf holds 0
    or at least 2 rows of the label (no guess can single one out) or exactly 1 (a predicate
    `single_out` already lists). Every other tree's guesses stay open: a bootstrap count
    covers the sample only, a pooled or removed count does not say the label's, and a
    regressor's guess is its leaf's value, which one row of a larger leaf may hold.
    """
    settled = (not model.bootstrap and model.noise is None and model.counts_released
               and not model.is_regression)
    open_ = 0
    for t, tree in enumerate(model.trees):
        if not (settled and tree.counted and not tree.pooled):
            open_ += len(no_counts_ranking(model, t))
    return open_


def tries_without_counts(model: ReleasedModel, tree: int = 0,
                         leaf_counts: np.ndarray | None = None) -> Tries:
    """The number of tries the deepest-first ranking needs in tree ``tree``.

    A candidate is valid when its leaf holds one row of its label, by the model's counts or
    by ``leaf_counts`` (``(n_leaves, labels)``, measured on the training data).
    """
    t = model.trees[tree]
    if leaf_counts is None:
        require_counts(model)
        leaf_counts = (t.n_samples[:, None] if model.is_regression and t.n_samples is not None
                       else t.counts)
    ranking = no_counts_ranking(model, tree)
    valid = np.array([leaf_counts[t.leaf_of_node[n], c] == 1 for n, c, _ in ranking])
    depths = np.array([d for _, _, d in ranking])
    in_order = int(np.argmax(valid)) + 1 if valid.any() else None
    return Tries(expected_tries(depths, valid), in_order, len(ranking), int(valid.sum()))


def expected_tries(depths: np.ndarray, valid: np.ndarray) -> float | None:
    """Expected position of the first valid candidate, deepest first.

    Candidates are tried deepest first and in random order within a depth: all of every
    deeper group without a valid one, then ``(m + 1) / (v + 1)`` within the first group of
    ``m`` holding ``v`` valid.
    """
    tried = 0
    for depth in sorted(set(depths.tolist()), reverse=True):
        group = depths == depth
        m, v = int(group.sum()), int(valid[group].sum())
        if v:
            return tried + (m + 1) / (v + 1)
        tried += m
    return None


def measured_leaf_counts(model: ReleasedModel, frame: pd.DataFrame, label: str,
                         tree: int = 0) -> np.ndarray:
    """``(n_leaves, labels)``: rows of each label per leaf of tree ``tree`` in the data.

    A regressor's leaves: rows per leaf.
    """
    X, y = split_data(model, frame, label)
    leaves = model.trees[tree].apply(X.to_numpy(dtype=np.float64))
    n_labels = 1 if model.is_regression else model.n_classes
    counts = np.zeros((model.trees[tree].n_leaves, n_labels), dtype=np.int64)
    np.add.at(counts, (leaves, 0 if model.is_regression else y), 1)
    return counts
