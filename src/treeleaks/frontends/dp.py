"""DP forest frontend: a fitted `DPRandomForestClassifier` as the model IR, noise included.

The released file carries what the attack is assumed to know: the trees with their noisy
counts, the Laplace mechanism (ε and scale), N, and the schema the splits were drawn from.
"""

from __future__ import annotations

import copy
import json

import numpy as np

from treeleaks.defences.dp_forest import DPRandomForestClassifier
from treeleaks.frontends.stored import dp_fields
from treeleaks.ir.description import ModelKind, describe
from treeleaks.ir.model import NoiseMechanism, ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.runtime.errors import UnsupportedModelError


def from_dp_forest(
    forest: DPRandomForestClassifier,
    feature_names: list[str] | None = None,
    label_name: str = "label",
) -> ReleasedModel:
    """Translate a fitted `DPRandomForestClassifier` into a `ReleasedModel`.

    The model's ``noise`` is the Laplace mechanism the counts were drawn with (None for
    ``epsilon=inf``: the counts are exact). Its ``facts`` hold ``n_rows``, ``max_depth``,
    ``n_estimators`` and ``schema`` (over ``feature_names``), the latter as the JSON text of
    the ``--schema`` form, since a model file's facts are scalars
    (`FeatureSchema.from_dict(json.loads(...))` reads it back).

    Parameters
    ----------
    forest : DPRandomForestClassifier
        The fitted forest.
    feature_names : list of str or None, default None
        The columns' names; None: the forest's ``feature_names_in_``, else ``x0``, ``x1``,
        ...
    label_name : str, default "label"
        The name of the label column of reconstructed rows.

    Returns
    -------
    ReleasedModel
        The model, validated, noise included.

    Raises
    ------
    UnsupportedModelError
        The forest is not fitted, or ``feature_names`` has another length than its
        features.
    """
    if not hasattr(forest, "trees_"):
        raise UnsupportedModelError(
            "the DPRandomForestClassifier is not fitted: call fit(X, y) before auditing it"
        )
    feature_names = _names(forest, feature_names)
    schema = _renamed(forest.schema_, feature_names)
    n_trees, epsilon = len(forest.trees_), forest.epsilon_
    noise = None if np.isinf(epsilon) else NoiseMechanism("laplace", epsilon, n_trees / epsilon)
    model = ReleasedModel(
        trees=copy.deepcopy(forest.trees_),
        classes=[c.item() if isinstance(c, np.generic) else c for c in forest.classes_],
        feature_names=list(feature_names),
        label_name=label_name,
        bootstrap=False,
        noise=noise,
        source="treeleaks.DPRandomForestClassifier",
        facts={
            "n_rows": int(forest.n_rows_),
            "max_depth": forest.trees_[0].depth,
            "n_estimators": n_trees,
            "schema": json.dumps(schema.to_dict()),
        },
    )
    model.validate()
    model.description = describe(model, "treeleaks DP", "DPRandomForestClassifier",
                                 dp_fields(), kind=ModelKind.DP_FOREST)
    return model


def _names(forest: DPRandomForestClassifier, given: list[str] | None) -> list[str]:
    """The columns' names: those given (one per feature), else the forest's, else ``x<j>``."""
    n_features = int(forest.n_features_in_)
    if given is None:
        return [str(c) for c in getattr(forest, "feature_names_in_", ())] or [
            f"x{j}" for j in range(n_features)
        ]
    if len(given) != n_features:
        raise UnsupportedModelError(
            f"{len(given)} feature names given but the forest was fitted on "
            f"{n_features} features"
        )
    return given


def _renamed(schema: FeatureSchema, names: list[str]) -> FeatureSchema:
    """The forest's schema over ``names`` (in its column order)."""
    rename = dict(zip(schema.names, names))
    return FeatureSchema(
        {rename[name]: spec for name, spec in schema.features.items()},
        [[rename[name] for name in group] for group in schema.one_hot_groups],
        [[rename[name] for name in group] for group in schema.at_most_one_groups],
    )
