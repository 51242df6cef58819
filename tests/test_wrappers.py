"""Models pickled inside their wrappers: a hyperparameter search, LightGBM's and XGBoost's
scikit-learn faces. Read as the model inside, the wrapper's fields listed; stripped with
the wrapper's fields removed, checked to predict as before."""

from __future__ import annotations

import pickle
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from treeleaks.defences.strip import strip
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.io import load_estimator, load_model
from treeleaks.runtime.errors import TreeleaksError


def _table(n: int = 240, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.integers(18, 80, n).astype(float),
                          "income": rng.normal(30, 8, n).round(1),
                          "visits": rng.integers(0, 6, n).astype(float)})
    label = pd.Series(np.where(frame["age"] + 3 * frame["visits"] > 55, "yes", "no"),
                      name="outcome")
    return frame, label


def _fields(model) -> set[str]:
    return {f.name for f in model.described().fields}


def test_a_search_is_read_as_its_refitted_model(tmp_path: Path) -> None:
    X, y = _table()
    search = GridSearchCV(RandomForestClassifier(n_estimators=5, random_state=0),
                          {"max_depth": [3, None]}, cv=2).fit(X, y)
    path = tmp_path / "search.joblib"
    joblib.dump(search, path)
    model = load_model(path, trust_pickle=True)
    alone = from_sklearn(search.best_estimator_)
    assert model.n_trees == alone.n_trees == 5
    for got, want in zip(model.trees, alone.trees, strict=True):
        assert np.array_equal(got.counts, want.counts)
    assert np.array_equal(model.apply(X.to_numpy()), alone.apply(X.to_numpy()))
    assert {"GridSearchCV.cv_results_", "GridSearchCV.best_score_"} <= _fields(model)
    assert "GridSearchCV" in model.described().estimator


def test_a_search_without_its_model_is_refused_saying_so(tmp_path: Path) -> None:
    X, y = _table()
    search = GridSearchCV(RandomForestClassifier(n_estimators=3, random_state=0),
                          {"max_depth": [2, 3]}, cv=2, refit=False).fit(X, y)
    path = tmp_path / "search.pkl"
    path.write_bytes(pickle.dumps(search))
    with pytest.raises(TreeleaksError, match="holds no fitted model"):
        load_model(path, trust_pickle=True)


def test_a_search_around_a_pipeline_is_stripped_and_still_predicts(tmp_path: Path) -> None:
    X, y = _table()
    X = X.assign(region=np.random.default_rng(1).choice(["north", "south", "east"], len(X)))
    pipeline = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["region"]),
                                remainder="passthrough"),
        RandomForestClassifier(n_estimators=4, random_state=0))
    search = GridSearchCV(pipeline, {"randomforestclassifier__max_depth": [3, None]},
                          cv=2).fit(X, y)
    path = tmp_path / "search.joblib"
    joblib.dump(search, path)
    released = load_model(path, trust_pickle=True)
    result = strip(search, "joblib", X, labels=y, released=released)
    stripped = joblib.load(__import__("io").BytesIO(result.content))
    assert not hasattr(stripped, "cv_results_") and hasattr(search, "cv_results_")
    assert (stripped.predict(X) == search.predict(X)).all()
    assert any("GridSearchCV.cv_results_" in line for line in result.removed)
    leaf = stripped.best_estimator_.steps[-1][1].estimators_[0].tree_
    assert not leaf.n_node_samples.any()  # the model inside was stripped too


def test_a_pickled_lightgbm_wrapper_is_read_with_its_labels(tmp_path: Path) -> None:
    lightgbm = pytest.importorskip("lightgbm")
    X, y = _table()
    wrapper = lightgbm.LGBMClassifier(n_estimators=5, random_state=0, verbose=-1).fit(
        X, y, eval_set=[(X, y)])
    path = tmp_path / "lgbm.joblib"
    joblib.dump(wrapper, path)
    model = load_model(path, trust_pickle=True)
    assert model.classes == ["no", "yes"]
    assert model.n_rows == len(X)
    assert "LGBMClassifier.evals_result_" in _fields(model)
    result = strip(wrapper, "joblib", X, labels=y)
    stripped = joblib.load(__import__("io").BytesIO(result.content))
    assert (stripped.predict_proba(X) == wrapper.predict_proba(X)).all()
    assert not stripped.evals_result_ and wrapper.evals_result_
    counts = [line.split("=", 1)[1].split() for line in
              stripped.booster_.model_to_string().splitlines() if line.startswith("leaf_count=")]
    assert all(c == "0" for line in counts for c in line)  # LightGBM writes them back as 0


def _early_stopped(xgboost) -> tuple[pd.DataFrame, pd.Series, object]:
    """A table, its 0/1 labels, and an XGBoost wrapper fitted on its first 160 rows that
    stopped early on the rest."""
    X, y = _table()
    labels = (y == "yes").astype(int)
    wrapper = xgboost.XGBClassifier(n_estimators=60, early_stopping_rounds=2, random_state=0)
    wrapper.fit(X[:160], labels[:160], eval_set=[(X[160:], labels[160:])], verbose=False)
    return X, labels, wrapper


