"""Reconstruction with side knowledge: the engine on a model that carries the knowledge.

For a forest whose trees each saw every row once, known rows leave the counts and known
columns become extra trees (`treeleaks.ir.knowledge`); the engine reconstructs the other rows,
the known rows are added back, and the whole is checked against the released model and
the knowledge. A bootstrap forest takes known columns the same way (as multisets) or as
boxes pinning each row's values (linked, in training order).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd

from treeleaks.counts.verify import Certificate, verify
from treeleaks.ir.knowledge import Knowledge
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import Reconstruction
from treeleaks.runtime.vocabulary import Status

Engine = Callable[[ReleasedModel], Reconstruction]
MISMATCH = "reconstruction does not reproduce the model"
RowBoxEngine = Callable[[ReleasedModel, tuple[np.ndarray, np.ndarray, np.ndarray] | None,
                        tuple[np.ndarray, np.ndarray] | None], Reconstruction]


def exact_with_knowledge(model: ReleasedModel, schema: FeatureSchema, knowledge: Knowledge,
                         engine: Engine) -> Reconstruction:
    """Run ``engine`` on ``model`` without the known rows and with the known columns as
    extra trees; add the known rows back and check everything (see the module doc)."""
    inner = knowledge.without_rows(model)
    inner = replace(inner, trees=inner.trees + knowledge.column_trees(model, schema))
    if inner.n_rows == 0:
        rec = Reconstruction.empty(model, status=Status.OPTIMAL, time_s=0.0,
                                   certainty_complete=True)
    else:
        rec = engine(inner)
    return _finish(rec, model, knowledge, ordered=False)


def bootstrap_with_knowledge(model: ReleasedModel, schema: FeatureSchema,
                             knowledge: Knowledge, engine: RowBoxEngine) -> Reconstruction:
    """Run the bootstrap ``engine`` with linked columns as per-row boxes, or multiset
    columns as extra trees that count each distinct row once."""
    known = None
    if knowledge.rows is not None:
        known = (knowledge.rows[list(model.feature_names)].to_numpy(dtype=np.float64),
                 model.class_index(knowledge.rows[model.label_name].to_numpy()))
    if knowledge.columns is None or knowledge.linked:
        boxes = None if knowledge.columns is None else knowledge.row_boxes(model)
        return _finish(engine(model, boxes, known), model, knowledge, ordered=True)
    n_rows = len(model.trees[0].draws)
    extra = [replace(tree, draws=np.ones(n_rows, dtype=np.int64))
             for tree in knowledge.column_trees(model, schema, drop_rows=False)]
    return _finish(engine(replace(model, trees=model.trees + extra), None, known), model,
                   knowledge, ordered=True)


def with_known_rows(frames: dict, model: ReleasedModel, rows: pd.DataFrame) -> dict:
    """The frames of a `Reconstruction` (rows, free, lower, upper, width; None for one not
    kept) with the known ``rows`` after the reconstructed ones: their values given, so
    pinned and bounded by themselves."""
    known = rows[[*model.feature_names, model.label_name]].reset_index(drop=True)
    values = known[list(model.feature_names)].astype(np.float64)
    given = {"rows": known, "free": values.astype(bool) & False, "lower": values,
             "upper": values, "width": values * 0.0}
    out = {name: frame if frame is None or name not in given
           else pd.concat([frame, given[name]], ignore_index=True)
           for name, frame in frames.items()}
    out["rows"][model.label_name] = out["rows"][model.label_name].infer_objects()
    return out


def _finish(rec: Reconstruction, model: ReleasedModel, knowledge: Knowledge,
            ordered: bool) -> Reconstruction:
    """Add the known rows, re-check against the released model and the knowledge."""
    described = knowledge.describe()
    if rec.status == Status.INFEASIBLE:
        return replace(rec, knowledge=described, message=(
            "no dataset reproduces the released counts together with the side knowledge "
            f"({described}): the knowledge or the model is wrong; {rec.message}"))
    if not len(rec.rows) and (knowledge.rows is None or rec.status != Status.OPTIMAL):
        return replace(rec, knowledge=described)
    frames, proven, pattern = _with_known(rec, model, knowledge, ordered)
    certificate = verify(model, frames["rows"])
    # The engine checked its rows against the model with the knowledge's trees; the rows
    # are checked again here, against the released model alone.
    problem = knowledge.violation(frames["rows"], model, ordered)
    message = _message(rec.message, certificate, problem)
    proof = f"{rec.proof}, given the side knowledge" if rec.proof else rec.proof
    return replace(rec, **frames, proven=proven, proven_pattern=pattern,
                   certificate=certificate, message=message, proof=proof, knowledge=described)


def _with_known(rec: Reconstruction, model: ReleasedModel, knowledge: Knowledge,
                ordered: bool) -> tuple[dict, np.ndarray, np.ndarray]:
    """The result's frames, its rows snapped to the knowledge, with the known rows after
    them (proven) unless the rows are in training order; and the proven flags."""
    frames = {name: getattr(rec, name) for name in ("rows", "free", "lower", "upper", "width")}
    frames["rows"] = knowledge.snap(rec.rows, model)
    proven, pattern = rec.proven, rec.proven_pattern
    if knowledge.rows is not None and len(knowledge.rows) and not ordered:
        frames = with_known_rows(frames, model, knowledge.rows)
        proven = np.concatenate([proven, np.ones(len(knowledge.rows), dtype=bool)])
        pattern = np.concatenate([pattern, np.ones(len(knowledge.rows), dtype=bool)])
    return frames, proven, pattern


def _message(message: str, certificate: Certificate, problem: str) -> str:
    """The engine's message, unless the rows miss the released model or break the side
    knowledge (``problem``), which is said instead."""
    message = "" if message.startswith(MISMATCH) else message
    if not certificate.verified:
        message = f"{MISMATCH}: {certificate.first_mismatch}"
    if problem:
        message = f"reconstruction does not respect the side knowledge: {problem}"
    return message
