"""scikit-learn pipelines before a tree model (issue 49, item 2): read from skops and pickles,
every threshold carried back into the custodian's units so rows route as the pipeline routes
them, reconstructions decoded into the custodian's columns that fit every count once
transformed, a stripped pipeline that predicts as before, and each step treeleaks cannot
read refused by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.ensemble import RandomForestClassifier
from sklearn.impute import KNNImputer, SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    KBinsDiscretizer,
    MaxAbsScaler,
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    QuantileTransformer,
    RobustScaler,
    StandardScaler,
)
from sklearn.tree import DecisionTreeClassifier
from typer.testing import CliRunner

from treeleaks.attacks.reconstruct import reconstruct
from treeleaks.attacks.reconstruction.draw_search_stage import reconstruct_drawn_partial
from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.cli import app
from treeleaks.defences.strip import strip
from treeleaks.frontends.sklearn_pipeline import from_pipeline
from treeleaks.io import load_model, save_model
from treeleaks.ir.inputs import NumberColumn, OneHotColumn
from treeleaks.ir.schema import FeatureSchema
from treeleaks.runtime.errors import UnsupportedModelError, UntrustedPickleError

from conftest import one_line_error

runner = CliRunner(env={"COLUMNS": "400"})  # one table row a line
SCALERS = [StandardScaler, MinMaxScaler, RobustScaler, MaxAbsScaler]


def table(seed: int, n: int = 40) -> tuple[pd.DataFrame, pd.Series]:
    """A small mixed table: numbers with gaps (a, b), whole numbers (e), text with gaps (c)
    and text without (d); the label depends on several of them."""
    rng = np.random.default_rng(seed)
    a = rng.normal(50, 10, n).round(1)
    a[rng.random(n) < 0.15] = np.nan
    b = rng.uniform(0, 5, n).round(2)
    b[rng.random(n) < 0.1] = np.nan
    c = rng.choice(np.array(["red", "green", "blue", None], dtype=object), n)
    d = rng.choice(np.array(["x", "y", "z"], dtype=object), n)
    e = rng.integers(0, 6, n).astype(float)
    frame = pd.DataFrame({"a": a, "b": b, "c": c, "d": d, "e": e})
    label = ((np.nan_to_num(a, nan=45) > 50) ^ (d == "y") | (c == "red")).astype(int)
    return frame, pd.Series(label, name="label")


@st.composite
def pipelines(draw: Any) -> Pipeline:
    """A random pipeline of the steps treeleaks reads, over `table`'s columns."""
    def scaled(*steps: Any) -> Any:
        scaler = draw(st.sampled_from([None, *SCALERS]))
        chain = [*steps, *([scaler()] if scaler is not None else [])]
        return make_pipeline(*chain) if len(chain) > 1 else (chain[0] if chain else
                                                               "passthrough")
    imputer = SimpleImputer(strategy=draw(st.sampled_from(["mean", "median", "constant"])),
                            fill_value=-1.0, add_indicator=draw(st.booleans()))
    text = OneHotEncoder(drop=draw(st.sampled_from([None, "first", "if_binary"])),
                         sparse_output=draw(st.booleans()),
                         handle_unknown=draw(st.sampled_from(["ignore", "error"])))
    coded = draw(st.sampled_from([
        OneHotEncoder(handle_unknown="ignore", sparse_output=False),
        OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1),
        OrdinalEncoder()]))
    remainder = draw(st.sampled_from(["drop", "passthrough", MinMaxScaler()]))
    columns = ColumnTransformer([("num", scaled(imputer), ["a", "b"]), ("text", text, ["c"]),
                                 ("coded", coded, ["d"])], remainder=remainder,
                                sparse_threshold=draw(st.sampled_from([0.0, 0.3])))
    steps: list[Any] = [("columns", columns)]
    if draw(st.booleans()):
        steps.append(("scale", MaxAbsScaler()))  # over every feature, sparse or dense
    tree = draw(st.sampled_from([
        DecisionTreeClassifier(max_depth=5, random_state=0),
        RandomForestClassifier(n_estimators=3, max_depth=4, bootstrap=False, random_state=0)]))
    return Pipeline([*steps, ("tree", tree)])


def leaves_as_the_pipeline_routes(pipeline: Pipeline, frame: pd.DataFrame, model: Any
                                  ) -> np.ndarray:
    """Each row's leaf in each tree of the IR, found by the pipeline's own transform: the
    IR numbers a tree's leaves in the order of scikit-learn's leaf nodes (spelling out an
    imputer's gaps copies paths, not leaves)."""
    transformed = pipeline[:-1].transform(frame)
    members = getattr(pipeline[-1], "estimators_", [pipeline[-1]])
    assert len(members) == len(model.trees)
    leaves = []
    for member in members:
        rank = np.cumsum(member.tree_.children_left < 0) - 1  # a leaf node's leaf number
        leaves.append(rank[member.apply(transformed)])
    return np.column_stack(leaves)


