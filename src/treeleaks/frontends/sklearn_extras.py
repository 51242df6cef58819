"""What a scikit-learn model file keeps beside its trees that was computed from the training
rows: out-of-bag arrays, training scores, the initial estimate, N, a histogram booster's bin
edges (with the training values they give away, `treeleaks.frontends.bin_values`) and its
seeds. Read off the fitted estimator or the plain records of a skops archive alike; the
trees' own fields are in `treeleaks.frontends.stored`."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from treeleaks.frontends.bin_values import Reading, read_edges
from treeleaks.frontends.hist_routing import hist_routing
from treeleaks.ir.description import StoredField
from treeleaks.ir.inputs import NumberColumn
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.revealed import RevealedValues

BIN_EDGES = "_bin_mapper.bin_thresholds_"
KEPT = "prediction needs it: strip keeps it"
CONTRADICTS = "the file contradicts itself, so no reconstruction of it is certified"
_SHOWN = 4  # column names shown per reading


def with_extras(model: ReleasedModel, estimator: Any, names: list[str]) -> ReleasedModel:
    """``model`` (read from ``estimator``, whose columns are ``names``) with the fields
    beside its trees added to its description and the training values they give away on
    `ReleasedModel.revealed`, under the model's feature each column's values feed."""
    fields, revealed = sklearn_extras(estimator, names)
    about = model.described()
    model.description = dataclasses.replace(about, fields=about.fields + tuple(fields))
    features = {name: _feature_of(model, name) for name in revealed}
    model.revealed = {features[name]: values for name, values in revealed.items()
                      if features[name] is not None}
    edited = _contradicted(estimator) if hasattr(estimator, "_bin_mapper") else set()
    if edited:
        binned = _binned_names(estimator, names)
        model.contradictions += (f"{BIN_EDGES}: the trees split "
                                 f"{_listed([binned[j] for j in sorted(edited)])} where no "
                                 "edge lies (edited edges)",)
    if model.revealed:
        model.validate()
    return model


def _feature_of(model: ReleasedModel, column: str) -> int | None:
    """The model feature holding a numeric column's values (through its input map)."""
    if model.inputs is not None:
        for mapped in model.inputs.columns:
            if mapped.name == column:
                return mapped.feature if isinstance(mapped, NumberColumn) else None
    names = list(model.feature_names)
    return names.index(column) if column in names else None


def sklearn_extras(estimator: Any, names: list[str]
                   ) -> tuple[list[StoredField], dict[str, RevealedValues]]:
    """The fields beside the trees that ``estimator`` (columns ``names``) holds, each only
    when present and not emptied, and the training values its bin edges give away, per
    column name."""
    if hasattr(estimator, "_bin_mapper"):
        return _histogram_fields(estimator, names)
    fields = [StoredField(name, words) for name, words in _ROW_FIELDS.items()
              if _held(getattr(estimator, name, None))]
    if type(estimator).__name__.startswith("GradientBoosting"):
        fields += _gradient_boosting_fields(estimator)
    return fields, {}


# fields a forest or a gradient-boosted model keeps when fitted with out-of-bag scoring or
# subsampling, and what each gives away
_ROW_FIELDS = {
    "oob_decision_function_": "every training row's out-of-bag class fractions, in training "
                              "order",
    "oob_prediction_": "every training row's out-of-bag prediction, in training order",
    "oob_score_": "the out-of-bag score (on the rows each tree did not draw)",
    "oob_improvement_": "the loss improvement on the out-of-bag rows at each iteration",
    "oob_scores_": "the loss on the out-of-bag rows after each iteration",
    "_n_samples": "N, the number of training rows",
    "train_score_": "the training loss after each iteration",
}


def _held(value: Any) -> bool:
    """Whether a field holds something (not missing, None, empty or zeroed)."""
    if value is None:
        return False
    array = np.asarray(value)
    return bool(array.size) and (array.dtype.kind not in "fiu" or bool(np.any(array)))


def _gradient_boosting_fields(estimator: Any) -> list[StoredField]:
    """``init_`` (the start every row shares) and, with subsamples, the random state."""
    init = getattr(estimator, "init_", None)
    fields = []
    if getattr(init, "class_prior_", None) is not None:
        fields.append(StoredField("init_", f"each class's share of the training rows "
                                  f"(class_prior_): the class balance; {KEPT}"))
    elif getattr(init, "constant_", None) is not None:
        fields.append(StoredField("init_", f"the training targets' {init.strategy} "
                                  f"(constant_); {KEPT}"))
    if float(getattr(estimator, "subsample", 1.0)) < 1.0:
        fields.append(StoredField("random_state", "the seed that repeats each tree's "
                                  "subsample of the training rows"))
    return fields


def _binned_names(estimator: Any, names: list[str]) -> list[str]:
    """A histogram booster's binned columns' names, in its bins' order (categorical columns
    come first)."""
    routing = hist_routing(estimator, names)
    column_of = np.arange(len(names)) if routing is None else routing.column_of
    return [names[int(j)] for j in column_of]


