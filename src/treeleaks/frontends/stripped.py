"""Files whose counts were removed (``treeleaks strip``, or by hand): every frontend
recognises them, refuses them with one line saying what an adversary can still do, or, for
``treeleaks single-out``, reads their structure alone (every count 0, no draws, no gradient
sums), which is what `ReleasedModel.counts_released` reports as stripped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from treeleaks.frontends.boosting import Nodes
from treeleaks.frontends.stored import removed
from treeleaks.ir.description import ModelKind, StoredField, describe
from treeleaks.ir.model import ModelFormatError, ReleasedModel, Tree
from treeleaks.runtime.errors import CountsRemovedError

STILL_POSSIBLE = (
    "an adversary still has its structure, thresholds and leaf values: 'treeleaks single-out' "
    "on this file with --no-counts ranks the leaves to guess rows from, and --data checks "
    "them against the training rows")


def counts_removed(what: str, fields: str, random_states: bool = False,
                   never_kept: bool = False) -> CountsRemovedError:
    """The one-line refusal of a stripped file: ``what`` it is, the ``fields`` found zeroed
    or missing, whether its random states were neutralised too (a bootstrap forest); or,
    ``never_kept``, of a format that has no counts to remove."""
    states = (" and its trees' random states neutralised (the bootstrap draws cannot be "
              "recomputed)" if random_states else "")
    gone = (" keeps no counts (its format has none)" if never_kept else
            f"'s counts were removed ({fields}){states}")
    return CountsRemovedError(f"this {what}{gone}, so no attack that reads counts applies to "
                              f"it; {STILL_POSSIBLE}")


def zeroed_trees(held: list[np.ndarray], what: str, where: str = "") -> list[bool]:
    """Which trees hold ``what`` (their per-node counts) all at 0; a tree without nodes, or
    some trees zeroed and others not, is a damaged or edited file (`treeleaks strip` zeroes
    every tree's), refused naming the tree (``where``: the file, as a message's prefix)."""
    for index, counts in enumerate(held):
        if not counts.size:
            raise ModelFormatError(f"malformed tree {index}: a tree has no nodes (an emptied "
                                   "or truncated file); copy it again from where it was saved")
    zeroed = [not counts.any() for counts in held]
    if any(zeroed) and not all(zeroed):
        raise ModelFormatError(
            f"{where}tree {zeroed.index(True)}'s {what} are all 0 while tree "
            f"{zeroed.index(False)}'s are not: an edited file (treeleaks strip zeroes every "
            "tree's); copy it again from where it was saved")
    return zeroed


def structure_only(nodes: list[Nodes], classes: list[Any], names: list[str],
                   label_name: str, source: str, about: Stripped,
                   first_values: np.ndarray | None = None) -> ReleasedModel:
    """The IR of a stripped file: its trees' splits with every count 0 (a regressor's first
    tree with its leaf values ``first_values``), described as ``about`` says."""
    n_columns = max(1, len(classes))
    trees = []
    for index, shape in enumerate(nodes):
        n_leaves = int(np.unique(shape[4][shape[4] >= 0]).size)  # leaves, not paths
        trees.append(Tree(*shape, np.zeros((n_leaves, n_columns), dtype=np.int64),
                          n_samples=np.zeros(n_leaves, dtype=np.int64),
                          values=first_values if index == 0 else None))
    model = ReleasedModel(trees, list(classes), list(names), label_name=label_name,
                          source=source, task="classification" if classes else "regression")
    model.validate()
    model.description = describe(model, about.framework, about.estimator,
                                 removed(about.fields), kind=about.kind,
                                 bootstrap=about.bootstrap, stripped=True)
    return model


@dataclass(frozen=True)
class Stripped:
    """What a stripped file was before its counts went: its framework and estimator, the
    fields its framework stores, its kind (None: as its trees say) and whether it drew
    bootstrap samples (its random states neutralised, its trees still drew them)."""

    framework: str
    estimator: str
    fields: list[StoredField]
    kind: ModelKind | None = None
    bootstrap: bool = False
