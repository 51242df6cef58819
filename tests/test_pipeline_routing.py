"""Pipelines whose tree model routes gaps or categories of its own (issue 49, item 2): an
OrdinalEncoder (gaps, ``encoded_missing_value``, ``handle_unknown``) and passed-through
numbers with gaps before a HistGradientBoosting model (numeric or native categories) or a
tree fitted on gaps. The steps' map and the model's own are composed, so rows come back in
the custodian's columns; transformed by the fitted pipeline, they fit every count of the
file, leaf by leaf, as scikit-learn itself routes them."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sklearn.compose import make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, OrdinalEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier
from typer.testing import CliRunner

from treeleaks.attacks.reconstruct import reconstruct
from treeleaks.cli import app
from treeleaks.defences.strip import strip
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.frontends.sklearn_pipeline import from_pipeline
from treeleaks.ir.inputs import CodedColumn, OneHotColumn
from treeleaks.runtime.errors import UnsupportedModelError

runner = CliRunner(env={"COLUMNS": "400"})
COLOURS = {"red", "green", "blue"}


def table(seed: int, n: int = 60) -> tuple[pd.DataFrame, pd.Series]:
    """A text column with gaps (c), a number with gaps (a) and a whole number with gaps (b);
    the label reads a's gaps, so a booster routes them."""
    rng = np.random.default_rng(seed)
    c = rng.choice(np.array(["red", "green", "blue", None], dtype=object), n)
    a = rng.normal(50, 10, n).round()
    a[rng.random(n) < 0.2] = np.nan
    b = rng.integers(0, 4, n).astype(float)
    b[rng.random(n) < 0.15] = np.nan
    label = (np.isnan(a) | (c == "red")) ^ (np.nan_to_num(b) > 2)
    return pd.DataFrame({"c": c, "a": a, "b": b}), pd.Series(label.astype(int), name="y")


def coded(**options: Any) -> Any:
    """scikit-learn's documented pattern: the text column coded, the rest passed through."""
    return make_column_transformer((OrdinalEncoder(**options), ["c"]), remainder="passthrough")


def booster(**options: Any) -> HistGradientBoostingClassifier:
    return HistGradientBoostingClassifier(max_iter=4, random_state=0, **options)


def leaves(final: Any, transformed: Any) -> list[np.ndarray]:
    """Each row's leaf per tree as scikit-learn routes it, leaves in node order (a
    histogram booster's found by its own predictor, every leaf's value its leaf number)."""
    if hasattr(final, "_predictors"):
        data = final._preprocess_X(transformed, reset=False)
        bitsets, index_map = final._bin_mapper.make_known_categories_bitsets()
        out = []
        for (predictor,) in final._predictors:
            saved, nodes = predictor.nodes, predictor.nodes.copy()
            is_leaf = nodes["is_leaf"].astype(bool)
            nodes["value"][is_leaf] = np.arange(int(is_leaf.sum()))
            predictor.nodes = nodes
            try:
                out.append(predictor.predict(data, bitsets, index_map, 1).astype(np.int64))
            finally:
                predictor.nodes = saved
        return out
    members = getattr(final, "estimators_", [final])
    return [(np.cumsum(m.tree_.children_left < 0) - 1)[m.apply(transformed)] for m in members]


def file_counts(final: Any) -> list[np.ndarray]:
    """Each tree's rows per leaf, as the file stores them."""
    if hasattr(final, "_predictors"):
        return [np.asarray(p.nodes["count"])[p.nodes["is_leaf"].astype(bool)]
                for (p,) in final._predictors]
    return [m.tree_.n_node_samples[m.tree_.children_left < 0]
            for m in getattr(final, "estimators_", [final])]


