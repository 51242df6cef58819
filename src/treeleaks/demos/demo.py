"""`treeleaks demo --binarized`: which rows a forest proves were in its training set.

Uses scikit-learn's breast-cancer data (it ships with scikit-learn, so nothing is
downloaded), fifteen of its measurements binarized at their medians, and a forest whose
trees each see every patient once: the cells of the trees' common refinement are few, and
the attack proves most patients were training rows. The default demo (`treeleaks.demos.demo_raw`)
attacks scikit-learn's default forest on raw measurements instead.
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
from treeleaks.demos.demo_data import FEATURES, LABEL, demo_data
from treeleaks.evaluation.metrics import evaluate
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import Reconstruction
from treeleaks.runtime.display import certificate_text, live_progress

N_TREES = 100
SHOWN_PAIRS = 5


def run_demo(seed: int = 0, console: Console | None = None) -> dict[str, Any]:
    """Train a forest whose trees each see every patient once, attack it with only the
    model in hand, print and score it. Returns the reconstruction's `summary()` merged with
    its score against the truth."""
    console = console or Console()
    start = time.perf_counter()
    X, y = demo_data()
    forest = RandomForestClassifier(
        n_estimators=N_TREES, bootstrap=False, max_depth=None, random_state=seed
    ).fit(X, y)
    model = from_sklearn(forest, label_name=LABEL)
    console.rule("[bold]treeleaks demo[/bold]: what does a random forest reveal about its data?")
    console.print(
        f"Trained RandomForestClassifier(n_estimators={N_TREES}, bootstrap=False, "
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
    console.print(_results_table(recon, summary))
    console.print(_rows_table(truth, recon, _align(truth, recon.rows)))
    console.print(
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
               pairs: list[tuple[int, int]]) -> Table:
    """A few training rows beside their reconstructions (``pairs``: (true, rebuilt) row
    indices), one column per row, and whether each is proven.

    A value the reconstruction got wrong shows as ``true → reconstructed`` in red.
    """
    shown = _shown_pairs(truth, recon, pairs)
    table = Table(
        title="Training rows and their reconstructions (a → b: true a, reconstructed b)",
        title_justify="left",
    )
    table.add_column("")
    for i, _ in shown:
        table.add_column(f"row {i}", justify="center")
    for name in [*FEATURES, LABEL]:
        cells = [_cell(_plain(truth.at[i, name]), _plain(recon.rows.at[j, name]))
                 for i, j in shown]
        table.add_row(escape(name), *cells, end_section=name == FEATURES[-1])
    proven = [Text("yes", "green") if recon.proven[j] else Text("no", "yellow")
              for _, j in shown]
    table.add_row("proven", *proven)
    return table


def _shown_pairs(truth: pd.DataFrame, recon: Reconstruction,
                 pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The pairs shown, in row order: up to half (and one) with a wrong value, the rest
    right, `SHOWN_PAIRS` in all."""
    pairs = sorted(pairs)
    same = [_same(truth.iloc[i], recon.rows.iloc[j]) for i, j in pairs]
    wrong = [p for p, ok in zip(pairs, same) if not ok][: SHOWN_PAIRS // 2 + 1]
    right = [p for p, ok in zip(pairs, same) if ok][: SHOWN_PAIRS - len(wrong)]
    return sorted(wrong + right)


def _cell(true: Any, rebuilt: Any) -> Text:
    """A true value as it is, or ``true → reconstructed`` in red when they differ."""
    return Text(str(true)) if true == rebuilt else Text(f"{true} → {rebuilt}", "bold red")


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
