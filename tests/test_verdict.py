"""The audit's verdict names each figure once (`Verdict`), and the report's JSON schema
lists exactly those figures (issue 42, item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import treeleaks.report.findings as findings

SCHEMA = Path(findings.__file__).with_name("schema.json")


def test_the_schema_lists_every_verdict_figure_and_no_other() -> None:
    verdict = json.loads(SCHEMA.read_text())["properties"]["verdict"]
    assert set(verdict["properties"]) == set(findings.VERDICT_KEYS)
    assert set(verdict["required"]) <= set(findings.VERDICT_KEYS)


def test_every_audit_writes_every_figure() -> None:
    figures = findings.Verdict(rows_proven=3).as_dict()
    assert tuple(figures) == findings.VERDICT_KEYS and figures["rows_proven"] == 3
    assert figures["rows_singled_out"] is None and figures["class_balance_estimated"] is False