def test_a_pickled_xgboost_wrapper_with_early_stopping_keeps_its_round(
        tmp_path: Path) -> None:
    xgboost = pytest.importorskip("xgboost")
    X, labels, wrapper = _early_stopped(xgboost)
    assert wrapper.best_iteration < 59  # stopped early: prediction uses fewer trees
    path = tmp_path / "xgb.pkl"
    path.write_bytes(pickle.dumps(wrapper))
    model = load_model(path, trust_pickle=True)
    assert model.n_rows == 160 and "XGBClassifier" in model.described().estimator
    result = strip(wrapper, "pickle", X, labels=labels)  # raises if any prediction moved
    stripped = pickle.loads(result.content)
    assert stripped.best_iteration == wrapper.best_iteration
    assert (stripped.predict_proba(X) == wrapper.predict_proba(X)).all()
    assert any("best_iteration" in line for line in result.kept)
    assert not any(np.asarray(t["sum_hessian"]).any() for t in __import__("json").loads(
        bytes(stripped.get_booster().save_raw("json")))["learner"]["gradient_booster"][
        "model"]["trees"])


def test_a_stripped_xgboost_file_with_early_stopping_predicts_as_before(
        tmp_path: Path) -> None:
    xgboost = pytest.importorskip("xgboost")
    import json

    X, _, wrapper = _early_stopped(xgboost)
    path = tmp_path / "xgb.json"
    wrapper.save_model(path)
    result = strip(json.loads(path.read_text()), "xgboost", X)
    out = tmp_path / "stripped.json"
    out.write_bytes(result.content)
    reloaded = xgboost.XGBClassifier()
    reloaded.load_model(out)
    assert (reloaded.predict_proba(X) == wrapper.predict_proba(X)).all()
    assert "best_score" not in json.loads(result.content)["learner"]["attributes"]


def test_a_search_saved_with_skops_is_read_and_stripped(tmp_path: Path) -> None:
    """skops archives a search with its splitter, scorer and masked cv_results_: trusted,
    read as its model, and stripped back into an archive skops loads."""
    import skops.io

    X, y = _table()
    search = GridSearchCV(RandomForestClassifier(n_estimators=3, random_state=0),
                          {"max_depth": [2, None]}, scoring="balanced_accuracy",
                          cv=3).fit(X, y)
    path = tmp_path / "search.skops"
    skops.io.dump(search, path)
    model = load_model(path)
    assert model.n_trees == 3 and "GridSearchCV.cv_results_" in _fields(model)
    result = strip(load_estimator(path), "skops", X)
    stripped = skops.io.loads(result.content,
                              trusted=skops.io.get_untrusted_types(data=result.content))
    assert not hasattr(stripped, "cv_results_")
    assert (stripped.predict_proba(X) == search.predict_proba(X)).all()


@pytest.mark.parametrize("framework", ["lightgbm", "xgboost"])
def test_a_pipeline_ending_in_a_booster_wrapper_is_read_rebuilt_and_stripped(
        framework: str) -> None:
    """make_pipeline(encoder, LGBMClassifier()) and the same with XGBClassifier: read in the
    custodian's columns, every rebuilt row one the encoder could write and routed by the
    pipeline itself into the leaves its counts say, and stripped predicting as before."""
    module = pytest.importorskip(framework)
    from treeleaks.attacks.reconstruct import reconstruct

    X, y = _table(200, seed=3)
    X = X.assign(region=np.random.default_rng(4).choice(["north", "south", "east"], len(X)))
    booster = (module.LGBMClassifier(n_estimators=8, verbose=-1, random_state=0)
               if framework == "lightgbm" else module.XGBClassifier(n_estimators=8))
    labels = (y == "yes").astype(int)
    pipeline = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["region"]),
                                remainder="passthrough"), booster).fit(X, labels)
    from treeleaks.frontends.sklearn_pipeline import from_pipeline

    model = from_pipeline(pipeline)
    assert model.inputs.names == ["region", "age", "income", "visits"]
    assert model.n_rows == len(X)
    rec = reconstruct(model, time_limit=20)
    assert rec.n_rows and rec.verified, rec.message
    members = [name for name in model.feature_names if name.startswith("region=")]
    assert (rec.rows[members].sum(axis=1) == 1).all()
    assert model.inputs.decode(rec.rows)["region"].isin(["north", "south", "east"]).all()
    result = strip(pipeline, "joblib", X, labels=labels,
                   released=model)  # raises unless it predicts as before
    stripped = joblib.load(__import__("io").BytesIO(result.content))
    assert (stripped.predict_proba(X) == pipeline.predict_proba(X)).all()


def test_from_fitted_reads_any_object_the_files_hold() -> None:
    """The Python entry for an object in hand: a search around a pipeline, read as the
    pipeline it refitted, in the custodian's columns."""
    import treeleaks

    X, y = _table()
    X = X.assign(region=np.random.default_rng(1).choice(["north", "south"], len(X)))
    pipeline = make_pipeline(make_column_transformer((OneHotEncoder(), ["region"]),
                                                     remainder="passthrough"),
                             RandomForestClassifier(n_estimators=3, random_state=0))
    search = GridSearchCV(pipeline, {"randomforestclassifier__max_depth": [2, None]},
                          cv=2).fit(X, y)
    model = treeleaks.from_fitted(search)
    assert model.inputs.names == ["region", "age", "income", "visits"]
    assert model.classes == ["no", "yes"] and model.n_trees == 3
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(TreeleaksError, match="unsupported estimator LogisticRegression"):
        treeleaks.from_fitted(GridSearchCV(LogisticRegression(), {"C": [1.0]}, cv=2).fit(
            X.drop(columns=["region"]), y))