def random_rows(frame: pd.DataFrame, n: int, unseen: bool, seed: int = 1) -> pd.DataFrame:
    """Rows drawn from each column's values, values beyond them, gaps where the column had
    some, and (with ``unseen``) categories no encoder saw."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in frame.columns:
        values = frame[name].dropna().to_numpy()
        if not pd.api.types.is_numeric_dtype(frame[name]):
            gaps = [None] if unseen or frame[name].isna().any() else []  # a gap is unseen
            pool = np.array([*values, *(["purple"] if unseen else []), *gaps], dtype=object)
            out[name] = rng.choice(pool, n)
        else:
            column = rng.uniform(values.min() - 1, values.max() + 1, n)
            exact = rng.random(n) < 0.3
            column[exact] = rng.choice(values, int(exact.sum()))
            if frame[name].isna().any():  # a tree's own routing of a gap it never saw in
                column[rng.random(n) < 0.1] = np.nan  # training is not read (yet)
            out[name] = column
    return pd.DataFrame(out)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipeline=pipelines(), seed=st.integers(0, 50))
def test_rows_route_as_the_pipeline_routes_them(pipeline: Pipeline, seed: int) -> None:
    """Encoded through the input map, training rows and random ones (gaps, values exactly
    at the data's values, unseen categories where the encoder takes them) reach the leaf
    the pipeline sends them to: the thresholds carried back are exact."""
    frame, label = table(seed)
    pipeline.fit(frame, label)
    model = from_pipeline(pipeline)
    encoders = pipeline.named_steps["columns"].named_transformers_
    unseen = all(encoders[name].handle_unknown != "error" for name in ("text", "coded"))
    rows = pd.concat([frame, random_rows(frame, 300, unseen)], ignore_index=True)
    encoded = model.inputs.encode(rows)[model.feature_names].to_numpy()
    np.testing.assert_array_equal(model.apply(encoded),
                                  leaves_as_the_pipeline_routes(pipeline, rows, model))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipeline=pipelines(), seed=st.integers(0, 50))
def test_rows_rebuilt_in_the_custodians_columns_fit_every_count(pipeline: Pipeline,
                                                                seed: int) -> None:
    """The reconstruction's rows, decoded into the custodian's columns and transformed by
    the pipeline itself, reproduce every leaf count of the tree model (its certificate)."""
    frame, label = table(seed)
    pipeline.fit(frame, label)
    model = from_pipeline(pipeline)
    recon = reconstruct(model, FeatureSchema.for_model(model).bind(model), time_limit=20)
    assert recon.n_rows == len(frame)
    decoded = model.inputs.decode(recon.rows)
    assert list(decoded.columns[:len(model.inputs.names)]) == model.inputs.names
    leaves = leaves_as_the_pipeline_routes(pipeline, decoded[model.inputs.names], model)
    got = model.leaf_counts_at(leaves, model.class_index(decoded[model.label_name]))
    for tree, counts in zip(model.trees, got, strict=True):
        np.testing.assert_array_equal(counts, tree.counts)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipeline=pipelines(), seed=st.integers(0, 50))
def test_a_stripped_pipeline_predicts_as_before(pipeline: Pipeline, seed: int) -> None:
    frame, label = table(seed)
    pipeline.fit(frame, label)
    result = strip(pipeline, "skops", frame, n_random=2000, labels=label,
                   released=from_pipeline(pipeline))
    assert result.n_rows == len(frame) and result.score.before == result.score.after
    stripped = skops.io.loads(result.content,
                              trusted=skops.io.get_untrusted_types(data=result.content))
    np.testing.assert_array_equal(stripped.predict_proba(frame), pipeline.predict_proba(frame))
    assert not stripped[-1].estimators_[0].tree_.n_node_samples.any() if hasattr(
        stripped[-1], "estimators_") else not stripped[-1].tree_.n_node_samples.any()
    assert any("categories_" in k for k in result.kept)


def fitted(*steps: Any, columns: list[str] | None = None) -> Pipeline:
    frame, label = table(3)
    frame = frame[columns or ["b", "e"]].fillna(0.0)
    return make_pipeline(*steps, DecisionTreeClassifier(random_state=0)).fit(frame, label)


@pytest.mark.parametrize(("step", "why"), [
    (PCA(n_components=1), "mixes columns"),
    (PolynomialFeatures(), "multiplies columns"),
    (FunctionTransformer(np.log1p), "runs code of its own"),
    (KBinsDiscretizer(n_bins=2, encode="ordinal", quantile_method="averaged_inverted_cdf"),
     "bins"),
    (QuantileTransformer(n_quantiles=10), "inverted"),
    (KNNImputer(), "from other columns"),
])
def test_each_step_treeleaks_cannot_invert_is_refused_by_name(step: Any, why: str) -> None:
    pipeline = fitted(step)
    name = pipeline.steps[0][0]
    with pytest.raises(UnsupportedModelError,
                       match=rf"step '{name}' is a {type(step).__name__}, .*{why}"):
        from_pipeline(pipeline)


def test_infrequent_categories_are_refused_by_name() -> None:
    encoder = OneHotEncoder(min_frequency=0.4, handle_unknown="infrequent_if_exist")
    pipeline = fitted(encoder, columns=["d"])
    assert any(c is not None for c in pipeline[0].infrequent_categories_)
    with pytest.raises(UnsupportedModelError, match=r"OneHotEncoder.*infrequent categories"):
        from_pipeline(pipeline)


def test_a_last_step_that_is_no_tree_model_is_refused_by_name() -> None:
    frame, label = table(3)
    pipeline = Pipeline([("scale", StandardScaler()), ("lr", LogisticRegression())]).fit(
        frame[["b", "e"]].fillna(0), label)
    with pytest.raises(UnsupportedModelError,
                       match="last step 'lr' is a LogisticRegression, not a tree model"):
        from_pipeline(pipeline)


def test_a_remainder_treeleaks_cannot_read_is_refused_by_name() -> None:
    frame, label = table(3)
    columns = ColumnTransformer([("text", OneHotEncoder(), ["d"])],
                                remainder=PolynomialFeatures())
    pipeline = make_pipeline(columns, DecisionTreeClassifier(random_state=0)).fit(
        frame[["d", "e"]], label)
    with pytest.raises(UnsupportedModelError, match="step 'remainder' is a PolynomialFeatures"):
        from_pipeline(pipeline)


def test_a_skops_pipeline_with_an_unread_step_names_it(tmp_path: Path) -> None:
    path = save_model(fitted(PCA(n_components=1)), tmp_path / "p.skops")
    with pytest.raises(UntrustedPickleError, match=r"step\(s\) 'pca' \(sklearn\.decomposition"):
        load_model(path)


def test_a_pipeline_reads_alike_from_skops_and_from_a_trusted_pickle(tmp_path: Path) -> None:
    frame, label = table(5)
    columns = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), ["c", "d"]),
                                 ("num", SimpleImputer(add_indicator=True), ["a", "b"])])
    pipeline = make_pipeline(columns, StandardScaler(),
                             RandomForestClassifier(n_estimators=4, bootstrap=False,
                                                    random_state=0)).fit(frame, label)
    joblib.dump(pipeline, tmp_path / "p.joblib")
    with pytest.raises(UntrustedPickleError):
        load_model(tmp_path / "p.joblib")
    one = load_model(save_model(pipeline, tmp_path / "p.skops"))
    two = load_model(tmp_path / "p.joblib", trust_pickle=True)
    assert one.to_dict() == two.to_dict() and repr(one.inputs) == repr(two.inputs)
    assert one.inputs.names == ["c", "d", "a", "b"]
    a = one.inputs.columns[2]
    assert isinstance(a, NumberColumn) and a.gap is not None
    assert a.fill == pytest.approx(frame["a"].mean())
    c = one.inputs.columns[0]
    assert isinstance(c, OneHotColumn) and c.exactly_one and pd.isna(c.categories[-1])
    fields = {f.name for f in one.described().fields}
    assert {"standardscaler.mean_", "standardscaler.n_samples_seen_",
            "columntransformer/text.categories_",
            "columntransformer/num.statistics_"} <= fields


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    frame, label = table(7, n=60)
    columns = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), ["c", "d"]),
                                 ("num", SimpleImputer(), ["a", "b"])], remainder="passthrough")
    pipeline = make_pipeline(columns, RandomForestClassifier(
        n_estimators=5, bootstrap=False, random_state=0)).fit(frame, label)
    data = tmp_path / "data.csv"
    frame.assign(label=label).to_csv(data, index=False)
    return {"model": save_model(pipeline, tmp_path / "p.skops"), "data": data}


def test_reconstruct_writes_rows_in_the_custodians_columns(files: dict[str, Path],
                                                           tmp_path: Path) -> None:
    out, details = tmp_path / "rows.csv", tmp_path / "details.csv"
    result = runner.invoke(app, ["reconstruct", str(files["model"]), "--out", str(out),
                                 "--details", str(details)])
    assert result.exit_code == 0, result.output
    rows = pd.read_csv(out)
    assert list(rows.columns) == ["c", "d", "a", "b", "e", "label"]
    truth = pd.read_csv(files["data"])
    assert set(rows["d"]) <= set(truth["d"]) and len(rows) == len(truth)
    assert "may have been gaps" in result.stdout
    assert {"a:maybe_gap", "b:maybe_gap"} <= set(pd.read_csv(details).columns)


def test_the_audit_and_single_out_read_the_custodians_table(files: dict[str, Path],
                                                           tmp_path: Path) -> None:
    result = runner.invoke(app, ["single-out", str(files["model"]), "--data",
                                 str(files["data"]), "--label", "label"])
    assert result.exit_code == 0, result.output
    assert "rows singled out" in result.stdout.lower() or "Singled out" in result.stdout
    audit = runner.invoke(app, ["audit", str(files["model"]), "--data", str(files["data"]),
                                "--label", "label", "--out", str(tmp_path / "report"),
                                "--budget", "20"])
    assert audit.exit_code in (0, 1), audit.output


def test_data_without_the_pipelines_columns_is_one_line(files: dict[str, Path],
                                                        tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    pd.read_csv(files["data"]).drop(columns="d").to_csv(bad, index=False)
    line = one_line_error(runner.invoke(app, ["single-out", str(files["model"]), "--data",
                                              str(bad), "--label", "label"]))
    assert "lack the columns the pipeline reads: d" in line


def test_an_ordinal_encoder_of_gaps_passes_them_to_the_tree() -> None:
    """Its gaps reach the tree as NaN, which the tree routes: read as the column's gaps
    (`test_pipeline_routing` rebuilds such pipelines' rows)."""
    frame, label = table(3)
    pipeline = make_pipeline(OrdinalEncoder(), DecisionTreeClassifier(random_state=0)).fit(
        frame[["c"]], label)
    (column,) = from_pipeline(pipeline).inputs.columns
    assert column.categories == ("blue", "green", "red") and np.isnan(column.missing)
    assert column.gap is not None


def test_inspect_lists_the_steps_and_what_each_statistic_gives_away(
        files: dict[str, Path]) -> None:
    result = runner.invoke(app, ["inspect", str(files["model"])])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "OneHotEncoder (c, d)" in text and "SimpleImputer (a, b)" in text
    assert "every category seen in training" in text and "its training mean" in text


def test_strip_keeps_what_the_steps_read_and_names_it(files: dict[str, Path],
                                                     tmp_path: Path) -> None:
    out = tmp_path / "s.skops"
    result = runner.invoke(app, ["strip", str(files["model"]), "--out", str(out), "--data",
                                 str(files["data"]), "--label", "label", "--no-measure"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "columntransformer/text.categories_" in text and "read them to predict" in text
    assert "gaps and categories never seen included" in text
    stripped = load_model(out, counts_removed_ok=True)
    assert not stripped.counts_released and stripped.inputs.names == ["c", "d", "a", "b", "e"]


def test_partial_rows_of_a_bootstrap_forest_are_rows_the_encoder_could_write() -> None:
    """The draw search moves rows over the thresholds' grid, which knows no one-hot group:
    a point may set two categories of a column, or none. Every row it returns is one the
    encoder could have written (one category each), and decodes to a category."""
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({"colour": rng.choice(["red", "green", "blue", "grey", "pink"], n),
                          "size": rng.integers(0, 30, n).astype(float),
                          "weight": rng.normal(60, 12, n).round(1)})
    label = ((frame["colour"].isin(["red", "pink"])) ^ (frame["size"] > 14)).astype(int)
    pipeline = make_pipeline(
        ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), ["colour"])],
                          remainder="passthrough"),
        RandomForestClassifier(n_estimators=30, random_state=0)).fit(frame, label)
    model = from_pipeline(pipeline)
    schema = FeatureSchema.infer(model).bind(model)
    rec = reconstruct_drawn_partial(model, schema, RunOptions(time_limit=10))
    assert rec.n_rows and rec.verified, rec.message
    members = [name for name in model.feature_names if name.startswith("colour=")]
    assert len(members) == 5
    assert (rec.rows[members].sum(axis=1) == 1).all()
    assert model.inputs.decode(rec.rows)["colour"].notna().all()