def _histogram_fields(estimator: Any, names: list[str]
                      ) -> tuple[list[StoredField], dict[str, RevealedValues]]:
    """A histogram booster's bin edges, distinct counts, scores, start and seed."""
    mapper = estimator._bin_mapper
    names = _binned_names(estimator, names)
    contradicted = _contradicted(estimator)
    revealed = {j: r for j, r in revealed_values(mapper).items() if j not in contradicted}
    classifier = hasattr(estimator, "classes_")
    words = _edges_words(mapper, revealed, names)
    if contradicted:
        words += (f"; the trees split {_listed([names[j] for j in sorted(contradicted)])} "
                  f"where no edge lies, so those edges were edited: {CONTRADICTS}")
    fields = [StoredField(BIN_EDGES, words),
              StoredField("_bin_mapper.n_bins_non_missing_", "each column's number of "
                          f"distinct training values (up to max_bins={_max_bins(mapper)})"),
              StoredField("_baseline_prediction", (
                  "the training rows' class shares, as log-odds: the class balance"
                  if classifier else "the training targets' mean") + f"; {KEPT}")]
    fields += _fit_record(estimator)
    return fields, {names[j]: values for j, values in revealed.items()}


def _fit_record(estimator: Any) -> list[StoredField]:
    """What a histogram booster kept of its fit: its scores after each iteration, and the
    seed of its early-stopping split and feature draws when it used one."""
    fields = [StoredField(name, words) for name, words in (
        ("train_score_", "the training rows' loss (or score) after each iteration"),
        ("validation_score_", "the held-out rows' loss (or score) after each iteration"))
        if _held(getattr(estimator, name, None))]
    if getattr(estimator, "do_early_stopping_", False) or float(
            getattr(estimator, "max_features", 1.0) or 1.0) < 1.0:
        fields.append(StoredField("_random_seed", "the seed that repeats the early-stopping "
                                  "split (with the rows: which were held out) and the "
                                  "feature draws"))
    return fields


def _contradicted(estimator: Any) -> set[int]:
    """The numerical columns some tree splits at a threshold that is not one of their bin
    edges (every split of a fitted booster is at an edge, but for +inf: all values one
    way, the gaps the other)."""
    edges = estimator._bin_mapper.bin_thresholds_
    tables = [p.nodes for per_round in estimator._predictors for p in per_round]
    split = [(t["is_leaf"] == 0) & (t["is_categorical"] == 0) for t in tables]
    features = np.concatenate([t["feature_idx"][s] for t, s in zip(tables, split)])
    thresholds = np.concatenate([t["num_threshold"][s] for t, s in zip(tables, split)])
    at_edge = np.isinf(thresholds)
    for j in map(int, np.unique(features)):
        if j < len(edges):
            at_edge[features == j] |= np.isin(thresholds[features == j], edges[j])
    return {int(j) for j in np.unique(features[~at_edge]) if np.size(edges[j])}


def _max_bins(mapper: Any) -> int:
    return int(getattr(mapper, "n_bins", 256)) - 1


def revealed_values(mapper: Any) -> dict[int, RevealedValues]:
    """Per numerical column, the training values its bin edges give away."""
    flags = getattr(mapper, "is_categorical_", None)
    categorical = (np.zeros(len(mapper.bin_thresholds_), dtype=bool) if flags is None
                   else np.asarray(flags, dtype=bool))
    out = {}
    for column, edges in enumerate(mapper.bin_thresholds_):
        if categorical[column]:
            continue
        read = read_edges(np.asarray(edges, dtype=np.float64))
        if read.values is not None:
            out[column] = RevealedValues(read.values, read.reading == Reading.PINNED,
                                         BIN_EDGES)
    return out


def _edges_words(mapper: Any, revealed: dict[int, RevealedValues], names: list[str]) -> str:
    """What the bin edges give away, column by column, in one line."""
    general = (f"the midpoints of neighbouring training values of every column with at most "
               f"{_max_bins(mapper)} distinct values (the rest: quantiles)")
    if not revealed:
        binned = any(np.size(edges) for edges in mapper.bin_thresholds_)
        return general + (": none here, every column's edges are quantiles" if binned else "")
    pinned = [names[j] for j, r in sorted(revealed.items()) if r.pinned]
    shifted = [names[j] for j, r in sorted(revealed.items()) if not r.pinned]
    parts = [f"every training value of {_listed(pinned)}" if pinned else "",
             f"every value up to one shift of {_listed(shifted)}" if shifted else ""]
    return f"{general}: " + "; ".join(part for part in parts if part)


def _listed(columns: list[str]) -> str:
    shown = ", ".join(columns[:_SHOWN])
    more = len(columns) - _SHOWN
    return f"{len(columns)} column{'s' if len(columns) > 1 else ''} ({shown}" + (
        f" and {more} more)" if more > 0 else ")")
