"""``strip`` with the options that change predictions: ``--thresholds simplest`` keeps every
training row's prediction with the data and moves no threshold to more digits, nor leaves
one at a midpoint of neighbouring training values; ``--round-values`` rounds a regressor's
leaves within the bound it reports; the boosters' files and classifiers refuse what they
cannot take, in one line."""

from __future__ import annotations

from typing import Any

import lightgbm
import numpy as np
import pytest
import skops.io
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import (
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import DecisionTreeRegressor

from treeleaks.defences.strip import StripOptions, strip
from treeleaks.defences.strip_check import StripCheckError
from treeleaks.defences.strip_thresholds import significant_digits, simplest_between
from treeleaks.runtime.errors import UnsupportedModelError

SIMPLEST = StripOptions(thresholds="simplest")


@pytest.fixture(scope="module")
def cancer() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    return X[:300, :8], y[:300]


@pytest.fixture(scope="module")
def diabetes() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_diabetes(return_X_y=True)
    return X[:300], y[:300] + 0.123  # targets with more digits than the rounding keeps


def loaded(content: bytes) -> Any:
    return skops.io.loads(content, trusted=skops.io.get_untrusted_types(data=content))


def thresholds(estimator: Any) -> tuple[np.ndarray, np.ndarray]:
    """(feature, threshold) of every internal node of every tree, in order."""
    members = np.asarray(getattr(estimator, "estimators_", [estimator])).ravel()
    inner = [m.tree_.children_left >= 0 for m in members]
    return (np.concatenate([m.tree_.feature[i] for m, i in zip(members, inner)]),
            np.concatenate([m.tree_.threshold[i] for m, i in zip(members, inner)]))


def midpoint_share(X: np.ndarray, features: np.ndarray, cuts: np.ndarray) -> float:
    """The share of thresholds at the midpoint of the two training values around them (read
    as float32, as a tree reads them); every threshold strictly between two values."""
    at_midpoint = []
    for j, t in zip(features, cuts):
        values = np.unique(X[:, j].astype(np.float32).astype(np.float64))
        above = np.searchsorted(values, t, side="right")
        assert values[above - 1] <= t < values[above]
        midpoint = (values[above - 1] + values[above]) / 2
        at_midpoint.append(abs(t - midpoint) <= 1e-9 * max(1.0, abs(t)))
    return float(np.mean(at_midpoint))


def test_simplest_between_takes_the_fewest_digits_strictly_inside() -> None:
    assert simplest_between(0.0973, 0.09769, 0.097495) == 0.0975
    assert simplest_between(9.4, 10.3, 9.85) == 10.0
    assert simplest_between(-0.5, 0.25, -0.1) == 0.0
    assert simplest_between(1.0, 2.0, 1.5) == 1.5  # no single digit strictly inside
    assert significant_digits(0.097495) == 5 and significant_digits(10.0) == 1


@pytest.mark.filterwarnings("ignore")
def test_simplest_thresholds_keep_training_predictions_and_hide_the_midpoints(
        cancer: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = cancer
    forest = RandomForestClassifier(10, random_state=0).fit(X, y)
    result = strip(forest, "skops", X, labels=y, options=SIMPLEST)
    back = loaded(result.content)
    np.testing.assert_array_equal(back.predict_proba(X), forest.predict_proba(X))
    assert result.score is not None and result.score.before == result.score.after
    features, old = thresholds(forest)
    _, new = thresholds(back)
    assert (new != old).mean() > 0.9
    assert all(significant_digits(n) <= significant_digits(o) for o, n in zip(old, new))
    assert np.mean([significant_digits(n) for n in new]) < np.mean(
        [significant_digits(o) for o in old])
    assert midpoint_share(X, features, old) > 0.2  # bootstrap trees: their own neighbours
    # left only where the midpoint is itself the shortest decimal in the gap (12.5 in 12.4-12.6)
    assert midpoint_share(X, features, new) < 0.1
    assert "every training row stays on its side" in result.changes[0]
    assert "set to the lower of the two" in result.compared[-1]


@pytest.mark.filterwarnings("ignore")
def test_simplest_thresholds_without_data_say_they_are_weaker(
        cancer: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = cancer
    booster = HistGradientBoostingClassifier(max_iter=5, random_state=0).fit(X, y)
    result = strip(booster, "skops", options=SIMPLEST)
    assert "weaker" in result.changes[0] and "--data" in result.changes[0]
    assert result.n_rows == 0 and len(result.compared) == 1


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("make", [
    lambda: DecisionTreeRegressor(max_depth=8, random_state=0),
    lambda: RandomForestRegressor(5, random_state=0),
    lambda: GradientBoostingRegressor(n_estimators=10, random_state=0)])
def test_round_values_rounds_leaves_within_the_bound_it_reports(
        make: Any, diabetes: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = diabetes
    model = make().fit(X, y)
    result = strip(model, "skops", X, labels=y, options=StripOptions(round_values=2))
    back = loaded(result.content)
    members = np.asarray(getattr(back, "estimators_", [back])).ravel()
    for member in members:
        leaves = member.tree_.value[member.tree_.children_left < 0].ravel()
        assert all(significant_digits(v) <= 2 for v in leaves)
    bound = float(result.changes[0].rsplit(" ", 1)[1])
    moved = np.abs(back.predict(X) - model.predict(X)).max()
    assert 0 < moved <= bound * 1.001 + 1e-9
    assert result.compared[0].startswith("within ")
    assert result.score is not None and result.score.metric == "R²"
    assert abs(result.score.before - result.score.after) < 0.05


def test_round_values_refuses_a_classifier(cancer: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = cancer
    forest = RandomForestClassifier(3, random_state=0).fit(X, y)
    with pytest.raises(UnsupportedModelError, match="rounds a regressor's leaf values"):
        strip(forest, "skops", options=StripOptions(round_values=3))


def test_a_booster_file_refuses_the_options(cancer: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = cancer
    booster = lightgbm.train({"objective": "binary", "verbose": -1}, lightgbm.Dataset(X, y), 3)
    with pytest.raises(UnsupportedModelError, match="a LightGBM file is stripped with its "
                       "thresholds and leaf values as they are: drop --thresholds"):
        strip(booster.model_to_string(), "lightgbm", options=SIMPLEST)


@pytest.mark.filterwarnings("ignore")
def test_a_threshold_moved_past_a_training_value_is_caught(
        cancer: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch) -> None:
    from treeleaks.defences import strip_thresholds

    X, y = cancer
    forest = RandomForestClassifier(5, random_state=0).fit(X, y)
    monkeypatch.setattr(strip_thresholds, "_gap", lambda values, t: (t - 50.0, t + 50.0))
    with pytest.raises(StripCheckError, match="rows of --data; nothing was written"):
        strip(forest, "skops", X, options=SIMPLEST)
