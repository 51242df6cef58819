"""The custodian's view: which of their training rows the attacks expose, and how.

One record per row of their data (in file order, 0-based, identifiers left out): rebuilt
exactly by the reconstruction, proven to be a training row, its reconstruction error,
singled out (and by which predicate), and for a single tree how much of the row's entropy
the tree leaves (0: every value known).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from treeleaks.report.evidence import AuditInput, Evidence


def row_table(inp: AuditInput, ev: Evidence) -> list[dict[str, Any]]:
    """The per-row records for the data given to the audit."""
    truth = inp.truth
    n = len(truth)
    error = ev.row_error if ev.row_error is not None else np.full(n, np.nan)
    ratio = _entropy_ratios(inp, ev)
    if ev.recon is not None:
        proven = _proven_rows(inp, ev)
    elif ratio is not None and inp.model.n_rows is not None:  # one tree counting every row
        proven = ratio == 0  # its leaf pins every value
    else:
        proven = np.zeros(n, dtype=bool)
    singled = _singling_predicates(inp, ev)
    labels = truth[inp.model.label_name].tolist()
    rows = []
    for i in range(n):
        exact = bool(error[i] == 0) if ev.row_error is not None else (
            bool(ratio[i] == 0) if ratio is not None else None)
        record = {
            "row": i,
            "label": labels[i],
            "rebuilt_exactly": exact,
            "proven": bool(proven[i]),
            "row_error": None if np.isnan(error[i]) else float(error[i]),
            "singled_out": i in singled,
            "predicate": singled.get(i),
            "entropy_ratio": None if ratio is None else float(ratio[i]),
        }
        record["exposure"] = how_exposed(record)
        rows.append(record)
    return rows


def how_exposed(record: dict[str, Any]) -> str:
    """A row's exposure in plain words, most severe first."""
    parts = []
    if record["proven"]:
        parts.append("proven training row")
    if record["rebuilt_exactly"]:
        parts.append("rebuilt exactly")
    elif record["row_error"] is not None:
        parts.append(f"rebuilt with {record['row_error']:.0%} of values wrong")
    if record["singled_out"]:
        parts.append("singled out")
    if record["entropy_ratio"] is not None and not record["rebuilt_exactly"]:
        parts.append(f"{record['entropy_ratio']:.0%} of its entropy left")
    return "; ".join(parts) if parts else "not exposed by these attacks"


def _proven_rows(inp: AuditInput, ev: Evidence) -> np.ndarray:
    """Data rows equal to a proven reconstructed row, one data row per proven copy."""
    names = [*inp.model.feature_names, inp.model.label_name]
    recon = ev.recon
    available = Counter(
        tuple(r) for r in recon.rows.loc[recon.proven, names].itertuples(index=False))
    out = np.zeros(len(inp.truth), dtype=bool)
    for i, key in enumerate(inp.truth[names].itertuples(index=False)):
        key = tuple(key)
        if available[key] > 0:
            available[key] -= 1
            out[i] = True
    return out


def _entropy_ratios(inp: AuditInput, ev: Evidence) -> np.ndarray | None:
    """A single tree's remaining-entropy ratio of each data row (its leaf's)."""
    if inp.model.n_trees != 1 or not ev.leaks:
        return None
    X = inp.truth[inp.model.feature_names].to_numpy(dtype=np.float64)
    leaves = inp.model.trees[0].apply(X)
    return np.asarray(ev.leaks[0].path_ratio, dtype=np.float64)[leaves]


def _singling_predicates(inp: AuditInput, ev: Evidence) -> dict[int, str]:
    """Row → the shortest predicate that selects it alone."""
    from treeleaks.ir.schema import FeatureSchema

    if ev.singling is None or ev.exposure is None:
        return {}
    features = FeatureSchema.infer(inp.model).features
    binary = {name for name, spec in features.items() if spec.kind == "binary"}
    out: dict[int, str] = {}
    guesses = ev.guesses.predicates if ev.guesses is not None else []
    for p in [*ev.singling.predicates, *guesses]:  # the model's predicates first
        if p.matches is not None and len(p.matches) == 1 and p.matches[0] not in out:
            out[p.matches[0]] = p.text(inp.model.label_name, binary, inp.model.inputs)
    return out
