"""The informed adversary of the DP-forest study (SaTML 2026): it knows every training row
but one and reconstructs the last from the model. Its error is set against two constant
guesses read off the training set: the per-column majority (the study's baseline, the
best constant guess for this error, which may break one-hot groups) and the best constant
row the schema allows (each group's most common member)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from treeleaks.attacks.reconstruct import reconstruct
from treeleaks.knowledge import Knowledge
from treeleaks.model import ReleasedModel
from treeleaks.schema import FeatureSchema


def informed_adversary(model: ReleasedModel, schema: FeatureSchema, train: pd.DataFrame,
                       label: str, n_targets: int, time_limit: float) -> dict[str, float]:
    """Mean error on the first ``n_targets`` rows, each reconstructed with all others known,
    beside the two constant guesses, and the share of targets the attack beats the
    majority on."""
    features = [c for c in train.columns if c != label]
    values = train[features].to_numpy(dtype=float)
    majority = (values.mean(axis=0) > 0.5).astype(float)
    allowed = majority.copy()
    for cols, exactly_one in schema.group_indices():
        share = values[:, cols].mean(axis=0)
        pick = np.arange(cols.size) == np.argmax(share)
        allowed[cols] = pick if exactly_one or share.max() >= 1 - share.sum() else 0.0
    errors, baseline, constant = [], [], []
    for target in range(min(n_targets, len(train))):
        known = Knowledge(rows=train.drop(index=target).reset_index(drop=True))
        rec = reconstruct(model, schema, knowledge=known, time_limit=time_limit)
        truth = values[target]
        guess = rec.rows.iloc[0][features].to_numpy(dtype=float)
        errors.append(float(np.abs(guess - truth).mean()))
        baseline.append(float(np.abs(majority - truth).mean()))
        constant.append(float(np.abs(allowed - truth).mean()))
    return {"informed_error": float(np.mean(errors)),
            "informed_majority_error": float(np.mean(baseline)),
            "informed_allowed_constant_error": float(np.mean(constant)),
            "informed_wins": float(np.mean(np.array(errors) < np.array(baseline)))}
