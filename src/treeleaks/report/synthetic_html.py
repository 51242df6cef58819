"""The audit of a synthetic-data release as one self-contained HTML page: the verdict, the
section "Singling out from the synthetic release" (the attack against its baseline, the
release's utility, anonymeter beside it), the targets, the assumptions and the rules."""

from __future__ import annotations

import base64
import html
from typing import Any

from treeleaks import __version__
from treeleaks.report.findings import Audit
from treeleaks.report.html_report import CSS, _assumptions, _img, _rules
from treeleaks.report.synthetic_audit import NAME, WHICH
from treeleaks.synthetic.plot import tradeoff_png


def _e(value: Any) -> str:
    return html.escape(str(value))


def render_release(audit: Audit) -> str:
    """The whole page of a synthetic-release audit."""
    run = audit.attack(NAME)
    assert run is not None, "a synthetic-release audit holds its attack run"
    f, risk, model = run.figures, audit.risk, audit.model
    also = ("<p><strong>Also:</strong> " + "; ".join(map(_e, risk["also"])) + ".</p>"
            if risk["also"] else "")
    partial = ('<div class="partial" id="partial"><strong>Partial report.</strong> The '
               "budget ran out before every shadow pair or release was made (the section's "
               "notes say where): the attack is weaker and its interval wider than asked "
               "for.</div>" if audit.partial else "")
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>treeleaks audit: synthetic release of {_e(model['path'])}</title>"
        f"<style>{CSS}</style></head><body>",
        f"<h1>Can a synthetic release of <code>{_e(model['path'])}</code> single out its "
        "rows?</h1>",
        f'<p class="muted">treeleaks audit of {_e(model["kind"])} at ε = '
        f"{model['epsilon']:g}, {_e(audit.created[:16].replace('T', ' '))} UTC, treeleaks "
        f"{_e(__version__)}. This file is self-contained: it loads nothing from the "
        "network.</p>", partial,
        f'<h2 id="verdict">Verdict</h2><p><span class="risk {risk["level"]}">{risk["level"]} '
        f"risk</span></p><p><strong>Why:</strong> {_e(risk['why'])}. <span class=\"muted\">"
        f"Rule: {_e(risk['rule'])} (the rules are listed at the end).</span></p>{also}",
        _section(f, risk), _picture(f), _targets(f), _assumptions(audit), _rules(audit),
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p)


def _section(f: dict[str, Any], risk: dict[str, Any]) -> str:
    """The attack's success against its baseline, the utility, and anonymeter."""
    u = f["utility"]
    rows = [*_rate_rows("The study's targets (the population's most isolated records)", f)]
    if f["worst_case"] is not None:
        rows += _rate_rows("Your own rows (the worst case: your most isolated rows)",
                           f["worst_case"])
    rows += [
        ("Baseline |X|/|D|", f"{f['baseline']:.1%} ({f['n_private']:,} private of "
         f"{f['n_population']:,} population rows): a random record's predicate; for your "
         "own rows, the share of them among the records attacked"),
        ("The verdict reads", f"the attack {WHICH[f['risk_from']]}"),
        ("Rule triggered", f"{risk['level']}: {risk['rule']}"),
        ("Utility: mean Jensen-Shannon distance", f"{u['js_distance_mean']:.3f} ± "
         f"{u['js_distance_mean_sd']:.3f} over {u['releases']} releases (0 = the release "
         "keeps every marginal)"),
    ]
    if "auc_synthetic" in u:
        spread = "" if u["auc_synthetic"] is None else f" ± {u['auc_synthetic_sd']:.3f}"
        rows.append(("Utility: AUC trained on the release", f"{_auc(u['auc_synthetic'])}"
                     f"{spread} (trained on your rows: {_auc(u['auc_private'])}; tested on "
                     f"{u['auc_test_rows']:,} population rows outside your table)"))
    rows += _anonymeter_rows(f["anonymeter"])
    body = "".join(f"<tr><td>{_e(a)}</td><td>{_e(b)}</td></tr>" for a, b in rows)
    notes = "".join(f"<li>{_e(n)}</li>" for n in f["notes"])
    return (f'<h2 id="synthetic">Singling out from the synthetic release</h2><p>The study\'s '
            "shadow-model attack (Sedlmeyr 2024): it ranks the population's records by "
            "isolation, learns from shadow releases whether each was in the table, and on a "
            "release names the record it is surest of; it succeeds when that record's "
            "values match exactly one of your rows. Aimed at the population's most isolated "
            "records, it succeeds only when they are your rows; aimed at your own most "
            "isolated rows, among as many decoys outside your table as keep their share at "
            "|X|/|D| (the most isolated records outside it), it measures the worst case for "
            "your table, which the verdict reads.</p>"
            f'<table class="verdict" id="synthetic-figures">{body}</table>'
            + (f"<ul>{notes}</ul>" if notes else ""))