def assert_fits_every_count(pipeline: Pipeline, rows: pd.DataFrame, model: Any) -> None:
    """``rows`` (the custodian's columns and the label), transformed by the fitted pipeline,
    put in every leaf of every tree the rows the file counts there, and in the model's
    first tree each class's rows."""
    routed = leaves(pipeline[-1], pipeline[:-1].transform(rows[model.inputs.names]))
    for t, (leaf, count) in enumerate(zip(routed, file_counts(pipeline[-1]), strict=True)):
        np.testing.assert_array_equal(np.bincount(leaf, minlength=count.size), count)
        if t == 0:  # every leaf holds rows, so the IR keeps every leaf, in order
            labels = model.class_index(rows[model.label_name])
            by_class = np.zeros_like(model.trees[0].counts)
            np.add.at(by_class, (leaf, labels), 1)
            np.testing.assert_array_equal(by_class, model.trees[0].counts)


def rebuilt(pipeline: Pipeline, frame: pd.DataFrame, label: pd.Series) -> pd.DataFrame:
    """The reconstruction of the fitted pipeline's file, in the custodian's columns,
    checked verified and fitting every count."""
    model = from_pipeline(pipeline.fit(frame, label), label_name="y")
    assert model.inputs.names == ["c", "a", "b"]
    result = reconstruct(model, time_limit=30)
    assert result.summary()["verified"] and result.n_rows == len(frame)
    rows = model.inputs.decode(result.rows)
    assert set(rows["c"].dropna()) <= COLOURS
    assert_fits_every_count(pipeline, rows, model)
    return rows


