"""`treeleaks demo`: the forest most custodians hold, rebuilt row by row.

scikit-learn's `RandomForestClassifier` with every default (100 full-depth trees, rows
drawn with replacement) fitted on its wine data as it ships: 178 wines, 13 raw
measurements and the cultivar (bundled with scikit-learn, nothing is downloaded).
scikit-learn keeps every tree's random state, so whoever holds the model knows how often
each tree drew each wine: the attack puts every wine back at its training position, with
its cultivar and, per measurement, the interval the model confines it to.
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
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.ir.schema import FeatureSchema
from treeleaks.report.evidence import rows_in_place
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
    it. Returns the reconstruction's `summary()` with its score against the truth and
    what holds row by row (training order): labels right, true values inside their
    intervals."""
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
    score = evaluate(truth, recon.rows, FeatureSchema.from_frame(X), label=LABEL, seed=seed)
    summary: dict[str, Any] = {
        "dataset": "sklearn wine (raw)", "n_features": X.shape[1], "seed": seed,
        **recon.summary(), **score.to_dict(),
    }
    if recon.n_rows == len(truth):  # training order: row k is wine k
        summary.update(rows_in_place(recon, truth, LABEL))
    console.print(_results_table(summary))
    if recon.n_rows == len(truth):
        console.print(_rows_table(truth, recon, _shown_rows(recon)))
        console.print(
            "Row k of the reconstruction is wine k of the training data: how often each tree "
            "drew each wine, which the model keeps in its random states, tells them apart. "
            "Each interval is the intersection of the leaves the wine fell in; its width, as "
            "a share of the measurement's range, is what the model gives away.",
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
    if "labels_in_place" in s:
        table.add_row("Wines back at their training position", f"{s['n_rows']} of {n}, "
                      f"{s['labels_in_place']} with the right {LABEL}")
        table.add_row("True values inside their intervals",
                      f"{s['values_inside_intervals']:.1%} (where the counts allow several "
                      "leaves, the reconstruction took one of them)")
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
    """The wines with the narrowest intervals on average, and the widest."""
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


def _rows_table(truth: pd.DataFrame, recon: Any, rows: list[int]) -> Table:
    """A few wines: each measurement's true value and the interval the model confines it
    to, in red when the truth falls outside."""
    table = Table(title=escape("Training wines, each value beside the interval of the leaves "
                               "the reconstruction puts it in (red: outside)"),
                  title_justify="left")
    table.add_column("")
    for k in rows:
        table.add_column(f"wine {k}", justify="center")
    for name in truth.columns[:SHOWN_COLUMNS]:
        cells = []
        for k in rows:
            true = float(truth.at[k, name])
            low, high = float(recon.lower.at[k, name]), float(recon.upper.at[k, name])
            text = f"{true:g}: {_interval(low, high)}"
            cells.append(Text(text) if low <= true <= high else Text(text, "bold red"))
        table.add_row(escape(name), *cells)
    table.add_row(LABEL, *[Text(f"{truth.at[k, LABEL]} → {recon.rows.at[k, LABEL]}")
                           for k in rows], end_section=True)
    return table
