"""Everything a model file gives away beside its trees is listed, per format, and `strip`
removes what prediction does not need, names what it keeps, and predicts as before."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

from treeleaks.defences.strip import strip
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.io import load_model, save_model


def _table(n_rows: int = 300, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Integer and one-decimal columns (few distinct values) and one continuous column."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.integers(18, 90, n_rows).astype(float),
                          "score": np.round(rng.normal(5, 2, n_rows), 1),
                          "noise": rng.normal(size=n_rows)})
    label = ((frame["age"] > 50) ^ (frame["score"] > 5)).to_numpy().astype(int)
    return frame, label


def _fields(model: Any) -> dict[str, bool]:
    """Each listed field's name, and whether it is listed as removed."""
    return {f.name: f.removed for f in model.described().fields}


def _stripped(tmp_path: Path, estimator: Any, frame: pd.DataFrame) -> tuple[Any, Any]:
    """The strip result and the stripped file read back."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = strip(estimator, "skops", frame, n_random=500)
    path = tmp_path / "stripped.skops"
    path.write_bytes(result.content)
    return result, load_model(path, allow_regression=True, counts_removed_ok=True)


CASES = {
    "forest with oob": (RandomForestClassifier(n_estimators=15, oob_score=True, random_state=0),
                        {"oob_decision_function_", "oob_score_", "_n_samples",
                         "random_state"}),
    "regression forest with oob": (
        RandomForestRegressor(n_estimators=15, oob_score=True, random_state=0),
        {"oob_prediction_", "oob_score_", "_n_samples", "random_state"}),
    "extra trees": (ExtraTreesClassifier(n_estimators=5, random_state=0), {"_n_samples"}),
    "gradient boosting": (GradientBoostingClassifier(n_estimators=5, random_state=0),
                          {"train_score_"}),
    "histogram boosting, early stopping": (
        HistGradientBoostingClassifier(max_iter=8, early_stopping=True, random_state=0),
        {"_bin_mapper.bin_thresholds_", "_bin_mapper.n_bins_non_missing_", "train_score_",
         "validation_score_", "_random_seed"}),
    "histogram boosting regressor": (HistGradientBoostingRegressor(max_iter=5),
                                     {"_bin_mapper.bin_thresholds_",
                                      "_bin_mapper.n_bins_non_missing_"}),
}
KEPT = {"gradient boosting": "init_", "histogram boosting, early stopping":
        "_baseline_prediction", "histogram boosting regressor": "_baseline_prediction"}


@pytest.mark.parametrize("case", list(CASES))
def test_sklearn_fields_listed_then_stripped(case: str, tmp_path: Path) -> None:
    estimator, expected = CASES[case]
    frame, label = _table()
    target = frame["age"] * 2 + frame["score"] if "regress" in case else label
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # out-of-bag warnings of small forests
        estimator.fit(frame, target)
    model = load_model(save_model(estimator, tmp_path / "m.skops"), allow_regression=True)
    listed = _fields(model)
    assert expected <= set(listed) and not any(listed.values())
    if case in KEPT:
        assert "strip keeps it" in dict((f.name, f.exposes) for f in
                                        model.described().fields)[KEPT[case]]
    result, stripped = _stripped(tmp_path, estimator, frame)
    after = _fields(stripped)
    assert all(after.get(name, True) for name in expected)  # gone, or listed as removed
    assert KEPT.get(case, "") in "".join(result.kept)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import skops.io

        reread = skops.io.loads(result.content,
                                trusted=skops.io.get_untrusted_types(data=result.content))
        assert np.array_equal(reread.predict(frame), estimator.predict(frame))
    for name in expected - {"random_state", "_random_seed"}:
        value = getattr(reread, name, None) if "." not in name else getattr(
            reread._bin_mapper, name.split(".")[1])
        assert value is None or not np.any(np.concatenate(
            [np.ravel(v) for v in value]) if isinstance(value, list) else np.ravel(value))


def test_bin_edges_name_the_columns_they_pin() -> None:
    frame, label = _table()
    model = from_sklearn(HistGradientBoostingClassifier(max_iter=5).fit(frame, label))
    words = dict((f.name, f.exposes) for f in model.described().fields)
    assert "every training value of 2 columns (age, score)" in words[
        "_bin_mapper.bin_thresholds_"]
    assert set(model.revealed) == {0, 1}  # noise: 300 distinct values, quantiles
    for column, name in enumerate(("age", "score")):
        assert model.revealed[column].values.tolist() == sorted(frame[name].unique())
        assert model.revealed[column].pinned


def test_lightgbm_and_xgboost_fields_listed_then_stripped(tmp_path: Path) -> None:
    lightgbm = pytest.importorskip("lightgbm")
    xgboost = pytest.importorskip("xgboost")
    frame, label = _table()
    booster = lightgbm.LGBMClassifier(n_estimators=5, verbose=-1).fit(frame, label).booster_
    text = booster.model_to_string()
    (tmp_path / "m.txt").write_text(text)
    listed = _fields(load_model(tmp_path / "m.txt"))
    assert {"feature_infos", "bagging_seed", "leaf_count"} <= set(listed)
    result = strip(text, "lightgbm", frame, n_random=500)
    assert "feature_infos=none none none" in result.content.decode()
    assert "[bagging_seed: 0]" in result.content.decode() and result.kept

    xgb = xgboost.XGBClassifier(n_estimators=4).fit(frame, label)
    xgb.save_model(tmp_path / "m.json")
    data = json.loads((tmp_path / "m.json").read_text())
    words = dict((f.name, f.exposes) for f in load_model(tmp_path / "m.json")
                 .described().fields)
    assert "class balance" in words["base_score"] and "strip keeps it" in words["base_score"]
    result = strip(data, "xgboost", frame, n_random=500)
    assert "base_score" in result.kept[0]


def test_edited_bin_edges_are_said_and_not_used() -> None:
    """Edges a tree does not split at would give wrong values: the column is named and
    left to the box fill."""
    frame, label = _table()
    estimator = HistGradientBoostingClassifier(max_iter=5).fit(frame, label)
    estimator._bin_mapper.bin_thresholds_[0] = estimator._bin_mapper.bin_thresholds_[0] + 0.25
    model = from_sklearn(estimator)
    words = dict((f.name, f.exposes) for f in model.described().fields)
    assert "split 1 column (age) where no edge lies" in words["_bin_mapper.bin_thresholds_"]
    assert set(model.revealed) == {1}


def test_values_follow_their_columns_through_gaps_and_categories() -> None:
    """With gaps and a categorical column (binned first), each column's values land on the
    model feature that holds its values."""
    frame, label = _table()
    frame.loc[::7, "age"] = np.nan
    frame["colour"] = pd.Categorical(np.random.default_rng(1).choice(["red", "blue"], len(frame)))
    frame = frame[["age", "colour", "score", "noise"]]
    model = from_sklearn(HistGradientBoostingClassifier(max_iter=5, categorical_features=
                                                        "from_dtype").fit(frame, label))
    names = list(model.feature_names)
    assert set(model.revealed) == {names.index("age"), names.index("score")}
    for column in ("age", "score"):
        expected = np.unique(frame[column].dropna().to_numpy())
        assert model.revealed[names.index(column)].values.tolist() == expected.tolist()


def test_values_in_a_pipeline_stay_only_where_no_step_moved_them() -> None:
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    from treeleaks.frontends.sklearn_pipeline import from_pipeline

    frame, label = _table()
    steps = ColumnTransformer([("scaled", StandardScaler(), ["age"])], remainder="passthrough",
                              verbose_feature_names_out=False)
    pipeline = Pipeline([("prep", steps), ("hgb", HistGradientBoostingClassifier(max_iter=5))])
    model = from_pipeline(pipeline.fit(frame, label))
    names = list(model.feature_names)
    assert set(model.revealed) == {names.index("score")}
    assert model.revealed[names.index("score")].values.tolist() == sorted(frame["score"].unique())