CASES = {
    "sklearn's pattern": lambda: make_pipeline(coded(), booster()),
    "codes as categories (mask)": lambda: make_pipeline(
        coded(), booster(categorical_features=[True, False, False])),
    "codes and a number as categories": lambda: make_pipeline(
        coded(), booster(categorical_features=[0, 2])),
    "a gap coded -1, as a category": lambda: make_pipeline(
        coded(encoded_missing_value=-1), booster(categorical_features=[0])),
    "unseen coded -1": lambda: make_pipeline(
        coded(handle_unknown="use_encoded_value", unknown_value=-1), booster()),
    "unseen coded NaN": lambda: make_pipeline(
        coded(handle_unknown="use_encoded_value", unknown_value=np.nan), booster()),
    "numbers scaled": lambda: make_pipeline(make_column_transformer(
        (OrdinalEncoder(), ["c"]), (StandardScaler(), ["a", "b"])), booster()),
    "pandas output, categories by name": lambda: make_pipeline(
        coded().set_output(transform="pandas"),
        booster(categorical_features=["ordinalencoder__c"])),
    "a forest fitted on gaps": lambda: make_pipeline(coded(), RandomForestClassifier(
        n_estimators=3, max_depth=5, bootstrap=False, random_state=0)),
    "a tree, a gap coded -1": lambda: make_pipeline(
        coded(encoded_missing_value=-1), DecisionTreeClassifier(max_depth=6, random_state=0)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_rows_rebuilt_in_the_custodians_columns_fit_every_count(case: str) -> None:
    frame, label = table(0)
    rebuilt(CASES[case](), frame, label)


def test_a_booster_routing_gaps_after_an_encoder_reads_them_as_gaps() -> None:
    frame, _ = table(1, n=150)
    label = pd.Series((frame["a"].isna() | (frame["c"] == "red")).astype(int), name="y")
    pipeline = make_pipeline(coded(), booster(categorical_features=[0])).fit(frame, label)
    model = from_pipeline(pipeline, label_name="y")
    c, a = model.inputs.columns[:2]
    assert isinstance(c, OneHotColumn) and c.categories[:3] == ("blue", "green", "red")
    assert np.isnan(c.categories[3])  # the encoder passed c's gaps on; the booster routes them
    assert "c=blue" in model.feature_names and a.gap is not None
    rows = rebuilt(pipeline, frame, label)
    assert rows["a"].isna().sum() == frame["a"].isna().sum()  # a's gaps, as gaps


def test_a_forest_after_an_encoder_of_gaps_rebuilds_them() -> None:
    frame, label = table(2)
    pipeline = CASES["a forest fitted on gaps"]()
    rows = rebuilt(pipeline, frame, label)
    c = from_pipeline(pipeline).inputs.columns[0]
    assert isinstance(c, CodedColumn) and c.gap is not None and c.missing is not None
    assert rows["c"].isna().sum() == frame["c"].isna().sum()


@pytest.mark.parametrize("case", ["sklearn's pattern", "codes as categories (mask)",
                                  "a forest fitted on gaps"])
def test_rows_with_gaps_route_as_the_pipeline_routes_them(case: str) -> None:
    """The table's rows and random ones (every category, gaps where the model routes them),
    encoded through the input map, reach the leaf scikit-learn sends them to."""
    frame, label = table(3, n=80)
    pipeline = CASES[case]().fit(frame, label)
    model = from_pipeline(pipeline)
    rng = np.random.default_rng(0)
    routed = {c.name for c in model.inputs.columns if getattr(c, "gap", None) is not None
              or (isinstance(c, OneHotColumn) and pd.isna(list(c.categories)).any())}
    colours = ["red", "green", "blue", *([None] if "c" in routed else [])]
    extra = pd.DataFrame({
        "c": rng.choice(np.array(colours, dtype=object), 300),
        "a": np.where(rng.random(300) < ("a" in routed) * 0.2, np.nan,
                      rng.uniform(20, 80, 300)),
        "b": np.where(rng.random(300) < ("b" in routed) * 0.2, np.nan,
                      rng.integers(0, 4, 300))})
    # a gap the model never routes apart goes with each split's larger side, which no
    # single value does: only the gaps it routes are sent
    frame = frame.fillna({name: value for name, value in (("c", "red"), ("a", 50.0),
                                                          ("b", 1.0)) if name not in routed})
    rows = pd.concat([frame, extra], ignore_index=True)
    encoded = model.inputs.encode(rows)[model.feature_names].to_numpy()
    np.testing.assert_array_equal(model.apply(encoded), np.column_stack(
        leaves(pipeline[-1], pipeline[:-1].transform(rows))))


@st.composite
def pipelines(draw: Any) -> Pipeline:
    """A random pipeline whose model routes gaps (and maybe categories) of its own."""
    encoder = draw(st.sampled_from([
        OrdinalEncoder(), OrdinalEncoder(encoded_missing_value=-1),
        OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1),
        OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan),
        OneHotEncoder(handle_unknown="ignore", sparse_output=False)]))
    numbers = draw(st.sampled_from(["passthrough", StandardScaler(), MinMaxScaler(),
                                    SimpleImputer(add_indicator=True)]))
    steps = make_column_transformer((encoder, ["c"]), (numbers, ["a", "b"]))
    categorical = isinstance(encoder, OrdinalEncoder) and draw(st.booleans())
    final = draw(st.sampled_from([
        booster(categorical_features=[0] if categorical else None),
        DecisionTreeClassifier(max_depth=5, random_state=0),
        RandomForestClassifier(n_estimators=2, max_depth=4, bootstrap=False,
                               random_state=0)]))
    return make_pipeline(steps, final)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pipeline=pipelines(), seed=st.integers(0, 30))
def test_random_pipelines_rows_fit_every_count(pipeline: Pipeline, seed: int) -> None:
    frame, label = table(seed, n=40)
    pipeline.fit(frame, label)
    model = from_pipeline(pipeline, label_name="y")
    # a number's gaps that no split sends apart from its larger side are not seen (a gap
    # then goes each split's larger way, which no value does): such a model is no case
    encoded = model.inputs.encode(frame)[model.feature_names].to_numpy()
    assume(all((np.bincount(tree.apply(encoded), minlength=tree.n_leaves)
                == tree.counts.sum(axis=1)).all() for tree in model.trees))
    result = reconstruct(model, time_limit=20)
    assert result.summary()["verified"] and result.n_rows == len(frame)
    rows = model.inputs.decode(result.rows)
    assert set(rows["c"].dropna()) <= COLOURS
    assert_fits_every_count(pipeline, rows, model)


