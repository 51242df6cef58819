"""The release audit: run every attack that applies to a model and report what they found,
as JSON for machines and one self-contained HTML page for people (`treeleaks audit`).

``evidence`` runs each attack through the library, ``remedies`` measures the defences,
``collect`` decides what applies and assembles the `findings.Audit` (``rule_lists`` for
rule lists), ``custodian`` builds the per-row table, ``risk`` sets the level,
``json_report`` validates against ``schema.json``, ``html_report`` and ``plots`` draw the
page, ``dp_costs`` holds the DP benchmark's figures the audit cites.
"""
