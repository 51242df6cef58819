"""The certificate: do the reconstructed rows reproduce every released leaf count?"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from treeleaks.model import ReleasedModel


@dataclass
class Certificate:
    """``verified`` when the rows, passed through the released trees, reproduce every count."""

    verified: bool
    n_counts_checked: int
    n_counts_wrong: int
    first_mismatch: str = ""


def verify(model: ReleasedModel, rows: pd.DataFrame) -> Certificate:
    """Route ``rows`` (features + label) through every tree and compare all leaf counts."""
    X = rows[list(model.feature_names)].to_numpy(dtype=np.float64)
    produced = model.leaf_counts_of(X, rows[model.label_name].to_numpy())
    wrong, checked, first = 0, 0, ""
    for t, (tree, counts) in enumerate(zip(model.trees, produced)):
        diff = np.argwhere(counts != tree.counts)
        checked += counts.size
        wrong += len(diff)
        if len(diff) and not first:
            leaf, c = diff[0]
            first = (
                f"tree {t} leaf {leaf} class {model.classes[c]!r}: released "
                f"{tree.counts[leaf, c]}, reconstructed rows give {counts[leaf, c]}"
            )
    return Certificate(wrong == 0, checked, wrong, first)
