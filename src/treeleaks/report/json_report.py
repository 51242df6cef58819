"""The audit as JSON, checked against the JSON Schema kept beside this module
(``schema.json``) before it is written, so a report that leaves the machine always has the
documented shape."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

from treeleaks.report.findings import Audit
from treeleaks.runtime.errors import TreeleaksError


class ReportSchemaError(TreeleaksError):
    """A report does not match ``schema.json``: a bug in the audit."""


@cache
def report_schema() -> dict[str, Any]:
    """The JSON Schema of ``report.json``."""
    return json.loads(files("treeleaks.report").joinpath("schema.json").read_text("utf-8"))


def validate(report: dict[str, Any]) -> None:
    """Raise `ReportSchemaError` naming the first place ``report`` breaks the schema."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(report_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(report))
    if error is not None:
        where = "/".join(map(str, error.absolute_path)) or "(top level)"
        raise ReportSchemaError(f"the audit report breaks its schema at {where}: "
                                f"{error.message}")


def to_json(audit: Audit) -> str:
    """The validated JSON text of ``audit``."""
    report = audit.to_dict()
    validate(report)
    return json.dumps(report, indent=2, allow_nan=False) + "\n"
