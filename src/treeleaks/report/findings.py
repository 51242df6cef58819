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
    the attack's own outcome (`treeleaks.runtime.vocabulary.Status`), which its figures carry."""

    COMPLETE = "complete"  # the attack finished within its budget
    PARTIAL = "partial"  # it stopped at its budget (or was interrupted): figures are lower bounds
    NOT_RUN = "not run"  # it does not apply to this model or input, or an earlier step stopped
    FAILED = "failed"  # it raised an error; the report says which


# the members by their short names, as the report's modules use them
COMPLETE, PARTIAL, NOT_RUN, FAILED = (RunStatus.COMPLETE, RunStatus.PARTIAL, RunStatus.NOT_RUN,
                                      RunStatus.FAILED)


@dataclass
class AttackRun:
    """One attack (or measured defence) of the audit: whether it ran, why not, and what it
    found. ``figures`` are plain JSON values named as the separate commands name them;
    ``budget_s`` is the share of the audit's budget it was given (None: not started)."""

    name: str
    title: str
    status: RunStatus
    why: str = ""
    time_s: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)
    budget_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        share = None if self.budget_s is None else round(self.budget_s, 3)
        return {"name": self.name, "title": self.title, "status": self.status, "why": self.why,
                "time_s": round(self.time_s, 3), "budget_s": plain(share),
                "figures": plain(self.figures)}


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

    @property
    def partial(self) -> bool:
        """Interrupted, or some attack stopped at its budget: figures are lower bounds."""
        return self.interrupted or any(a.status == PARTIAL for a in self.attacks)

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
