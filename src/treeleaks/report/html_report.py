"""The audit as one self-contained HTML page: inline CSS, pictures embedded as base64 PNG,
no network, readable printed; a small inline script sorts the per-row table.

The verdict comes first (the risk level, the rule that set it, the headline figures in
plain words), then the evidence per attack, the pictures, the custodian's rows, what to do
(each defence with its number), the assumptions and the rules behind the level.
"""

from __future__ import annotations

import html
import math
from typing import Any

from treeleaks import __version__
from treeleaks.ir.description import ModelDescription
from treeleaks.report import plots
from treeleaks.report.findings import COMPLETE, NOT_RUN, PARTIAL, Audit
from treeleaks.report.rebuilt import rebuilt_headline
from treeleaks.report.risk import p_value_text, singling_candidates

ROWS_SHOWN = 1000  # rows in the HTML table, most exposed first; report.json has all
CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;
margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}th.sortable{cursor:pointer}
.risk{display:inline-block;padding:.3em .9em;border-radius:4px;color:#fff;font-weight:bold;
font-size:1.3em}
.HIGH{background:#c62828}.MEDIUM{background:#ef6c00}.LOW{background:#2e7d32}
.partial{background:#fff3cd;border:1px solid #e0b100;padding:.6em 1em;margin:1em 0}
.status-complete{color:#2e7d32}.status-partial{color:#b26a00}
.status-not-run,.status-does-not-apply{color:#666}.status-failed{color:#c62828}
.verdict td:first-child{font-weight:bold;width:40%}
.muted{color:#666;font-size:.9em}figure{margin:1em 0}img{max-width:100%}
figcaption{color:#555;font-size:.9em}
.cards{display:flex;flex-wrap:wrap;gap:0 2em}.cards section{max-width:48%}
.cards h3{font-size:1em}td.col-exposure{min-width:14em}.wide{overflow-x:auto}
@media print{body{max-width:none;margin:0}.cards section{max-width:none}
h2{break-after:avoid}tr,figure{break-inside:avoid}th.sortable{cursor:auto}}
"""
SORT_SCRIPT = """
document.querySelectorAll("table.sortable-table").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, column) {
    th.classList.add("sortable");
    th.addEventListener("click", function () {
      var body = table.tBodies[0], rows = Array.from(body.rows);
      var up = th.dataset.order !== "asc";
      rows.sort(function (a, b) {
        var x = a.cells[column].dataset.value, y = b.cells[column].dataset.value;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return up ? c : -c;
      });
      rows.forEach(function (row) { body.appendChild(row); });
      th.dataset.order = up ? "asc" : "desc";
    });
  });
});
document.documentElement.dataset.sortReady = "yes";
"""


FIGURE_NAMES = {  # the figures' JSON names, in words; others show their JSON name
    "status": "solver status", "formulation": "formulation", "n_rows": "rows reconstructed",
    "proven_rows": "rows proven to be training rows",
    "proven_pattern_rows": "rows whose pinned values are proven",
    "free_values": "values the model leaves open", "verified": "reproduces every count",
    "certainty_complete": "proofs finished", "n_cells": "cells", "strategy": "cells found by",
    "error": "reconstruction error", "baseline_error": "random guesses' error",
    "exact_share": "share of your rows rebuilt exactly", "exact_rows": "rows rebuilt exactly",
    "label_agreement": "labels right", "n_predicates": "vulnerable (node, label) pairs",
    "n_proven": "of them proven", "rows_singled_out_at_least": "rows singled out (model alone)",
    "shortest_predicate": "shortest predicate (conditions)",
    "mean_expected_tries_without_counts": "guesses needed without counts",
    "rows_singled_out": "your rows singled out",
    "predicates_matching_one_row": "predicates matching one of your rows",
    "dist_g": "dist_g (joint)", "dist": "dist (per attribute)", "tree": "most revealing tree",
    "trees_measured": "trees measured", "n_trees": "trees", "dist_g_median": "median dist_g",
    "rows_fully_determined": "rows with every value known", "min_count": "k",
    "nodes_before": "nodes before", "nodes_after": "nodes after",
    "leaves_before": "leaves before", "leaves_after": "leaves after",
    "predicates_left": "singling-out predicates left",
    "accuracy_before": "accuracy on your rows before", "accuracy_after": "accuracy after",
    "p_value": "p-value", "leak": "a leak", "mean": "error against population samples",
    "guaranteed_recovery": "every consistent dataset recovers at least",
    "log_likelihood": "log-likelihood of the counts",
    "log_likelihood_bound": "no dataset exceeds",
    "mean_interval_width": "mean interval of a numerical value (share of its range)",
    "pinned_within_1pct": "values pinned within 1% of their range",
    "pinned_within_5pct": "values pinned within 5%", "pinned_within_10pct":
    "values pinned within 10%",
    "rows_recovered": "your rows recovered (each matched to a rebuilt row with its label, in "
                      "its leaf in 90% of the trees that drew it)",
    "recovered_share": "share of your rows recovered",
}


def _e(value: Any) -> str:
    return html.escape(str(value))


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def render(audit: Audit) -> str:
    """The whole page."""
    model = audit.model
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>treeleaks audit: {_e(model['path'])}</title><style>{CSS}</style></head>",
        "<body>",
        f"<h1>What does <code>{_e(model['path'])}</code> reveal about its training data?</h1>",
        f'<p class="muted">treeleaks audit of a {_e(model["kind"])} '
        f"({_e(model['source'])}, {_e(_size(model))}, {model['n_features']} features), "
        f"{_e(audit.created[:16].replace('T', ' '))} UTC, treeleaks {_e(__version__)}. This file "
        "is self-contained: it loads nothing from the network.</p>",
    ]
    if audit.partial:
        parts.append('<div class="partial" id="partial"><strong>Partial report.</strong> '
                     + ("The audit was interrupted (Ctrl-C); attacks after that point did "
                        "not run. " if audit.interrupted else "")
                     + "Some attacks were cut short at their budget, stopped without a "
                     "complete answer, or had no time left to run (see Assumptions): the "
                     "figures are lower bounds on what an adversary can do.</div>")
    parts += [_verdict(audit), _exposed(audit), _pictures(audit), _defences(audit),
              _rows(audit), _rebuilt(audit), _evidence(audit), _assumptions(audit), _rules(audit),
              f"<script>{SORT_SCRIPT}</script></body></html>"]
    return "\n".join(p for p in parts if p)


def _size(model: dict[str, Any]) -> str:
    if model["kind"] == "rule list":
        return f"{model['n_rules']} rules and a default"
    return "1 tree" if model["n_trees"] == 1 else f"{model['n_trees']} trees"


def _partial_kind(audit: Audit) -> str:
    """What a partial reconstruction's rows are: within every count, or only in boxes."""
    if audit.rebuilt is not None and not audit.rebuilt["checked"]:
        return "each in the box the model gives it; their filled values do not fit every count"
    return "a partial dataset that fits every count"


def _verdict(audit: Audit) -> str:
    risk = audit.risk
    rows = "".join(f"<tr><td>{_e(a)}</td><td>{_e(b)}</td></tr>"
                   for a, b in _verdict_lines(audit))
    bound = " (a lower bound: some attacks were cut short)" if risk["lower_bound"] else ""
    also = ("<p><strong>Also:</strong> " + "; ".join(map(_e, risk["also"])) + ".</p>"
            if risk["also"] else "")
    presumed = " (presumed)" if risk.get("presumed") else ""
    checks = "".join(f"<li>{_e(c)}</li>" for c in risk.get("checks", []))
    settle = (f"<p><strong>To settle what is presumed:</strong></p><ul>{checks}</ul>"
              if checks else "")
    return (f'<h2 id="verdict">Verdict</h2><p><span class="risk {risk["level"]}">'
            f"{risk['level']} risk{presumed}</span></p><p><strong>Why:</strong> "
            f"{_e(risk['why'])}"
            f"{_e(bound)}. <span class=\"muted\">Rule: {_e(risk['rule'])} (the rules are "
            "listed at the end).</span></p>" + also + settle + '<table class="verdict">'
            + rows + "</table>")


def _verdict_lines(audit: Audit) -> list[tuple[str, str]]:
    """The verdict's figures, a (name, words) pair each."""
    v = audit.verdict
    n = v["rows_in_data"]
    of_n = f" of {n:,}" if n is not None else ""
    lines = []
    if v["rows_reconstructed_exactly"] is not None:
        lines.append(("Training rows reconstructed exactly",
                      f"{v['rows_reconstructed_exactly']:,}{of_n}"))
    elif v["rows_proven"]:
        lines.append(("Training rows reconstructed exactly", f"at least {v['rows_proven']:,} "
                      "(the proven ones; your rows, --data, measure the rest)"))
    return [*lines, *_row_lines(audit, of_n), *_measure_lines(v), *_given_away_lines(audit)]


def _measure_lines(v: dict[str, Any]) -> list[tuple[str, str]]:
    """dist_g, the values pinned, the error beside random guesses and the leak test."""
    lines = []
    if v["dist_g"] is not None:
        lines.append(("How far the rest is narrowed down", f"dist_g = {v['dist_g']:.3f} "
                      "(share of a row's entropy a tree leaves; 1 = nothing revealed, "
                      "0 = every row recovered)"))
    if v.get("values_pinned_within_5pct") is not None:
        lines.append(("Numerical values pinned within 5% of their range",
                      f"{v['values_pinned_within_5pct']:.1%} (the interval of the leaves "
                      "each reconstructed row falls in)"))
    if v["error"] is not None:
        lines.append(("Reconstruction error", f"{v['error']:.4f} (random guesses: "
                      f"{v['baseline_error']:.4f}; 0 = every value right)"))
    if v.get("leak_test_p_value") is not None:
        lines.append(("Leak or distribution", f"{p_value_text(v['leak_test_p_value'])} ("
                      + ("a leak: " if v["leak_test_leak"] else "no evidence of a leak: ")
                      + "reconstruction against the training rows vs population samples)"))
    return lines


def _given_away_lines(audit: Audit) -> list[tuple[str, str]]:
    """N and the class balance the file gives away, in its reader's words (as every
    command prints them) when it has a description."""
    about = _description(audit)
    if about is not None:
        return [("Training-set size given away", about.n_rows_text()),
                ("Class balance given away", about.class_balance_text())]
    v = audit.verdict
    balance = v["class_balance_given_away"]
    return [("Training-set size given away", _n_rows_text(v["n_rows_given_away"])),
            ("Class balance given away", "not exposed" if balance is None else
             ", ".join(f"{k}: {c:,}" for k, c in balance.items()))]


def _row_lines(audit: Audit, of_n: str) -> list[tuple[str, str]]:
    """The verdict's row counts, each named for what it is (rebuilt, pinned, proven, singled
    out, candidates)."""
    v = audit.verdict
    lines = _rebuilt_lines(audit, of_n)
    if v.get("targets_given_away") is not None:
        lines.append(("Training targets given away exactly",
                      f"{v['targets_given_away']:,}{of_n} (each the value of its leaves, "
                      "every leaf's rows and value reproduced)"))
    if v["rows_proven"] is not None:
        pinned = v.get("rows_proven_pinned")
        boxes = ("" if pinned is None or pinned == v["rows_proven"] else
                 f"; {pinned:,} with their values, the rest only as boxes")
        lines.append(("Rows proven to be in the training data", f"{v['rows_proven']:,}"
                      f" (every dataset that reproduces the model's counts holds them{boxes})"))
    return lines + _singled_lines(v, of_n)


def _rebuilt_lines(audit: Audit, of_n: str) -> list[tuple[str, str]]:
    """The rows rebuilt within every count (a partial dataset's kind), and those the file
    pins."""
    v = audit.verdict
    if not v.get("rows_reconstructed"):
        return []
    lines = [("Rows rebuilt from the file", (
        f"at least {v['rows_reconstructed']:,}{of_n} ({_partial_kind(audit)}; see the "
        "rebuilt rows)" if v.get("rows_reconstructed_partial")
        else f"{v['rows_reconstructed']:,}{of_n}")
        + "; rows the model allows, not proven to be training rows")]
    if v.get("rows_pinned") is not None:
        lines.append(("Rebuilt rows the file pins", f"{v['rows_pinned']:,} (every value "
                      "within 5% of its range)"))
    return lines


def _singled_lines(v: dict[str, Any], of_n: str) -> list[tuple[str, str]]:
    """Rows singled out (on the data, or proven by the model alone), and the candidates
    no proof settles."""
    lines = []
    if v["rows_singled_out"] is not None:
        how = ("checked against your data" if v["singled_out_measured_on_data"]
               else "at least; proven from the model alone")
        lines.append(("Rows singled out", f"{v['rows_singled_out']:,}{of_n} ({how})"))
    candidates = singling_candidates(v)
    if candidates and not v["singled_out_measured_on_data"]:
        lines.append(("Singling-out candidates", f"{candidates:,} predicates no proof "
                      "settles; your rows (--data) check them"))
    return lines


def _n_rows_text(value: int | None) -> str:
    """N as an audit without a model description (a rule list, synthetic data) states it."""
    return "not exposed" if value is None else f"{value:,} rows"


def _description(audit: Audit) -> ModelDescription | None:
    """The model file's description as its reader made it (None: an audit of another kind
    of release, which states its own facts)."""
    data = audit.exposed.get("description")
    return None if data is None else ModelDescription.from_dict(data)


def _exposed(audit: Audit) -> str:
    x = audit.exposed
    noise = x["noise"]
    about = _description(audit)
    rows = about.rows() if about is not None else [
        ("Bootstrap", "yes" if x["bootstrap"] else "no: every tree saw every row once"),
        ("Per-tree draws (multiplicities)",
         "exposed" if x["multiplicities_exposed"] else "not exposed")]
    rows.append(("Noise", "none (exact counts)" if noise is None else
                 f"{noise['kind']}, ε = {noise['epsilon']:g}, scale {noise['scale']:g}"))
    body = "".join(f"<tr><td>{_e(a)}</td><td>{_e(b)}</td></tr>" for a, b in rows)
    return f'<h2 id="exposed">What the file exposes</h2><table>{body}</table>'


def _evidence(audit: Audit) -> str:
    out = ['<h2 id="evidence">Evidence, attack by attack</h2>',
           "<table><tr><th>attack</th><th>what happened (time used of its share)</th>"
           "<th>why</th></tr>"]
    for a in audit.attacks:
        css = "status-" + a.status.replace(" ", "-")
        out.append(f"<tr><td>{_e(a.title)}</td><td class=\"{css}\">{_e(a.outcome)}</td>"
                   f"<td>{_e(a.why)}</td></tr>")
    out.append('</table><div class="cards">')
    for a in audit.attacks:
        scalars = {k: v for k, v in a.figures.items()
                   if v is not None and not isinstance(v, dict | list)}
        if not scalars:
            continue
        rows = "".join(f"<tr><td>{_e(FIGURE_NAMES.get(k, k))}</td><td>{_e(_number(v))}</td>"
                       "</tr>" for k, v in scalars.items())
        notes = "".join(f"<li>{_e(n)}</li>" for n in a.figures.get("notes", []))
        label = "" if a.status == COMPLETE else f" ({a.outcome})"
        out.append(f"<section><h3>{_e(a.title)}{_e(label)}</h3><table>{rows}</table>"
                   + (f"<ul>{notes}</ul>" if notes else "") + "</section>")
    out.append("</div>")
    return "\n".join(out)


def _pictures(audit: Audit) -> str:
    data = audit.plots_data
    out = []
    if "row_error" in data:
        out.append(_img(plots.exposure_png(data["row_error"], "reconstruction error of the "
                                           "row (0 = rebuilt exactly)", "Your rows"),
                        "Per-row exposure: how close the reconstruction comes to each of "
                        "your training rows.", "exposure"))
    if "row_ratio" in data:
        out.append(_img(plots.exposure_png(data["row_ratio"], "share of the row's entropy the "
                                           "tree leaves (0 = every value known)",
                                           "Training rows"),
                        "Per-row exposure: how far the tree narrows each training row "
                        "down.", "entropy"))
    if "error_bars" in data:
        out.append(_img(plots.error_png(data["error_bars"]), "Reconstruction error beside "
                        "what guessing achieves.", "error"))
    if audit.estimator is not None and audit.model["n_trees"] == 1 and hasattr(
            audit.estimator, "tree_"):
        png, deeper = plots.tree_png(audit.estimator, audit.vulnerable_nodes,
                                     audit.model["feature_names"],
                                     audit.model["classes"] or None)
        more = (f" {deeper} vulnerable node(s) lie deeper than the levels drawn."
                if deeper else "")
        out.append(_img(png, "The tree, nodes that single out a training row in red."
                        + more, "tree"))
    if not out:
        return ""
    return '<h2 id="pictures">Pictures</h2>' + "\n".join(out)


def _img(png: str, caption: str, name: str) -> str:
    return (f'<figure id="plot-{name}"><img alt="{_e(caption)}" '
            f'src="data:image/png;base64,{png}"><figcaption>{_e(caption)}</figcaption>'
            "</figure>")


def _rows(audit: Audit) -> str:
    if audit.rows is None:
        return ('<h2 id="rows">Your rows</h2><p>Give your training rows (<code>--data train.csv '
                "--label COL</code>) to see which of them are exposed, and how.</p>")
    ranked = sorted(audit.rows, key=_severity)[:ROWS_SHOWN]
    columns = [c for c in ("row", "label", "exposure", "proven", "rebuilt_exactly",
                           "row_error", "singled_out", "entropy_ratio", "predicate")
               if any(r[c] is not None for r in audit.rows)]  # drop what was not measured
    head = "".join(f"<th>{_e(c.replace('_', ' '))}</th>" for c in columns)
    body = []
    for r in ranked:
        cells = "".join(f'<td data-value="{_e(_sort_key(r[c]))}" class="col-{c}">'
                        f"{_e(_number(r[c]))}</td>" for c in columns)
        body.append(f"<tr>{cells}</tr>")
    shown = (f"the {ROWS_SHOWN:,} most exposed of {len(audit.rows):,} (report.json has all)"
             if len(audit.rows) > ROWS_SHOWN else f"all {len(audit.rows):,}")
    return (f'<h2 id="rows">Your rows</h2><p>Rows are numbered from 0 in the order of your '
            f"file; nothing else identifies them. Showing {shown}, most exposed first; click "
            'a column to sort.</p><table class="sortable-table" id="row-table"><thead><tr>'
            f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def _rebuilt(audit: Audit) -> str:
    """The rows the reconstruction rebuilt, each value with its interval."""
    rebuilt = audit.rebuilt
    if rebuilt is None:
        return ""
    head = "".join(f"<th>{_e(c)}</th>" for c in ["row", "proven", *rebuilt["columns"]])
    body = []
    for r in rebuilt["rows"]:
        cells = [_e(r["row"]), _e(_number(r["proven"]))]
        for name in rebuilt["columns"]:
            value = "free" if name in r["free"] else _e(_number(r["values"].get(name)))
            if name in r["intervals"]:
                low, high = r["intervals"][name]
                value += (f'<br><span class="muted">({_e(_bound(low, "-∞"))}, '
                          f"{_e(_bound(high, '∞'))}]</span>")
            cells.append(value)
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    shown = len(rebuilt["rows"])
    more = (f" The first {shown:,} are shown; <code>treeleaks reconstruct --details</code> "
            "writes every row with its intervals." if shown < rebuilt["n_rows"] else "")
    return (f'<h2 id="rebuilt">Rows rebuilt from the model</h2><p>'
            f"{_e(rebuilt_headline(rebuilt))} A value's interval (lower, upper] is where "
            f"the model's leaves put it; free values are not constrained.{more}</p>"
            f'<div class="wide"><table id="rebuilt-table"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _bound(value: float | None, open_end: str) -> str:
    """An interval's end; None is an open end (JSON has no infinity)."""
    return open_end if value is None else f"{value:.4g}"


def _severity(record: dict[str, Any]) -> tuple:
    error = record["row_error"] if record["row_error"] is not None else 1.0
    ratio = record["entropy_ratio"] if record["entropy_ratio"] is not None else 1.0
    return (not record["proven"], not record["singled_out"], not record["rebuilt_exactly"],
            error, ratio, record["row"])


def _sort_key(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _defences(audit: Audit) -> str:
    rows = "".join(f"<tr><td>{_e(d.name)}</td><td>{_e(d.effect)}</td><td>{_e(d.source)}</td>"
                   "</tr>" for d in audit.defences)
    step = ("" if audit.release_command is None else "<p><strong>To find a release that "
            "audits lower:</strong> <code>" + _e(audit.release_command) + "</code> refits the "
            "model's learner on your rows with settings that expose less, strips and audits "
            "each, and writes the most accurate one below this level with its cost; this "
            "report then quotes it.</p>")
    return ('<h2 id="defences">What to do</h2><p>Each defence that applies, with its effect '
            "on this model measured, or cited with its source.</p>" + step + "<table><tr><th>"
            f"defence</th><th>effect</th><th>source</th></tr>{rows}</table>")


def _assumptions(audit: Audit) -> str:
    rows = "".join(f"<tr><td>{_e(k.replace('_', ' '))}</td><td>{_e(_number(v))}</td></tr>"
                   for k, v in audit.assumptions.items())
    note = _shortfalls(audit)
    return (f'<h2 id="assumptions">Assumptions</h2><p>What the adversary was assumed to '
            f"know, and the time the audit had.</p><table>{rows}</table>{_budget(audit)}"
            f"{note}")


def _shortfalls(audit: Audit) -> str:
    """Which attacks used up their time, which stopped short of it without a complete
    answer, and which the budget left no time for: each figure of theirs is a lower
    bound."""
    groups = (("Cut short at their budget", [a.title + f" ({a.outcome})" for a in audit.attacks
                                              if a.status == PARTIAL and a.cut_short]),
              ("Stopped without a complete answer before their budget",
               [f"{a.title} ({a.outcome}: {a.why})" for a in audit.attacks
                if a.status == PARTIAL and not a.cut_short]),
              ("Not run", [f"{a.title} ({a.why})" for a in audit.attacks
                           if a.status == NOT_RUN]))
    said = "".join(f"<p><strong>{_e(head)}:</strong> {_e('; '.join(titles))}. Their figures "
                   "are lower bounds on the risk.</p>" for head, titles in groups if titles)
    return said or "<p>No attack ran out of its budget or stopped short of an answer.</p>"


def _budget(audit: Audit) -> str:
    """The whole audit's budget, the rule that shared it and the wall time used."""
    b = audit.budget
    if not b:
        return ""
    limit = ("no limit for the whole audit" if b["budget_s"] is None
             else f"{b['budget_s']:g} s for the whole audit")
    cap = ("" if b["attack_budget_s"] is None
           else f", at most {b['attack_budget_s']:g} s per attack")
    return (f"<p><strong>Budget:</strong> {_e(limit + cap)}; {b['wall_time_s']:.1f} s of "
            f"wall time used (after the model was read). Rule: {_e(b['rule'])}.</p>")


def _rules(audit: Audit) -> str:
    items = "".join(f"<li>{_e(r)}</li>" for r in audit.risk["rules"])
    return (f'<h2 id="rules">How the risk level is set</h2><p>The first rule that holds sets '
            "the level. A proven rule rests on the model file alone; a measured one on your "
            "rows (--data); a presumed one on evidence in the file that only your rows can "
            "settle, so an audit without them never calls such a model LOW. Your rows "
            "replace each presumption with a measurement and never lower what the file "
            f"proves.</p><ol>{items}</ol>")
