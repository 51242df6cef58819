"""The release search: audit the original file, then refit each candidate of
`treeleaks.defences.release_grid` on the custodian's rows, strip it, audit the file it would
be released as (the audit's own `run_audit`, with the rows, so every level is measured),
score it by cross-validation, and pick the most accurate candidate whose level is strictly
below the original's.

The budget is one clock: the original's audit gets ``budget / (candidates + 1)`` and its
time (with its cross-validation) is the estimate of one candidate's; a budget that cannot
hold one more is refused before any candidate (`BudgetTooShort`). Each candidate then gets
the time left over the candidates still to run, so time one does not use passes on; a run
that reaches the end of the budget (or Ctrl-C) keeps what it measured and says so.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from treeleaks.defences.release_grid import (
    DP_FOREST,
    FOLDS,
    Candidate,
    Learner,
    cross_validated,
    grid,
)
from treeleaks.report.collect import run_audit
from treeleaks.report.evidence import AuditInput
from treeleaks.report.release_table import level_rank
from treeleaks.runtime.errors import TreeleaksError

if TYPE_CHECKING:
    import pandas as pd

    from treeleaks.ir.model import ReleasedModel

SUFFIX = {"skops": ".skops", "lightgbm": ".txt", DP_FOREST: ".json"}
FORMAT_VERSION = 1


class BudgetTooShort(TreeleaksError):
    """The budget holds the original's audit but not one candidate."""


@dataclass
class Measured:
    """One audited model: its settings, level, figures, score and seconds; ``content``
    the bytes of its stripped file (not in the table)."""

    settings: dict[str, Any]
    level: str | None = None
    why: str = ""
    lower_bound: bool = False
    rows_rebuilt: int | None = None
    rows_singled_out: int | None = None
    score: float | None = None
    seconds: float = 0.0
    audit_seconds: float = 0.0
    cv_seconds: float = 0.0
    error: str | None = None
    content: bytes | None = field(default=None, repr=False)
    suffix: str = ""

    def row(self, metric: str) -> dict[str, Any]:
        """The candidate's row of ``candidates.json``."""
        return {"settings": self.settings, "level": self.level, "why": self.why,
                "lower_bound": self.lower_bound, "rows_rebuilt": self.rows_rebuilt,
                "rows_singled_out": self.rows_singled_out, metric: _rounded(self.score),
                "seconds": round(self.seconds, 2), "audit_seconds": round(self.audit_seconds, 2),
                "cv_seconds": round(self.cv_seconds, 2), "error": self.error}


@dataclass
class Search:
    """The original's audit, the candidates measured, the one chosen (an index, None:
    none audits lower) and why the run stopped short (None: every candidate ran)."""

    original: Measured
    candidates: list[Measured]
    planned: int
    metric: str
    budget: float
    seconds: float = 0.0
    chosen: int | None = None
    stopped: str | None = None

    @property
    def chosen_candidate(self) -> Measured | None:
        return None if self.chosen is None else self.candidates[self.chosen]

    def table(self, model_name: str, model_sha256: str = "") -> dict[str, Any]:
        """``candidates.json``; ``model_sha256`` names the original file's bytes, so an
        audit quoting the table checks it is this file's."""
        chosen = self.chosen_candidate
        return {
            "format": "treeleaks.release", "version": FORMAT_VERSION, "model": model_name,
            "model_sha256": model_sha256,
            "metric": self.metric, "folds": FOLDS, "budget_s": self.budget,
            "seconds": round(self.seconds, 2), "complete": self.stopped is None,
            "stopped": self.stopped, "planned": self.planned,
            "original": self.original.row(self.metric),
            "candidates": [c.row(self.metric) for c in self.candidates],
            "chosen": None if chosen is None else {
                "index": self.chosen, "file": f"release{chosen.suffix}",
                "level": chosen.level, self.metric: _rounded(chosen.score),
                "cost": _rounded(_cost(self.original.score, chosen.score))},
            "none_lower": chosen is None,
        }


OnCandidate = Callable[[Measured, int, int], None]  # the record, its index, how many


@dataclass(frozen=True)
class Listener:
    """Who hears of each measurement as it is made: ``on_original(record, candidates)``
    and ``on_candidate(record, index, candidates)`` (None: nobody)."""

    on_candidate: OnCandidate | None = None
    on_original: Callable[[Measured, int], None] | None = None


