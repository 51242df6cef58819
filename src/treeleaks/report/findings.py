"""What an audit found: one record per attack run, and the audit that holds them.

The records are plain data so the JSON report is a direct dump of them and the HTML report
reads the same fields; nothing here runs an attack (`treeleaks.report.collect` does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import numpy as np

from treeleaks import __version__


class RunStatus(StrEnum):
    """How an attack fared in the audit (`AttackRun.status`): the report's words, beside
    the attack's own outcome (`treeleaks.runtime.vocabulary.Status`), which its figures carry.
    `words` says what happened in full, with the measured times."""

    COMPLETE = "complete"  # the attack finished within its budget
    # it stopped without a complete answer, at its budget (`AttackRun.cut_short`) or because
    # it could go no further (its why says what stopped it): figures are lower bounds
    PARTIAL = "partial"
    NOT_RUN = "not run"  # it applies, but the budget ran out or the audit was interrupted first
    NOT_APPLICABLE = "does not apply"  # to this model or input; its why says why
    FAILED = "failed"  # it raised an error; the report says which


# the members by their short names, as the report's modules use them
COMPLETE, PARTIAL, NOT_RUN, NOT_APPLICABLE, FAILED = (
    RunStatus.COMPLETE, RunStatus.PARTIAL, RunStatus.NOT_RUN, RunStatus.NOT_APPLICABLE,
    RunStatus.FAILED)
OUT_OF_TIME = 0.9  # a run that used this share of its time or more ran out of it


def ran_out_of_time(used_s: float, limit_s: float | None) -> bool:
    """Whether a run that took ``used_s`` seconds stopped at its limit (None: no limit)."""
    return limit_s is not None and math.isfinite(limit_s) and used_s >= OUT_OF_TIME * limit_s


@dataclass
class AttackRun:
    """One attack (or measured defence) of the audit: whether it ran, why not, and what it
    found. ``figures`` are plain JSON values named as the separate commands name them;
    ``budget_s`` is the share of the audit's budget it was given (None: not started);
    ``cut_short``: a partial run stopped at its time (not because it could go no
    further), from the measured times (`ran_out_of_time`)."""

    name: str
    title: str
    status: RunStatus
    why: str = ""
    time_s: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)
    budget_s: float | None = None
    cut_short: bool = False

    @property
    def outcome(self) -> str:
        """What happened, with the measured times: "complete in S s of T s", "cut short at
        S s of T s", "stopped without a complete answer after S s", "does not apply", "not run"
        or "failed"."""
        used = f"{self.time_s:.1f} s"
        share = ("" if self.budget_s is None or not math.isfinite(self.budget_s)
                 else f" of {self.budget_s:.1f} s")
        if self.status == COMPLETE:
            return f"complete in {used}{share}"
        if self.status == PARTIAL and self.cut_short:
            return f"cut short at {used}{share}"
        if self.status == PARTIAL:
            return f"stopped without a complete answer after {used}"
        return str(self.status)

    @property
    def words(self) -> str:
        """The `outcome` and why, as the command line says it: "does not apply (a single
        tree: ...)", "cut short at 50.9 s of 50.7 s (...)", ..."""
        return self.outcome + (f" ({self.why})" if self.why else "")

    def to_dict(self) -> dict[str, Any]:
        share = None if self.budget_s is None else round(self.budget_s, 3)
        return {"name": self.name, "title": self.title, "status": self.status, "why": self.why,
                "time_s": round(self.time_s, 3), "budget_s": plain(share),
                "cut_short": self.cut_short, "figures": plain(self.figures)}


@dataclass
class Defence:
    """A defence that applies to the model, with its measured (or cited) effect."""

    name: str
    effect: str
    figures: dict[str, Any]
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "effect": self.effect, "figures": plain(self.figures),
                "source": self.source}


