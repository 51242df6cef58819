"""Rows one of many: which rows of a reconstruction the released counts leave open.

A forest's counts may fit more than one dataset. Starting from the rows a reconstruction
returns, count-neutral crossovers (`treeleaks.counts.crossover`: two rows of one class
trade some columns' values, every leaf keeps its draws of each class and its distinct
rows) build a second dataset that fits every count exactly as the first does. A returned
row is **one of many** when no row of that second dataset shares its leaf in `SHARED` of
the trees that drew it: the counts cannot tell it from a row elsewhere. Rows the probe
leaves alone are not proven: the probe only finds what crossovers reach in its time.

Forests whose draws are known or that draw every row once, read without an input map;
boosters are out (their leaf values follow every row's path through the earlier trees).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from treeleaks.counts.crossover import (
    SHARED,
    column_units,
    crossover_walk,
    kept_shares,
    position_draws,
)
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import Reconstruction

TRIES_PER_ROW = 3  # rows tried per returned row, beside the deadline: small runs end early
PROBE_SHARE = 0.1  # of a run's time limit the probe may take, of what the run left
PROBE_MAX_S = 10.0


def probe_seconds(time_limit: float, elapsed: float) -> float:
    """The probe's time after a run of ``time_limit`` that took ``elapsed``: a tenth of the
    limit, at most `PROBE_MAX_S`, never past the limit."""
    return max(0.0, min(PROBE_SHARE * time_limit, PROBE_MAX_S, time_limit - elapsed))


@dataclass(frozen=True)
class OpenRows:
    """The probe's finding: each returned row one of many or not, and the second dataset."""

    one_of_many: np.ndarray  # per returned row
    alternative: pd.DataFrame  # rows that fit every count as the returned ones do
    seconds: float
    moves: int

    @property
    def n_open(self) -> int:
        """How many returned rows the counts leave open."""
        return int(np.count_nonzero(self.one_of_many))

    def words(self) -> str:
        """The finding for people."""
        n = len(self.one_of_many)
        if not self.n_open:
            return (f"none of {n} found in {self.seconds:.1f} s of trading values between "
                    "rows (not a proof that they are pinned)")
        return (f"{self.n_open} of {n}: a second dataset fits every count as exactly and "
                f"has no row sharing {SHARED:.0%} of their leaves (found in "
                f"{self.seconds:.1f} s by trading values between rows)")


def probe_applies(model: ReleasedModel) -> bool:
    """Whether the probe reads this model's rows: a forest with exact counts, its draws
    known or none, read without an input map."""
    return (model.inputs is None and model.gradients is None and model.noise is None
            and (not model.bootstrap or all(tree.draws is not None for tree in model.trees)))


def rows_one_of_many(model: ReleasedModel, recon: Reconstruction, deadline: float,
                     schema: FeatureSchema | None = None, seed: int = 0) -> OpenRows | None:
    """Probe ``recon``'s rows until ``deadline`` (``time.perf_counter()``) at most (see the
    module doc), trading each of
    ``schema``'s groups (by default the model's own schema's) whole; None where the
    probe does not apply: no rows, rows not within every count, rows bound by side
    knowledge (trading values would break it), a booster, a model read through an input
    map, or a bootstrap forest whose draws are unknown."""
    if (not recon.n_rows or not recon.verified or recon.knowledge
            or time.perf_counter() >= deadline or not probe_applies(model)):
        return None
    try:
        draws = position_draws(model, recon.training_positions())
    except ValueError:
        return None
    names = list(model.feature_names)
    label = recon.rows[model.label_name].to_numpy()
    classes = (label.astype(np.float64) if model.is_regression
               else model.class_index(label))
    schema = FeatureSchema.for_model(model) if schema is None else schema
    groups = [*schema.one_hot_groups, *schema.at_most_one_groups]
    units = column_units(len(names), [[names.index(c) for c in g] for g in groups])
    start = time.perf_counter()
    X = recon.rows[names].to_numpy(dtype=np.float64)
    walk = crossover_walk(model, X, classes, draws, units=units, deadline=deadline,
                          max_tries=TRIES_PER_ROW * len(X), seed=seed)
    shares = kept_shares(model.apply(X), draws > 0, walk.leaves, model)
    alternative = pd.DataFrame(walk.X, columns=names).assign(**{model.label_name: label})
    return OpenRows(shares < SHARED, alternative, time.perf_counter() - start, walk.moves)
