"""The informed adversary of the DP-forest study (SaTML 2026).

It knows every training row but one and reconstructs the last from the model. Its error
is set against two constant guesses read off the training set: the per-column majority
(the study's baseline, the best constant guess for this error, which may break one-hot
groups) and the best constant row the schema allows (each group's most common member).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from treeleaks.attacks.reconstruct import reconstruct
from treeleaks.ir.knowledge import Knowledge
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.runtime.vocabulary import Status


@dataclass(frozen=True)
class InformedAdversary:
    """The informed adversary's mean error over its targets, beside two constant guesses.

    Errors are mean absolute differences over the features, 0 perfect.

    Parameters
    ----------
    error : float
        The adversary's mean error over its targets.
    majority_error : float
        The mean error of the per-column majority row (the study's baseline).
    allowed_constant_error : float
        The mean error of the best constant row the schema allows.
    wins : float
        The share of targets on which the adversary beats the majority.
    n_targets : int
        The number of targets reconstructed.
    status : Status, default Status.DONE
        Always ``done``: every target is reconstructed in turn, each in its time.
    """

    error: float
    majority_error: float
    allowed_constant_error: float
    wins: float
    n_targets: int
    status: Status = Status.DONE  # every target is reconstructed in turn, each in its time

    def summary(self) -> dict[str, Any]:
        """Summarize the result as plain JSON.

        Returns
        -------
        dict
            The status and the figures.
        """
        return {"status": self.status, "error": self.error,
                "majority_error": self.majority_error,
                "allowed_constant_error": self.allowed_constant_error, "wins": self.wins,
                "n_targets": self.n_targets}


def informed_adversary(model: ReleasedModel, schema: FeatureSchema, *, train: pd.DataFrame,
                       label: str, n_targets: int, time_limit: float) -> InformedAdversary:
    """Reconstruct each of the first training rows with all the others known.

    See the module doc for the two constant guesses it is set against.

    Parameters
    ----------
    model : ReleasedModel
        The model trained on ``train``.
    schema : FeatureSchema
        The columns' domains; its groups shape the allowed constant row.
    train : pandas.DataFrame
        The training rows, binary features and the label.
    label : str
        The label column of ``train``.
    n_targets : int
        How many of the first rows to reconstruct in turn.
    time_limit : float
        Seconds for each reconstruction.

    Returns
    -------
    InformedAdversary
        The mean errors and the share of wins.
    """
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
    return InformedAdversary(float(np.mean(errors)), float(np.mean(baseline)),
                             float(np.mean(constant)),
                             float(np.mean(np.array(errors) < np.array(baseline))), len(errors))
