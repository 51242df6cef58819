"""The rows the reconstruction rebuilt from the model alone, for the report: how many of N,
whether they are a partial dataset, and the first rows with each value's interval. The
interval (the box of the leaves a row falls in) is the leak itself: a partial dataset's
rows are rows the counts allow, but their boxes are what the model says about the data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from treeleaks.report.findings import plain
from treeleaks.runtime.vocabulary import Formulation

if TYPE_CHECKING:
    from treeleaks.result import Reconstruction

REBUILT_SHOWN = 50  # rows in the report; `treeleaks reconstruct --details` writes them all


def rebuilt_rows(recon: Reconstruction | None, n_rows: int | None) -> dict[str, Any] | None:
    """The report's view of ``recon`` (None when it rebuilt no row), in plain JSON types:
    an open end of an interval is None. ``n_rows`` is N."""
    if recon is None or not recon.n_rows:
        return None
    features = list(recon.free.columns)
    finite = (recon.width[features].notna().to_numpy() if recon.width is not None
              else np.zeros((recon.n_rows, len(features)), dtype=bool))
    free = recon.free[features].to_numpy()
    lower = recon.lower[features].to_numpy(dtype=float)
    upper = recon.upper[features].to_numpy(dtype=float)
    position = recon.training_positions()
    shown = []
    for i in range(min(recon.n_rows, REBUILT_SHOWN)):
        shown.append({
            "row": int(position[i]),  # the draws' column the search put it on, if any
            "proven": bool(recon.proven[i]),
            "values": {name: recon.rows[name].iat[i] for name in recon.rows.columns},
            # a numerical value has its interval; a value without one the model leaves open
            "free": [name for j, name in enumerate(features) if free[i, j] and not finite[i, j]],
            "intervals": {name: [lower[i, j], upper[i, j]] for j, name in enumerate(features)
                          if finite[i, j]},
        })
    return plain({
        "n_rows": recon.n_rows,
        "of": n_rows,
        "partial": recon.partial,
        "at_positions": recon.bootstrap is not None and recon.bootstrap.positions is not None,
        "checked": recon.checked,
        "formulation": recon.formulation,
        "proven": recon.proven_rows,
        "columns": list(recon.rows.columns),
        "rows": shown,
    })


def rebuilt_headline(rebuilt: dict[str, Any]) -> str:
    """One sentence: how many rows came back, and what they are."""
    n, of, proven = rebuilt["n_rows"], rebuilt["of"], rebuilt["proven"]
    share = f" of {of:,}" if of else ""
    if rebuilt["partial"] and not rebuilt["checked"]:
        return (f"{n:,}{share} rows rebuilt in part: each lies in the box the model gives it "
                "(the trees' growth limits keep several rows a leaf), but their values, "
                "filled in those boxes, do not fit every count. Their intervals are what the "
                "model reveals about the data.")
    if rebuilt["partial"]:
        return (f"At least {n:,}{share} rows reconstructed: a partial dataset that fits "
                "every count (no leaf holds more of them than it released). "
                f"{proven:,} of them are proven training rows; the others are rows the counts "
                "allow, and their intervals are what the model reveals about the data.")
    if rebuilt["formulation"] == Formulation.DP:
        return (f"{n:,} rows: the most likely dataset given the model's noisy counts; no row "
                "is proven.")
    if rebuilt["checked"] and of is not None and n == of:
        return (f"{n:,}{share} rows reconstructed: together they reproduce every count the "
                f"model releases. {proven:,} of them are proven training rows (in every "
                "dataset that reproduces the counts).")
    return f"{n:,}{share} rows reconstructed, {proven:,} of them proven training rows."