@pytest.mark.parametrize("case", ["sklearn's pattern", "a gap coded -1, as a category",
                                  "unseen coded -1", "a forest fitted on gaps"])
def test_a_stripped_pipeline_predicts_as_before_and_reads_back(case: str) -> None:
    """Stripped, the pipeline predicts as before on its rows and on random ones with gaps
    and unseen categories, and its structure is read back in the custodian's columns."""
    frame, label = table(4)
    pipeline = CASES[case]().fit(frame, label)
    result = strip(pipeline, "joblib", frame, n_random=3000, labels=label,
                   released=from_pipeline(pipeline))
    assert result.score.before == result.score.after
    stripped = joblib.load(io.BytesIO(result.content))
    unseen = pipeline[0].named_transformers_["ordinalencoder"].handle_unknown != "error"
    probe = pd.DataFrame({"c": ["purple" if unseen else "blue", None, "red"],
                          "a": [np.nan, 3.0, 99.0], "b": [np.nan, 7.0, 1.0]})
    rows = pd.concat([frame, probe], ignore_index=True)
    np.testing.assert_array_equal(stripped.predict_proba(rows), pipeline.predict_proba(rows))
    again = from_pipeline(stripped)
    assert not again.counts_released and again.inputs.names == ["c", "a", "b"]


@pytest.mark.parametrize(("columns", "why"), [
    (make_column_transformer((MinMaxScaler(), ["b"]), (OrdinalEncoder(), ["c"])),
     r"splits 'b' as categories after a scaler changed it"),
    (make_column_transformer((OneHotEncoder(sparse_output=False), ["c"]),
                             remainder="passthrough"),
     r"splits 'c=blue' as categories after a OneHotEncoder spread it"),
    (make_column_transformer((SimpleImputer(), ["b"]), (OrdinalEncoder(), ["c"])),
     r"splits 'b' as categories after a SimpleImputer filled it"),
])
def test_categories_the_steps_cannot_feed_are_refused_naming_them(columns: Any, why: str
                                                                  ) -> None:
    frame, label = table(5)
    pipeline = make_pipeline(columns, booster(categorical_features=[0])).fit(frame, label)
    with pytest.raises(UnsupportedModelError, match=why):
        from_pipeline(pipeline)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    frame, label = table(6, n=80)
    pipeline = CASES["codes as categories (mask)"]().fit(frame, label)
    data = tmp_path / "data.csv"
    frame.assign(y=label).to_csv(data, index=False)
    model = tmp_path / "p.joblib"
    joblib.dump(pipeline, model)
    return {"model": model, "data": data}


def test_every_command_runs_on_the_file_in_the_custodians_columns(
        files: dict[str, Path], tmp_path: Path) -> None:
    model, data = str(files["model"]), str(files["data"])
    inspect = runner.invoke(app, ["inspect", model, "--trust-pickle"])
    assert inspect.exit_code == 0, inspect.output
    assert "c, a, b" in " ".join(inspect.stdout.split())
    out = tmp_path / "rows.csv"
    result = runner.invoke(app, ["reconstruct", model, "--trust-pickle", "--out", str(out),
                                 "--time-limit", "30"])
    assert result.exit_code == 0, result.output
    rows, truth = pd.read_csv(out), pd.read_csv(data)
    assert list(rows.columns) == ["c", "a", "b", "label"] and len(rows) == len(truth)
    assert set(rows["c"].dropna()) <= COLOURS
    single = runner.invoke(app, ["single-out", model, "--trust-pickle", "--data", data,
                                 "--label", "y"])
    assert single.exit_code == 0, single.output
    audit = runner.invoke(app, ["audit", model, "--trust-pickle", "--data", data, "--label",
                                "y", "--out", str(tmp_path / "report"), "--budget", "20"])
    assert audit.exit_code in (0, 1), audit.output
    stripped = runner.invoke(app, ["strip", model, "--trust-pickle", "--out",
                                   str(tmp_path / "s.joblib"), "--data", data, "--label", "y"])
    assert stripped.exit_code == 0, stripped.output
    assert "Not described" not in stripped.stdout
    assert "identical on 10,000 random inputs" in " ".join(stripped.stdout.split())


