"""Boosters' gaps and native categories, spelled out over 0/1 features (frontends/gaps.py):
every row reaches the same leaf as the framework routes it, and the models read from them
give back rows in the table's own columns."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import HistGradientBoostingClassifier

from treeleaks.attacks.reconstruct import reconstruct
from treeleaks.frontends.gaps import GAP, Column, Layout, RoutedTree, spell_out
from treeleaks.frontends.sklearn import from_sklearn
from treeleaks.ir.model import Tree


def _framework_leaf(tree: RoutedTree, row: list) -> int:
    """The leaf a framework sends ``row`` to: a value, NaN for a gap, or a category code."""
    node = 0
    while tree.feature[node] >= 0:
        value = row[tree.feature[node]]
        categories = tree.category_split(node)
        if value is None or (isinstance(value, float) and np.isnan(value)):
            left = bool(tree.gap_left[node])
        elif categories is not None:
            left = value in categories
        else:
            left = value <= tree.threshold[node]
        node = tree.left[node] if left else tree.right[node]
    return int(tree.leaf[node])


@st.composite
def _routed(draw):
    """A random tree over one numeric column with gaps, one categorical column (gaps too)
    and one plain numeric column, with rows to route."""
    n_categories = draw(st.integers(2, 5))
    columns = [Column("x", None, True), Column("c", tuple(f"k{i}" for i in
                                                            range(n_categories)), True),
               Column("z", None, False)]
    feature, threshold, left, right, leaf, gap_left, cats = [], [], [], [], [], [], []

    def grow(depth: int) -> int:
        here = len(feature)
        for array in (feature, threshold, left, right, leaf, gap_left, cats):
            array.append(None)
        if depth == 0 or (draw(st.booleans()) and depth < 3):
            feature[here], threshold[here], leaf[here] = -1, np.nan, -2
            gap_left[here], cats[here] = False, None
            left[here] = right[here] = -1
            return here
        column = draw(st.integers(0, 2))
        feature[here], gap_left[here] = column, draw(st.booleans())
        threshold[here] = float(draw(st.integers(0, 4))) + 0.5
        cats[here] = (frozenset(draw(st.sets(st.integers(0, n_categories - 1))))
                      if column == 1 else None)
        left[here] = grow(depth - 1)
        right[here] = grow(depth - 1)
        return here

    grow(4)
    leaves = [i for i, f in enumerate(feature) if f == -1]
    for number, node in enumerate(leaves):
        leaf[node] = number
    tree = RoutedTree(np.array(feature), np.array(threshold, dtype=float), np.array(left),
                      np.array(right), np.array(leaf), np.array(gap_left, dtype=bool), cats)
    rows = draw(st.lists(st.tuples(
        st.one_of(st.just(np.nan), st.integers(0, 5).map(float)),
        st.one_of(st.just(np.nan), st.integers(0, n_categories - 1)),
        st.integers(0, 5).map(float)), min_size=1, max_size=30))
    return tree, columns, len(leaves), rows


@settings(max_examples=200, deadline=None)
@given(_routed())
def test_every_row_reaches_the_leaf_the_framework_sends_it_to(case) -> None:
    tree, columns, n_leaves, rows = case
    layout = Layout.of(columns)
    nodes, kept = spell_out(tree, layout, n_leaves)
    spelled = Tree(*nodes, np.zeros((kept.size, 1), dtype=np.int64))
    spelled.validate(1, len(layout.names))
    frame = pd.DataFrame({"x": [r[0] for r in rows],
                          "c": [columns[1].categories[int(r[1])] if not np.isnan(r[1])
                                else np.nan for r in rows],
                          "z": [r[2] for r in rows]})
    encoded = layout.inputs().encode(frame)[list(layout.names)].to_numpy()
    expected = [_framework_leaf(tree, [r[0], r[1] if not np.isnan(r[1]) else np.nan, r[2]])
                for r in rows]
    assert kept[spelled.apply(encoded)].tolist() == expected
    back = layout.inputs().decode(pd.DataFrame(encoded, columns=list(layout.names)))
    pd.testing.assert_frame_equal(back[["x", "z"]], frame[["x", "z"]], check_dtype=False)


def test_a_gap_is_its_own_code_among_the_categories() -> None:
    layout = Layout.of([Column("c", ("a", "b"), True)])
    assert layout.possible(0) == frozenset({0, 1, GAP})
    assert layout.names == ("c=a", "c=b", "c=(missing)")


@pytest.fixture(scope="module")
def penguin_like() -> tuple[pd.DataFrame, pd.Series]:
    """A table with a text category, a gap-holding number and a category with gaps."""
    rng = np.random.default_rng(0)
    n = 240
    island = rng.choice(["Biscoe", "Dream", "Torgersen"], n)
    sex = rng.choice(["female", "male", None], n, p=[0.45, 0.45, 0.1])
    mass = rng.normal(4000, 400, n).round(-1)
    mass[rng.random(n) < 0.15] = np.nan
    frame = pd.DataFrame({"island": pd.Categorical(island), "mass": mass,
                          "sex": pd.Categorical(sex)})
    label = ((island == "Dream") ^ (np.nan_to_num(mass, nan=5000) > 4100)).astype(int)
    return frame, pd.Series(label, name="species")


def test_a_histogram_booster_with_gaps_and_categories_is_read_and_rebuilt(penguin_like):
    frame, label = penguin_like
    fitted = HistGradientBoostingClassifier(max_iter=4, categorical_features="from_dtype",
                                            random_state=0).fit(frame, label)
    model = from_sklearn(fitted)
    assert model.inputs is not None
    assert model.inputs.names == ["island", "mass", "sex"]
    assert "mass=(missing)" in model.feature_names and "sex=(missing)" in model.feature_names
    encoded = model.inputs.encode(frame)[model.feature_names].to_numpy()
    for tree in model.trees:  # the table's rows, routed, give every count of the file
        assert (np.bincount(tree.apply(encoded), minlength=tree.n_leaves)
                == tree.counts.sum(axis=1)).all()
    rebuilt = reconstruct(model, time_limit=60)
    assert rebuilt.summary()["verified"] and len(rebuilt.rows) == len(frame)
    rows = model.inputs.decode(rebuilt.rows)
    assert set(rows["island"].dropna()) <= {"Biscoe", "Dream", "Torgersen"}
    assert sorted(rows["label"]) == sorted(label)
    # the rows in the table's own columns, encoded again, give every count of the file
    again = model.inputs.encode(rows)[model.feature_names].to_numpy()
    for tree in model.trees:
        assert (np.bincount(tree.apply(again), minlength=tree.n_leaves)
                == tree.counts.sum(axis=1)).all()


def test_singling_out_claims_no_row_of_a_leaf_reached_by_several_paths(penguin_like):
    from treeleaks.attacks.singling_out import node_counts, single_out

    frame, _ = penguin_like
    label = np.random.default_rng(1).integers(0, 2, len(frame))  # deep trees, lone rows
    fitted = HistGradientBoostingClassifier(max_iter=3, categorical_features="from_dtype",
                                            min_samples_leaf=1, max_leaf_nodes=64,
                                            random_state=0).fit(frame, label)
    model = from_sklearn(fitted)
    encoded = model.inputs.encode(frame)[model.feature_names].to_numpy()
    for tree in model.trees:  # a whole node's counts are the table's rows in it
        whole, counts = tree.whole_nodes(), node_counts(tree)
        lower, upper = tree.node_boxes(model.n_features)
        for node in np.flatnonzero(whole):
            inside = ((encoded > lower[node]) & (encoded <= upper[node])).all(axis=1)
            assert counts[node].sum() == inside.sum()
        assert (counts[~whole] == -1).all()
    found = single_out(model, cells=False)
    assert found.predicates
    for predicate in found.predicates:  # every proven predicate holds exactly one row
        lower, upper = model.trees[predicate.tree].node_boxes(model.n_features)
        inside = ((encoded > lower[predicate.node]) & (encoded <= upper[predicate.node])
                  ).all(axis=1)
        if predicate.label is not None:  # one row of its label
            inside &= label == predicate.label
        assert inside.sum() == 1


def test_strip_keeps_predictions_on_gaps_and_categories(penguin_like) -> None:
    from treeleaks.defences.strip import strip

    frame, label = penguin_like
    fitted = HistGradientBoostingClassifier(max_iter=5, categorical_features="from_dtype",
                                            random_state=0).fit(frame, label)
    result = strip(fitted, "skops", rows=frame, labels=label, n_random=2_000)
    assert any("gaps and categories never seen included" in line for line in result.compared)
    assert result.score is not None and result.score.before == result.score.after
    import skops.io

    again = skops.io.loads(result.content,
                           trusted=skops.io.get_untrusted_types(data=result.content))
    unseen = frame.astype(object).copy()
    unseen.loc[::3, "island"] = "Atlantis"  # a category the model never saw
    unseen.loc[::4, "mass"] = np.nan
    assert (again.predict_proba(unseen) == fitted.predict_proba(unseen)).all()


def test_a_forest_fitted_on_gaps_routes_them_and_is_rebuilt(penguin_like) -> None:
    from sklearn.ensemble import RandomForestClassifier

    frame, label = penguin_like
    numbers = frame[["mass"]].assign(noise=np.random.default_rng(2).normal(size=len(frame)))
    fitted = RandomForestClassifier(n_estimators=5, bootstrap=False, random_state=0).fit(
        numbers, label)
    model = from_sklearn(fitted)
    assert model.inputs is not None and "mass=(missing)" in model.feature_names
    encoded = model.inputs.encode(numbers)[model.feature_names].to_numpy()
    for tree in model.trees:
        assert (np.bincount(tree.apply(encoded), minlength=tree.n_leaves)
                == tree.n_samples).all()
    rebuilt = reconstruct(model, time_limit=60)
    assert rebuilt.summary()["verified"] and len(rebuilt.rows) == len(frame)
    gaps = model.inputs.decode(rebuilt.rows)["mass"].isna().sum()
    assert gaps == numbers["mass"].isna().sum()  # each gap of the table comes back a gap


def test_a_bootstrap_forest_on_gaps_is_rebuilt_over_its_cells(penguin_like) -> None:
    from sklearn.ensemble import RandomForestClassifier

    frame, label = penguin_like
    fitted = RandomForestClassifier(n_estimators=3, random_state=0).fit(frame[["mass"]], label)
    model = from_sklearn(fitted)
    assert model.bootstrap and model.inputs is not None
    rebuilt = reconstruct(model, time_limit=30)
    assert rebuilt.summary()["verified"] and len(rebuilt.rows) == len(frame)
    # a row no tree drew is free, so the gaps are counted only where the gap feature is set
    gaps = model.inputs.decode(rebuilt.rows)["mass"].isna()
    assert gaps.sum() > 0 and (gaps == (rebuilt.rows["mass=(missing)"] == 1)).all()


def test_categories_edited_to_contradict_the_trees_are_named(penguin_like) -> None:
    from treeleaks.ir.model import ModelFormatError

    frame, label = penguin_like
    fitted = HistGradientBoostingClassifier(max_iter=3, categorical_features="from_dtype",
                                            random_state=0).fit(frame, label)
    predictor = next(p for (p,) in fitted._predictors
                     if p.nodes["is_categorical"][p.nodes["is_leaf"] == 0].any())
    node = int(np.flatnonzero(predictor.nodes["is_categorical"]
                              & (predictor.nodes["is_leaf"] == 0))[0])
    predictor.raw_left_cat_bitsets[predictor.nodes["bitset_idx"][node]] = 0  # none left
    predictor.nodes["missing_go_to_left"][node] = 0
    with pytest.raises(ModelFormatError, match="no row can reach it through the splits"):
        from_sklearn(fitted)


def test_a_three_class_histogram_booster_with_categories_is_read(penguin_like) -> None:
    frame, _ = penguin_like
    label = np.random.default_rng(3).integers(0, 3, len(frame))
    fitted = HistGradientBoostingClassifier(max_iter=2, categorical_features="from_dtype",
                                            random_state=0).fit(frame, label)
    model = from_sklearn(fitted)
    encoded = model.inputs.encode(frame)[model.feature_names].to_numpy()
    for tree in model.trees:
        assert (np.bincount(tree.apply(encoded), minlength=tree.n_leaves)
                == tree.n_samples).all()
    first = model.trees[0]  # the first round counts class 0 apart, in the table's rows
    assert (np.bincount(first.apply(encoded[label == 0]), minlength=first.n_leaves)
            == first.counts[:, 0]).all()


def test_a_pipeline_passing_gaps_to_its_forest_routes_them(penguin_like) -> None:
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from treeleaks.frontends.sklearn_pipeline import from_pipeline

    frame, label = penguin_like
    table = frame.astype({"island": object, "sex": object})
    steps = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"),
                                ["island", "sex"])], remainder="passthrough")
    fitted = Pipeline([("encode", steps), ("forest", RandomForestClassifier(
        n_estimators=5, bootstrap=False, random_state=0))]).fit(table, label)
    model = from_pipeline(fitted)
    assert model.inputs.names == ["island", "sex", "mass"]
    assert "mass=(missing)" in model.feature_names
    encoded = model.inputs.encode(table)[model.feature_names].to_numpy()
    for tree in model.trees:
        assert (np.bincount(tree.apply(encoded), minlength=tree.n_leaves)
                == tree.n_samples).all()
    rebuilt = reconstruct(model, time_limit=60)
    assert rebuilt.summary()["verified"] and len(rebuilt.rows) == len(frame)
    decoded = model.inputs.decode(rebuilt.rows)  # in the table's columns, gaps as gaps
    transformed = fitted[:-1].transform(decoded[model.inputs.names])
    for tree, member in zip(model.trees, fitted[-1].estimators_, strict=True):
        rank = np.cumsum(member.tree_.children_left < 0) - 1  # the IR's leaf numbers
        assert (np.bincount(rank[member.apply(transformed)], minlength=tree.n_leaves)
                == tree.n_samples).all()


def test_a_histogram_booster_with_categories_loads_from_skops(penguin_like, tmp_path) -> None:
    import skops.io

    from treeleaks import load_model

    frame, label = penguin_like
    fitted = HistGradientBoostingClassifier(max_iter=3, categorical_features="from_dtype",
                                            random_state=0).fit(frame, label)
    skops.io.dump(fitted, tmp_path / "m.skops")
    model = load_model(tmp_path / "m.skops")
    assert model.inputs.names == ["island", "mass", "sex"]
    assert model.feature_names == from_sklearn(fitted).feature_names


def test_gaps_seen_only_at_a_split_past_every_value_are_read() -> None:
    """A column whose one gap evidence is a split at +inf (values left, gaps right) with
    as many rows on each side is a column with gaps, not an edited file."""
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    n = 60
    frame = pd.DataFrame({"bill": rng.normal(44, 5, n).round(1),
                          "flipper": rng.normal(200, 14, n).round(0),
                          "mass": rng.normal(4200, 800, n).round(-1)})
    for column in ("bill", "mass"):
        frame.loc[rng.random(n) < 0.25, column] = np.nan
    label = ((frame["bill"].fillna(30) < 43) ^ frame["mass"].isna()).astype(int)
    fitted = RandomForestClassifier(n_estimators=10, bootstrap=False, random_state=0).fit(
        frame, label)
    model = from_sklearn(fitted)
    encoded = model.inputs.encode(frame)[model.feature_names].to_numpy()
    for tree in model.trees:
        assert (np.bincount(tree.apply(encoded), minlength=tree.n_leaves)
                == tree.n_samples).all()


def test_rows_come_back_in_the_tables_column_order(penguin_like) -> None:
    frame, label = penguin_like
    table = frame.assign(year=np.arange(len(frame)) % 3 + 2007)[["year", "island", "mass",
                                                                  "sex"]]
    fitted = HistGradientBoostingClassifier(max_iter=3, categorical_features="from_dtype",
                                            random_state=0).fit(table, label)
    model = from_sklearn(fitted)
    assert model.inputs.names == ["year", "island", "mass", "sex"]
    rebuilt = reconstruct(model, time_limit=30)
    assert list(model.inputs.decode(rebuilt.rows).columns) == ["year", "island", "mass", "sex",
                                                               model.label_name]


def test_a_lightgbm_split_of_the_gaps_alone_is_read(tmp_path) -> None:
    """LightGBM writes threshold=inf where a split sends every value left and the gaps
    right: a genuine file, read, not refused as edited."""
    import lightgbm

    from treeleaks import load_model

    rng = np.random.default_rng(0)
    x = rng.normal(size=400)
    x[rng.random(400) < 0.3] = np.nan
    z = rng.normal(size=400)
    frame = pd.DataFrame({"x": x, "z": z})
    label = (np.isnan(x) ^ (z > 0)).astype(int)
    booster = lightgbm.LGBMClassifier(verbose=-1).fit(frame, label).booster_
    booster.save_model(tmp_path / "m.txt")
    assert " inf" in (tmp_path / "m.txt").read_text()  # the split of the gaps alone
    model = load_model(tmp_path / "m.txt")
    encoded = model.inputs.encode(frame)[model.feature_names].to_numpy()
    leaves = booster.predict(frame, pred_leaf=True)
    first = model.trees[0]
    assert (np.bincount(first.apply(encoded), minlength=first.n_leaves)
            == np.bincount(leaves[:, 0], minlength=first.n_leaves)).all()
