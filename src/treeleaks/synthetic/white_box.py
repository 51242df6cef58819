"""The white-box attack's view of a release: the fitted PrivBayes model itself. As in the
study, its network (the adjacency matrix) and its conditional probability tables, read at
one target record: P(target's value | target's parent values) for every attribute, and
their product's logarithm (the target's log-likelihood under the model)."""

from __future__ import annotations

import numpy as np

from treeleaks.synthetic.privbayes import PrivBayes

FLOOR = 1e-12  # a zero probability's stand-in inside the logarithm


def model_features(model: PrivBayes, target: np.ndarray) -> np.ndarray:
    """The adjacency matrix (flattened), the target's conditional probabilities in
    attribute order, and its log-likelihood."""
    d = len(model.sizes)
    adjacency = np.zeros((d, d))
    probabilities = np.empty(d)
    for cond in model.conditionals:
        adjacency[list(cond.parents), cond.attribute] = 1.0
        parent = (np.ravel_multi_index(tuple(target[list(cond.parents)]),
                                       tuple(model.sizes[p] for p in cond.parents))
                  if cond.parents else 0)
        probabilities[cond.attribute] = cond.table[parent, target[cond.attribute]]
    likelihood = np.log(np.maximum(probabilities, FLOOR)).sum()
    return np.concatenate([adjacency.ravel(), probabilities, [likelihood]])