def imputed_booster(seed: int) -> tuple[Pipeline, pd.DataFrame, pd.Series]:
    """A booster after a OneHotEncoder and a SimpleImputer: its steps never leave a gap."""
    frame, label = table(seed, n=80)
    steps = make_column_transformer((OneHotEncoder(sparse_output=False), ["c"]),
                                    (SimpleImputer(), ["a", "b"]))
    return make_pipeline(steps, booster()).fit(frame, label), frame, label


def test_a_stripped_booster_after_an_imputer_reads_back_without_gaps() -> None:
    """Its counts gone, every split sending gaps to its smaller side looks like gaps; the
    steps say none reach the booster, so the structure is read without them."""
    pipeline, frame, label = imputed_booster(7)
    result = strip(pipeline, "joblib", frame, n_random=2000, labels=label,
                   released=from_pipeline(pipeline))
    stripped = joblib.load(io.BytesIO(result.content))
    alone = from_sklearn(stripped[-1], allow_regression=True, counts_removed_ok=True)
    assert any("missing" in name for name in alone.feature_names)  # read alone: gaps
    again = from_pipeline(stripped)
    assert not again.counts_released and again.inputs.names == ["c", "a", "b"]
    assert not any("missing" in name for name in again.feature_names)
    assert again.n_features == from_pipeline(pipeline).n_features


def test_gaps_routed_where_the_steps_leave_none_are_an_edited_file() -> None:
    pipeline, _, _ = imputed_booster(8)
    (predictor,) = pipeline[-1]._predictors[0]
    nodes = predictor.nodes
    root = 0  # its split sends gaps to the smaller side now: gaps the imputer never leaves
    smaller_left = nodes["count"][nodes["left"][root]] < nodes["count"][nodes["right"][root]]
    nodes["missing_go_to_left"][root] = smaller_left
    with pytest.raises(UnsupportedModelError, match=r"routes gaps in .*which its steps never "
                                                   r"leave missing: an edited file\?"):
        from_pipeline(pipeline)


def test_none_in_a_text_array_is_a_category_as_scikit_learn_codes_it() -> None:
    """Fitted on an object array, scikit-learn lists None as a category with its own code
    (a NaN it codes apart): the input map codes it the same, and rows fit every count."""
    frame, label = table(9)
    array = frame.to_numpy(dtype=object)
    array[:, 0] = [None if pd.isna(v) else v for v in array[:, 0]]
    steps = make_column_transformer((OrdinalEncoder(), [0]), remainder="passthrough")
    pipeline = make_pipeline(steps, booster(categorical_features=[0])).fit(array, label)
    assert pipeline[0].named_transformers_["ordinalencoder"].categories_[0][-1] is None
    model = from_pipeline(pipeline, label_name="y")
    column = model.inputs.columns[0]
    assert isinstance(column, OneHotColumn) and None in column.categories
    result = reconstruct(model, time_limit=30)
    assert result.summary()["verified"]
    rows = model.inputs.decode(result.rows)
    routed = leaves(pipeline[-1], pipeline[:-1].transform(
        rows[model.inputs.names].to_numpy(dtype=object)))
    for leaf, count in zip(routed, file_counts(pipeline[-1]), strict=True):
        np.testing.assert_array_equal(np.bincount(leaf, minlength=count.size), count)