def _rate_rows(what: str, r: dict[str, Any]) -> list[tuple[str, str]]:
    """One figure: its success rate, its interval, and where the interval lies."""
    low, high = r["ci"]
    return [(f"Success rate: {what}", f"{r['success_rate']:.1%} ({r['successes']} of "
             f"{r['attacks']} releases attacked)"),
            ("95% interval (Wilson)", f"{low:.1%} to {high:.1%}, {r['verdict']} "
             f"{r['baseline']:.1%}")]


def _picture(f: dict[str, Any]) -> str:
    """The section's figures drawn: the attack against its baseline (and anonymeter's risk)
    above, the utility below."""
    low, high = f["ci"]
    point = {**f, **f["utility"], "ci_low": low, "ci_high": high,
             "white_box": f["attack"] == "white-box"}
    png = tradeoff_png([point], f"PrivBayes at ε = {f['epsilon']:g}, |X| = {f['n_private']}, "
                       f"|D| = {f['n_population']}")
    return _img(base64.b64encode(png).decode("ascii"), "The attack's success with its 95% "
                "interval beside the baseline, anonymeter's risk where it ran, and the "
                "releases' utility (mean ± sd).", "synthetic")


def _auc(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _anonymeter_rows(a: dict[str, Any]) -> list[tuple[str, str]]:
    """anonymeter's figures, or why it did not run."""
    if "risk" not in a:
        return [("anonymeter", a.get("skipped") or a["failed"])]

    def rate(key: str) -> str:
        return "-" if a[key] is None else f"{a[key]['value']:.1%} ± {a[key]['error']:.1%}"

    low, high = a["ci"]
    rows = [("anonymeter: singling-out risk", f"{a['risk']:.1%} (95% interval {low:.1%} to "
             f"{high:.1%}; {a['n_cols']}-attribute predicates from one release)"),
            ("anonymeter: attack, baseline, control", f"{rate('attack_rate')} "
             f"({a['n_success']} of {a['n_attacks']}), {rate('baseline_rate')} "
             f"({a['n_baseline']}), {rate('control_rate')} ({a['n_control']:g})")]
    rows += [("anonymeter says", w) for w in a["warnings"]]
    return rows


def _targets(f: dict[str, Any]) -> str:
    """The attacked records: which figure attacked them, their values, shadow pairs, picks,
    and whether private."""
    attacked = [("the study's", t) for t in f["targets"]]
    attacked += [("your rows'", t) for t in (f["worst_case"] or {}).get("targets", [])]
    if not attacked:
        return ""
    columns = list(attacked[0][1]["record"])
    head = "".join(f"<th>{_e(c)}</th>" for c in
                   ["targets", *columns, "shadow pairs", "picked", "a private row"])
    body = []
    for which, t in attacked:
        inside = "-" if t["in_private"] is None else "yes" if t["in_private"] else "no"
        cells = [which, *t["record"].values(), t["shadow_pairs"], t["picked"], inside]
        body.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return ('<h2 id="targets">The records attacked</h2><p>The population\'s most isolated '
            "records (the study's targets) and your own most isolated rows (the worst "
            "case), how many shadow pairs trained each one's classifier, how often the "
            "attack named it, and whether it is one of your rows.</p>"
            f'<div class="wide"><table id="targets-table"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")
