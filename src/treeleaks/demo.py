"""A self-contained demonstration: reconstruct a random forest's training set from the model.

Uses scikit-learn's breast-cancer data (it ships with scikit-learn, so nothing is
downloaded). Fifteen of its thirty measurements are binarized at their medians: with all
thirty, the cells of a 100-tree full-depth forest number in the millions after a few trees,
far beyond a demo's few seconds.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from scipy.optimize import linear_sum_assignment
from sklearn.ensemble import RandomForestClassifier

from treeleaks.attacks.reconstruct import reconstruct
from treeleaks.demo_data import FEATURES, LABEL, demo_data
from treeleaks.display import certificate_text, live_progress
from treeleaks.evaluation.metrics import evaluate
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.result import Reconstruction
from treeleaks.schema import FeatureSchema

N_TREES = 100
BOOTSTRAP_ROWS = 250  # the first patients: all 569 over 15 binary columns is still too slow
SHOWN_PAIRS = 5


def run_demo(seed: int = 0, console: Console | None = None,
             bootstrap: bool = False) -> dict[str, Any]:
    """Train a forest, attack it with only the model in hand, print and score it.

    Without ``bootstrap`` every tree sees every patient once; with it, the forest is
    scikit-learn's default (rows drawn with replacement) on the first `BOOTSTRAP_ROWS`
    patients. Returns the reconstruction's `summary()` merged with its score against the
    truth.
    """
    console = console or Console()
    start = time.perf_counter()
    X, y = demo_data()
    if bootstrap:
        X, y = X.iloc[:BOOTSTRAP_ROWS], y.iloc[:BOOTSTRAP_ROWS]
    forest = RandomForestClassifier(
        n_estimators=N_TREES, bootstrap=bootstrap, max_depth=None, random_state=seed
    ).fit(X, y)
    model = from_sklearn(forest, label_name=LABEL)
    console.rule("[bold]treeleaks demo[/bold]: what does a random forest reveal about its data?")
    console.print(
        f"Trained RandomForestClassifier(n_estimators={N_TREES}, bootstrap={bootstrap}, "
        f"max_depth=None, random_state={seed}) on {len(X)} patients of scikit-learn's "
        f"breast-cancer data: {len(FEATURES)} measurements, each 1 when above its median, "
        f"and the {LABEL}. The attacker sees only the fitted model.",
        highlight=False,
    )
    with live_progress(console) as progress:
        recon = reconstruct(model, FeatureSchema.infer(model), seed=seed, progress=progress)
    truth = X.assign(**{LABEL: y}).reset_index(drop=True)
    score = evaluate(truth, recon.rows, FeatureSchema.from_frame(X), label=LABEL, seed=seed)
    exact_rows = round(score.exact_share * score.n_true)
    summary = {
        "dataset": "sklearn breast_cancer (binarized at medians)",
        "n_features": len(FEATURES),
        "n_trees": N_TREES,
        "seed": seed,
        **recon.summary(),
        **score.to_dict(),
        "exact_rows": exact_rows,
    }
    if bootstrap and recon.n_rows == len(truth):
        summary["rows_in_place"] = int(sum(
            _same(truth.iloc[i], recon.rows.iloc[i]) for i in range(len(truth))))
    console.print(_results_table(recon, summary))
    pairs = [(i, i) for i in range(len(truth))] if bootstrap else _align(truth, recon.rows)
    console.print(_rows_table(truth, recon, pairs, show_proofs=not bootstrap))
    console.print(
        "With bootstrap, row k of the reconstruction stands for patient k: how often each tree "
        "drew each patient, which the model keeps in its random states, tells them apart."
        if bootstrap else
        "A proven row appears in every dataset that reproduces the released counts: the model "
        "alone proves that this patient, with exactly these values, was in the training set.",
        highlight=False,
    )
    summary["total_time_s"] = round(time.perf_counter() - start, 3)
    console.print(f"Demo finished in {summary['total_time_s']:.1f} s.", highlight=False)
    return summary


def _results_table(recon: Reconstruction, s: dict[str, Any]) -> Table:
    n = s["n_true"]
    table = Table(title="What the model gave away", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Solver status", f"{s['status']} in {s['time_s']:.2f} s ({s['n_cells']} cells)")
    table.add_row("Certificate", certificate_text(s))
    table.add_row("Rows recovered exactly", f"{s['exact_rows']} of {n} ({s['exact_share']:.1%})")
    if "rows_in_place" in s:
        table.add_row("Rows recovered at their training position", f"{s['rows_in_place']} of {n}")
    else:
        table.add_row("Rows proven to be training rows", f"{s['proven_rows']} of {n}")
    table.add_row(
        "Reconstruction error",
        f"{s['error']:.4f} (random guesses consistent with the schema: {s['baseline_error']:.3f})",
    )
    table.add_row("Diagnosis agreement", f"{s['label_agreement']:.1%} of matched rows")
    if s["free_values"]:
        table.add_row("Values the model leaves open", f"{s['free_values']} (filled in)")
    return table


def _rows_table(truth: pd.DataFrame, recon: Reconstruction,
               pairs: list[tuple[int, int]], show_proofs: bool = True) -> Table:
    """A few training rows beside their reconstructions (``pairs``: (true, rebuilt) row
    indices), one column per row, and whether each is proven (``show_proofs``).

    A value the reconstruction got wrong shows as ``true → reconstructed`` in red.
    """
    pairs = sorted(pairs)
    same = [_same(truth.iloc[i], recon.rows.iloc[j]) for i, j in pairs]
    wrong = [p for p, ok in zip(pairs, same) if not ok][: SHOWN_PAIRS // 2 + 1]
    right = [p for p, ok in zip(pairs, same) if ok][: SHOWN_PAIRS - len(wrong)]
    shown = sorted(wrong + right)
    table = Table(
        title="Training rows and their reconstructions (a → b: true a, reconstructed b)",
        title_justify="left",
    )
    table.add_column("")
    for i, _ in shown:
        table.add_column(f"row {i}", justify="center")
    for name in [*FEATURES, LABEL]:
        cells = []
        for i, j in shown:
            true, rebuilt = _plain(truth.at[i, name]), _plain(recon.rows.at[j, name])
            wrong_value = Text(f"{true} → {rebuilt}", "bold red")
            cells.append(Text(str(true)) if true == rebuilt else wrong_value)
        table.add_row(escape(name), *cells, end_section=name == FEATURES[-1])
    if show_proofs:
        proven = [Text("yes", "green") if recon.proven[j] else Text("no", "yellow")
                  for _, j in shown]
        table.add_row("proven", *proven)
    return table


def _align(truth: pd.DataFrame, rows: pd.DataFrame) -> list[tuple[int, int]]:
    """Pair true and reconstructed rows: identical rows first, the rest by fewest differences."""
    columns = list(truth.columns)
    waiting: dict[tuple, list[int]] = defaultdict(list)
    for j, key in enumerate(rows[columns].itertuples(index=False, name=None)):
        waiting[key].append(j)
    pairs, unmatched = [], []
    for i, key in enumerate(truth.itertuples(index=False, name=None)):
        if waiting.get(key):
            pairs.append((i, waiting[key].pop(0)))
        else:
            unmatched.append(i)
    spare = sorted(j for js in waiting.values() for j in js)
    if unmatched and spare:
        a = truth.iloc[unmatched].to_numpy(dtype=object)
        b = rows.iloc[spare][columns].to_numpy(dtype=object)
        cost = (a[:, None, :] != b[None, :, :]).sum(axis=2)
        for r, c in zip(*linear_sum_assignment(cost)):
            pairs.append((unmatched[r], spare[c]))
    return pairs


def _same(a: pd.Series, b: pd.Series) -> bool:
    return bool((a.to_numpy(dtype=object) == b[a.index].to_numpy(dtype=object)).all())


def _plain(value: Any) -> Any:
    """0/1 values print as integers whatever their dtype."""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return int(value)
    return value