def audit_original(model: ReleasedModel, name: str, estimator: Any, learner: Learner,
                   frame: pd.DataFrame, label: str, budget: float) -> Measured:
    """The original file's audit (with the rows) and its learner's cross-validated score."""
    start = time.perf_counter()
    record = _audited(Measured({"original": True}), model, name, estimator, frame, label,
                      budget)
    X, y = _split(model, frame, label)
    folds = time.perf_counter()
    record.score = cross_validated(learner.base, X, y, learner.classifier)
    record.cv_seconds = time.perf_counter() - folds
    record.seconds = time.perf_counter() - start
    return record


def search(model: ReleasedModel, name: str, estimator: Any, learner: Learner,
           frame: pd.DataFrame, label: str, budget: float,
           listener: Listener = Listener()) -> Search:
    """Audit the original, then every candidate within ``budget`` seconds in all (see the
    module docstring), telling ``listener`` of each as it is measured; raises
    `BudgetTooShort` before any candidate when one would not fit."""
    on_candidate, on_original = listener.on_candidate, listener.on_original
    start = time.perf_counter()
    deadline = start + budget
    X, y = _split(model, frame, label)
    candidates = grid(learner, y)
    original = audit_original(model, name, estimator, learner, frame, label,
                              budget / (len(candidates) + 1))
    metric = "accuracy" if learner.classifier else "r2"
    left = deadline - time.perf_counter()
    if original.lower_bound:
        raise BudgetTooShort(
            f"--budget {budget:g} s is too short: the original's audit, given "
            f"{budget / (len(candidates) + 1):.1f} s (the budget over {len(candidates)} "
            f"candidates and the original), was cut short at {original.level} ({original.why}), "
            f"a lower bound no candidate can be shown to audit below; one candidate needs "
            f"about as long as that audit, more than {original.seconds:.1f} s: give a "
            f"larger --budget")
    if level_rank(original.level) == 0:  # nothing audits lower: no candidate is refitted
        if on_original is not None:
            on_original(original, 0)
        return Search(original, [], 0, metric, budget, time.perf_counter() - start)
    if left < original.seconds:
        raise BudgetTooShort(
            f"--budget {budget:g} s is too short for one candidate: the original audits "
            f"{original.level} ({original.why}) in {original.seconds:.1f} s with its "
            f"cross-validation, about what one candidate needs; give --budget "
            f"{math.ceil((budget - left + original.seconds * len(candidates)) / 10) * 10} "
            f"for all {len(candidates)} candidates (at least "
            f"{math.ceil(budget - left + original.seconds)} s for one)")
    found = Search(original, [], len(candidates), metric, budget)
    if on_original is not None:
        on_original(original, len(candidates))
    for index, candidate in enumerate(candidates):
        left = deadline - time.perf_counter()
        if left <= 0:
            found.stopped = (f"the budget of {budget:g} s ran out after {index} of "
                             f"{len(candidates)} candidates")
            break
        try:
            record = _candidate(candidate, learner, X, y, frame, label,
                                left / (len(candidates) - index))
        except KeyboardInterrupt:
            found.stopped = (f"interrupted (Ctrl-C) after {index} of {len(candidates)} "
                             "candidates")
            break
        if choose(original, [record]) is None:
            record.content = None  # never written: its bytes need not be kept
        found.candidates.append(record)
        if on_candidate is not None:
            on_candidate(record, index, len(candidates))
    found.chosen = choose(original, found.candidates)
    found.seconds = time.perf_counter() - start
    return found


def choose(original: Measured, candidates: list[Measured]) -> int | None:
    """The most accurate candidate whose level is strictly below the original's (a level
    that is only a lower bound does not count), or None."""
    bar = level_rank(original.level)
    lower = [i for i, c in enumerate(candidates)
             if bar is not None and c.error is None and not c.lower_bound
             and (rank := level_rank(c.level)) is not None and rank < bar
             and c.score is not None]
    return max(lower, key=lambda i: candidates[i].score, default=None)


