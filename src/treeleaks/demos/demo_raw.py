"""`treeleaks demo`: the forest most custodians hold, rebuilt row by row.

scikit-learn's `RandomForestClassifier` with every default (100 full-depth trees, rows
drawn with replacement) fitted on its wine data as it ships: 178 wines, 13 raw
measurements and the cultivar (bundled with scikit-learn, nothing is downloaded).
scikit-learn keeps every tree's random state, so whoever holds the model knows how often
each tree drew each wine, which tells the wines apart: the attack rebuilds them, each with
its cultivar and, per measurement, the interval the model confines it to. The demo knows
the truth and scores the rebuilt wines as the multiset they are: rows recovered
(`treeleaks.evaluation.recovered`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from sklearn.datasets import load_wine
from sklearn.ensemble import RandomForestClassifier

from treeleaks.attacks.reconstruct import reconstruct
from treeleaks.evaluation.metrics import evaluate
from treeleaks.evaluation.recovered import References, recovery_matching, rows_recovered
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.ir.schema import FeatureSchema
from treeleaks.runtime.display import certificate_text, live_progress

LABEL = "cultivar"
SHOWN_ROWS = 3
SHOWN_COLUMNS = 6  # the measurements printed per wine; all of them are in the summary


def raw_data() -> tuple[pd.DataFrame, pd.Series]:
    """The 178 wines: 13 raw measurements and the cultivar."""
    data = load_wine(as_frame=True)
    y = pd.Series(np.asarray(data.target_names)[data.target], name=LABEL)
    return data.data, y


def run_raw_demo(seed: int = 0, console: Console | None = None) -> dict[str, Any]:
    """Train the default forest, attack it with only the model in hand, print and score
    it. Returns the reconstruction's `summary()` with its score against the truth: the
    matched error and the wines recovered (``rows_recovered``, ``recovered_share``, and
    the matched errors of that matching, random rows' and the true wines' own boxes')."""
    console = console or Console()
    start = time.perf_counter()
    X, y = raw_data()
    forest = RandomForestClassifier(random_state=seed).fit(X, y)
    model = from_sklearn(forest, label_name=LABEL)
    console.rule("[bold]treeleaks demo[/bold]: what does a default random forest reveal?")
    console.print(
        f"Trained RandomForestClassifier(random_state={seed}), every other setting its "
        f"default (100 full-depth trees, bootstrap), on scikit-learn's wine data as it "
        f"ships: {len(X)} wines, {X.shape[1]} raw measurements and the {LABEL}. The "
        "attacker sees only the fitted model, which keeps each tree's random state.",
        highlight=False,
    )
    with live_progress(console) as progress:
        recon = reconstruct(model, seed=seed, progress=progress)
    truth = X.assign(**{LABEL: y})
    schema = FeatureSchema.from_frame(X)
    score = evaluate(truth, recon.rows, schema, label=LABEL, seed=seed)
    summary: dict[str, Any] = {
        "dataset": "sklearn wine (raw)", "n_features": X.shape[1], "seed": seed,
        **recon.summary(), **score.to_dict(),
    }
    if recon.n_rows:
        recovered = rows_recovered(model, truth, recon.rows, schema,
                                   references=References(seed=seed))
        summary.update({k: v for k, v in recovered.to_dict().items()
                        if k not in ("n_true", "rows_returned", "optimal")})
    console.print(_results_table(summary))
    if recon.n_rows:
        pairs = recovery_matching(model, truth, recon.rows, schema)
        console.print(_rows_table(truth, recon, pairs, _shown_rows(recon)))
        console.print(
            "A reconstruction is a multiset of rows: each rebuilt wine is shown beside the "
            "training wine it is matched with. Each interval is the intersection of the "
            "leaves the rebuilt wine falls in; its width, as a share of the measurement's "
            "range, is what the model gives away.",
            highlight=False,
        )
    summary["total_time_s"] = round(time.perf_counter() - start, 3)
    console.print(f"Demo finished in {summary['total_time_s']:.1f} s.", highlight=False)
    return summary


def _results_table(s: dict[str, Any]) -> Table:
    n = s["n_true"]
    table = Table(title="What the model gave away", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Solver status", f"{s['status']} in {s['time_s']:.2f} s "
                  f"(strategy {s['strategy']})")
    table.add_row("Certificate", certificate_text(s))
    if "rows_recovered" in s:
        table.add_row("Wines recovered", f"{s['rows_recovered']} of {n} "
                      f"({s['recovered_share']:.0%}) from {s['n_rows']} rebuilt: each matched "
                      f"one to one to a rebuilt wine with its {LABEL}, in its leaf in at least "
                      "90% of the trees that drew it")
        table.add_row("Matched error", f"{s['matched_error']:.3f} (random wines "
                      f"{s['random_error']:.3f}; the true wines' own boxes, filled: "
                      f"{s['true_box_error']:.3f})")
    pinned = s.get("numerical_pinned_within")
    if pinned:
        table.add_row("Values pinned within 5% / 10% of their range",
                      f"{pinned['5%']:.1%} / {pinned['10%']:.1%} (mean interval "
                      f"{s['numerical_width_mean']:.1%} of the range)")
    if s["error"] is not None:
        table.add_row("Reconstruction error", f"{s['error']:.3f} (random guesses consistent "
                      f"with the schema: {s['baseline_error']:.3f})")
    if s["message"]:
        table.add_row("Note", escape(s["message"]))
    return table


def _shown_rows(recon: Any) -> list[int]:
    """The rebuilt wines with the narrowest intervals on average, and the widest."""
    width = recon.width.to_numpy(dtype=float).mean(axis=1)
    order = np.argsort(width, kind="stable")
    return sorted({*order[:SHOWN_ROWS - 1].tolist(), int(order[-1])})


def _interval(low: float, high: float) -> str:
    """An interval as the model states it: open sides as one bound."""
    if np.isinf(low) and np.isinf(high):
        return "any value"
    if np.isinf(low):
        return f"<= {high:.3g}"
    if np.isinf(high):
        return f"> {low:.3g}"
    return f"({low:.3g}, {high:.3g}]"


def _rows_table(truth: pd.DataFrame, recon: Any, pairs: pd.DataFrame,
               rows: list[int]) -> Table:
    """A few rebuilt wines: each measurement's interval beside the value of the training
    wine the score matches it with, in red when that value falls outside."""
    table = Table(title=escape("Rebuilt wines, each interval beside the value of the training "
                               "wine it is matched with (red: outside)"),
                  title_justify="left")
    matched = dict(zip(pairs["returned_row"].tolist(), pairs["true_row"].tolist(),
                       strict=True))
    table.add_column("")
    for i in rows:
        k = matched.get(i)
        table.add_column(f"rebuilt {i}" + ("" if k is None else f"\nmatched: wine {k}"),
                         justify="center")
    for name in truth.columns[:SHOWN_COLUMNS]:
        cells = []
        for i in rows:
            low, high = float(recon.lower.at[i, name]), float(recon.upper.at[i, name])
            k = matched.get(i)
            if k is None:
                cells.append(Text(_interval(low, high)))
                continue
            true = float(truth.at[k, name])
            text = f"{true:g}: {_interval(low, high)}"
            cells.append(Text(text) if low <= true <= high else Text(text, "bold red"))
        table.add_row(escape(name), *cells)
    table.add_row(LABEL, *[Text(f"{recon.rows.at[i, LABEL]}" + (
        "" if matched.get(i) is None else f" ({truth.at[matched[i], LABEL]})")) for i in rows],
                  end_section=True)
    return table
