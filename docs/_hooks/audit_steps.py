"""MkDocs hook: the audit's steps and their weights, generated at build time from the steps.

A page holding the marker below gets, in its place, the table
`treeleaks.report.audit_steps.markdown_table` makes from `STEPS`, so the weights the
documentation states cannot drift from the ones the audit uses.
"""

from __future__ import annotations

MARKER = "<!-- treeleaks-audit-steps -->"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    from treeleaks.report.audit_steps import markdown_table

    return markdown.replace(MARKER, markdown_table())
