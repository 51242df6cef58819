"""Rich renderings shared by the CLI and the demo."""

from __future__ import annotations

from typing import Any

from rich.text import Text


def certificate_text(summary: dict[str, Any]) -> Text:
    """The certificate line of a result summary: verified, or how many counts differ."""
    certificate = summary["certificate"]
    if certificate is None:
        return Text("none: no rows to check", "red")
    checked = certificate["counts_checked"]
    if summary["verified"]:
        return Text(f"verified: the rows reproduce all {checked} released leaf counts", "green")
    wrong = certificate["counts_wrong"]
    return Text(f"not verified: {wrong} of {checked} leaf counts differ", "red")
