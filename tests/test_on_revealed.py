"""Reconstructed values put on the training values a file gives away (counts/on_revealed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import HistGradientBoostingClassifier

from treeleaks import FeatureSchema, reconstruct
from treeleaks.counts.materialize import rows_in_boxes
from treeleaks.counts.on_revealed import inside, nearest
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.ir.model import ModelFormatError
from treeleaks.ir.revealed import RevealedValues


def _table(n_rows: int = 120, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.integers(18, 60, n_rows).astype(float),
                          "score": np.round(rng.uniform(0, 5, n_rows), 1)})
    return frame, rng.integers(0, 2, n_rows)  # noise: the trees split everywhere


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=30, unique=True),
       st.lists(st.tuples(st.integers(-60, 60), st.integers(0, 40)), min_size=1,
                max_size=20))
def test_a_fill_moves_to_the_nearest_revealed_value_in_its_box(
        ints: list[int], boxes: list[tuple[int, int]]) -> None:
    values = np.sort(np.array(ints, dtype=np.float64)) / 4
    known = RevealedValues(values, True, "test")
    lower = np.array([b[0] / 2 for b in boxes])
    upper = lower + np.array([b[1] / 2 for b in boxes])
    fill = (lower + upper) / 2
    value, determined, width = fill.copy(), np.zeros(len(boxes), bool), np.ones(len(boxes))
    first, end = inside(values, lower, upper, -np.inf, np.inf)
    nearest(known, first, end, value, determined, width)
    for i in range(len(boxes)):
        held = values[(values > lower[i]) & (values <= upper[i])]
        if held.size:
            assert value[i] in held
            assert abs(value[i] - fill[i]) == np.abs(held - fill[i]).min()
            assert determined[i] == (held.size == 1) and (width[i] == 0) == (held.size == 1)
        else:
            assert value[i] == fill[i] and not determined[i]


def test_true_boxes_of_a_histogram_booster_give_their_values_back() -> None:
    """Each training row's own box (its leaves' intersection): where it holds a single
    revealed value, that value is the row's, exactly."""
    frame, label = _table()
    model = from_sklearn(HistGradientBoostingClassifier(max_iter=60, min_samples_leaf=1)
                         .fit(frame, label))
    X = frame.to_numpy()
    lower, upper = np.full(X.shape, -np.inf), np.full(X.shape, np.inf)
    leaves = model.apply(X)
    for t, tree in enumerate(model.trees):
        low, high = tree.leaf_boxes(model.n_features)
        lower, upper = np.maximum(lower, low[leaves[:, t]]), np.minimum(upper, high[leaves[:, t]])
    schema = FeatureSchema.from_frame(frame)
    frames = rows_in_boxes(model, schema, lower, upper, model.class_index(label),
                           np.zeros(len(X), bool))
    rows = frames["rows"][["age", "score"]].to_numpy()
    single = np.zeros(X.shape, dtype=bool)
    for j, known in model.revealed.items():
        held = ((known.values[None, :] > lower[:, j, None])
                & (known.values[None, :] <= upper[:, j, None])).sum(axis=1)
        single[:, j] = held == 1
        assert np.isin(rows[:, j], known.values).all()
    assert single.sum() > 20 and (rows[single] == X[single]).all()
    assert not frames["free"].to_numpy()[single].any()  # settled by the file


def test_a_reconstruction_puts_its_values_on_training_values() -> None:
    frame, label = _table(80)
    model = from_sklearn(HistGradientBoostingClassifier(max_iter=10).fit(frame, label))
    result = reconstruct(model, FeatureSchema.from_frame(frame), time_limit=30)
    assert result.summary()["verified"] and len(result.rows)
    for j, name in enumerate(model.feature_names):
        assert np.isin(result.rows[name].to_numpy(), model.revealed[j].values).all()


def test_revealed_values_that_are_not_a_sorted_set_are_refused() -> None:
    frame, label = _table()
    model = from_sklearn(HistGradientBoostingClassifier(max_iter=3).fit(frame, label))
    model.revealed[0] = RevealedValues(np.array([3.0, 1.0]), True, "_bin_mapper.bin_thresholds_")
    with pytest.raises(ModelFormatError, match=r"bin_thresholds_.*sorted set"):
        model.validate()