def _candidate(candidate: Candidate, learner: Learner, X: Any, y: np.ndarray,
               frame: pd.DataFrame, label: str, share: float) -> Measured:
    """Refit, strip, score and audit one candidate within about ``share`` seconds."""
    start = time.perf_counter()
    record = Measured({"learner": candidate.learner, **candidate.settings})
    try:
        fitted = candidate.estimator(learner).fit(X, y)
        released, record.content, record.suffix = _released(candidate, learner, fitted, X, y,
                                                            label)
        folds = time.perf_counter()
        record.score = cross_validated(candidate.estimator(learner), X, y, learner.classifier)
        record.cv_seconds = time.perf_counter() - folds
        audit_budget = max(share - (time.perf_counter() - start), 0.1 * share)
        _audited(record, released, f"release{record.suffix}", None, frame, label,
                 audit_budget)
    except (TreeleaksError, ValueError) as exc:
        record.error = " ".join(str(exc).split())
    record.seconds = time.perf_counter() - start
    return record


def _released(candidate: Candidate, learner: Learner, fitted: Any, X: Any, y: np.ndarray,
              label: str) -> tuple[ReleasedModel, bytes, str]:
    """The file a candidate would be released as, checked, and its model as the audit
    reads it: the own learner's stripped file (`strip` has loaded it back in its
    framework and compared its predictions), or the DP forest's treeleaks JSON."""
    if candidate.learner == DP_FOREST:
        from treeleaks.frontends.dp import from_dp_forest

        released = from_dp_forest(fitted, feature_names=[str(c) for c in X.columns],
                                  label_name=label)
        content = released.to_json().encode("utf-8")
        return check_dp_file(fitted, content, X), content, SUFFIX[DP_FOREST]
    from treeleaks.defences.strip import strip

    stripped = strip(learner.content(fitted), learner.file_format, rows=X, labels=y)
    suffix = SUFFIX[learner.file_format]
    return read_file(stripped.content, suffix), stripped.content, suffix


def read_file(content: bytes, suffix: str) -> ReleasedModel:
    """A stripped file's model as ``treeleaks audit`` reads it from disk."""
    from treeleaks.io import load_model

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"release{suffix}"
        path.write_bytes(content)
        return load_model(path, allow_regression=True, counts_removed_ok=True)


def check_dp_file(fitted: Any, content: bytes, X: Any) -> ReleasedModel:
    """The DP forest's file read back, checked to predict as the forest: each row's soft
    vote of its leaves' noisy counts (negatives as 0), as
    `DPRandomForestClassifier.predict_proba`."""
    from treeleaks.ir.model import ReleasedModel

    model = ReleasedModel.from_json(content.decode("utf-8"))
    matrix = np.asarray(X, dtype=np.float64)
    leaves = model.apply(matrix)
    votes = sum(np.clip(tree.counts, 0, None)[leaves[:, t]] for t, tree in
                enumerate(model.trees))
    expected = fitted.predict_proba(X)
    total = np.sum(votes, axis=1, keepdims=True)
    read = np.divide(votes, total, out=np.full_like(expected, 1 / expected.shape[1]),
                     where=total > 0)
    if not np.array_equal(read, expected):
        raise TreeleaksError("the DP forest's file read back votes differently from the "
                             "forest; nothing was written")
    return model


def _audited(record: Measured, model: ReleasedModel, name: str, estimator: Any,
             frame: pd.DataFrame, label: str, budget: float) -> Measured:
    """``record`` with the audit's level and figures for ``model`` (with the rows)."""
    if label not in model.feature_names:
        model.label_name = label  # predicates and rows read "<label column> = <class>"
    start = time.perf_counter()
    audit = run_audit(AuditInput(model, name, None, estimator, frame, label, None, budget))
    if audit.interrupted:  # Ctrl-C inside the audit: the search stops here
        raise KeyboardInterrupt
    record.audit_seconds = time.perf_counter() - start
    record.level, record.why = audit.risk["level"], audit.risk["why"]
    record.lower_bound = bool(audit.risk.get("lower_bound"))
    record.rows_rebuilt = audit.verdict.get("rows_reconstructed")
    record.rows_singled_out = audit.verdict.get("rows_singled_out")
    return record


def _split(model: ReleasedModel, frame: pd.DataFrame, label: str) -> tuple[Any, np.ndarray]:
    """The rows in the model's column order, and their labels as given."""
    return frame[list(model.feature_names)], frame[label].to_numpy()


def _cost(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else before - after


def _rounded(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 4)