@dataclass(frozen=True)
class Verdict:
    """An audit's headline figures, each named once here (None: not measured). Every audit
    writes all of them, and `report/schema.json` lists the same keys (a test holds the two
    equal)."""

    rows_reconstructed: int | None = None
    rows_reconstructed_partial: bool = False
    rows_pinned: int | None = None  # rebuilt rows with every value within 5% of its range
    rows_reconstructed_exactly: int | None = None
    rows_proven: int | None = None
    rows_proven_pinned: int | None = None  # proven rows with every value pinned (not boxes)
    targets_given_away: int | None = None  # a regressor's targets given away exactly
    rows_singled_out: int | None = None
    rows_singled_out_proven: int | None = None  # from the model alone, whatever the data
    singled_out_measured_on_data: bool = False
    singling_predicates: int | None = None
    singling_predicates_proven: int | None = None
    singling_predicates_valid: int | None = None
    singling_guesses_open: int | None = None  # leaf guesses the counts do not settle
    dist_g: float | None = None
    error: float | None = None
    baseline_error: float | None = None
    values_pinned_within_5pct: float | None = None
    leak_test_p_value: float | None = None
    leak_test_leak: bool | None = None
    n_rows_given_away: int | None = None
    class_balance_given_away: dict[str, int] | None = None
    class_balance_estimated: bool = False
    rows_in_data: int | None = None
    # fields that give every training row's label, leaf or values outright (R's y, where)
    fields_per_row: list[str] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The figures by name, as the report's JSON holds them."""
        return {name: getattr(self, name) for name in VERDICT_KEYS}


VERDICT_KEYS = tuple(Verdict.__dataclass_fields__)


@dataclass
class Audit:
    """Everything the report says. ``verdict`` holds the headline figures (None: not
    measured), ``risk`` the level and the rule that set it, ``rows`` the custodian's
    per-row table (with their data), ``rebuilt`` the rows the reconstruction rebuilt
    (`treeleaks.report.rebuilt`), ``plots_data`` what the pictures draw, ``budget`` the
    whole audit's budget, its rule and the wall time used (`treeleaks.report.budget`).
    ``estimator`` and ``vulnerable_nodes`` feed the tree drawing and stay out of the JSON."""

    model: dict[str, Any]
    exposed: dict[str, Any]
    assumptions: dict[str, Any]
    attacks: list[AttackRun] = field(default_factory=list)
    verdict: dict[str, Any] = field(default_factory=dict)
    risk: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] | None = None
    rebuilt: dict[str, Any] | None = None
    defences: list[Defence] = field(default_factory=list)
    plots_data: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    estimator: Any = None
    vulnerable_nodes: list[int] = field(default_factory=list)
    budget: dict[str, Any] | None = None
    release_command: str | None = None  # the release search to run, when none was quoted

    @property
    def partial(self) -> bool:
        """Interrupted, or some attack that applies stopped without a complete answer or
        did not run for want of time: figures are lower bounds."""
        return self.interrupted or any(a.status in (PARTIAL, NOT_RUN) for a in self.attacks)

    def attack(self, name: str) -> AttackRun | None:
        return next((a for a in self.attacks if a.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (validated against ``schema.json`` by `treeleaks.report.json_report`)."""
        return {
            "format": "treeleaks.audit",
            "version": 1,
            "created": self.created,
            "treeleaks_version": __version__,
            "partial": self.partial,
            "interrupted": self.interrupted,
            "model": plain(self.model),
            "verdict": plain(self.verdict),
            "risk": plain(self.risk),
            "exposed": plain(self.exposed),
            "attacks": [a.to_dict() for a in self.attacks],
            "rows": None if self.rows is None else plain(self.rows),
            "rebuilt": plain(self.rebuilt),
            "defences": [d.to_dict() for d in self.defences],
            "release_command": self.release_command,
            "assumptions": plain(self.assumptions),
            "budget": plain(self.budget),
        }


def plain(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays as Python ones and NaN / infinity as None,
    so it dumps as strict JSON."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    return value
