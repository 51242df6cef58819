"""LightGBM and XGBoost fitted on tables with gaps and pandas categories: read, every count
of the file reproduced by the table's rows, every row routed to the leaf the framework
sends it to, rebuilt, stripped; edited routing refused or said."""

import json

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import xgboost as xgb
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from treeleaks.attacks.reconstruct import reconstruct
from treeleaks.defences.strip import strip
from treeleaks.frontends.lightgbm import read_lightgbm
from treeleaks.frontends.xgboost import read_xgboost
from treeleaks.ir.model import ModelFormatError
from treeleaks.runtime.errors import UnsupportedModelError

ISLANDS = ["Biscoe", "Dream", "Torgersen", "Alpha", "Beta"]
SEXES = ["female", "male"]


def _frame(n: int, seed: int, gaps: bool = True) -> pd.DataFrame:
    """A table with a text category, a number with gaps and a category with gaps."""
    rng = np.random.default_rng(seed)
    mass = rng.normal(4000, 400, n).round(-1)
    island = rng.choice(ISLANDS, n).astype(object)
    sex = rng.choice(SEXES, n).astype(object)
    if gaps:
        mass[rng.random(n) < 0.15] = np.nan
        sex[rng.random(n) < 0.1] = None
    return pd.DataFrame({"island": pd.Categorical(island, categories=ISLANDS),
                         "mass": mass, "sex": pd.Categorical(sex, categories=SEXES)})


def _label(frame: pd.DataFrame, n_classes: int = 2) -> np.ndarray:
    score = (frame["island"].isin(["Dream", "Alpha"]).to_numpy().astype(int)
             + (frame["mass"].fillna(3000).to_numpy() > 4100)
             + (frame["sex"] == "male").to_numpy())
    return score % n_classes


@pytest.fixture(scope="module")
def table() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Training rows, and 1,000 random rows with gaps in every column."""
    rows = _frame(1000, 7)
    rows["island"] = rows["island"].mask(np.random.default_rng(8).random(1000) < 0.1)
    return _frame(300, 0), rows


def _encoded(model, frame: pd.DataFrame) -> np.ndarray:
    return model.inputs.encode(frame)[model.feature_names].to_numpy()


def _xgboost_leaves(booster: xgb.Booster, frame: pd.DataFrame) -> np.ndarray:
    """Each row's leaf per tree, as XGBoost routes it, numbered in node order."""
    nodes = booster.predict(xgb.DMatrix(frame, enable_categorical=True),
                            pred_leaf=True).astype(np.int64)
    trees = json.loads(bytes(booster.save_raw(raw_format="json")))["learner"][
        "gradient_booster"]["model"]["trees"]
    out = np.empty_like(nodes)
    for t, tree in enumerate(trees):
        is_leaf = np.asarray(tree["left_children"]) < 0
        number = np.cumsum(is_leaf) - 1
        out[:, t] = number[nodes[:, t]]
    return out


@pytest.mark.parametrize("n_classes", [2, 3])
def test_lightgbm_routes_every_row_as_lightgbm_does(table, n_classes) -> None:
    frame, random_rows = table
    fitted = lgb.LGBMClassifier(n_estimators=4, verbose=-1, min_child_samples=5).fit(
        frame, _label(frame, n_classes))
    model = read_lightgbm(fitted.booster_.model_to_string())  # the text file
    assert model.inputs.names == ["island", "mass", "sex"]
    assert "mass=(missing)" in model.feature_names and "island=Dream" in model.feature_names
    train = _encoded(model, frame)
    for tree in model.trees:  # leaf_count of every tree, from the table's rows
        assert (np.bincount(tree.apply(train), minlength=tree.n_leaves)
                == tree.counts.sum(axis=1)).all()
    for rows in (frame, random_rows):
        leaves = fitted.booster_.predict(rows, pred_leaf=True)
        encoded = _encoded(model, rows)
        for t, tree in enumerate(model.trees):
            assert (tree.apply(encoded) == leaves[:, t]).all()


@pytest.mark.parametrize(("n_classes", "seed"), [(2, 0), (3, 0), (3, 1)])
def test_xgboost_routes_every_row_as_xgboost_does(table, n_classes, seed) -> None:
    # three classes on seed 0's table: a penalty estimated from N·b, not the whole class
    # total, once refused it (no learning rate made every count whole)
    frame, random_rows = _frame(300, seed), table[1]
    fitted = xgb.XGBClassifier(n_estimators=4, max_depth=4, enable_categorical=True,
                               tree_method="hist").fit(frame, _label(frame, n_classes))
    model = read_xgboost(fitted)
    assert model.inputs.names == ["island", "mass", "sex"]
    assert "island=Torgersen" in model.feature_names
    train = _encoded(model, frame)
    for tree in model.trees[:1 if n_classes == 2 else n_classes]:  # the counted trees
        assert (np.bincount(tree.apply(train), minlength=tree.n_leaves)
                == tree.counts.sum(axis=1)).all()
    for rows in (frame, random_rows):
        leaves = _xgboost_leaves(fitted.get_booster(), rows)
        encoded = _encoded(model, rows)
        for t, tree in enumerate(model.trees):
            assert (tree.apply(encoded) == leaves[:, t]).all()


@pytest.mark.parametrize("method", ["hist", "exact", "approx"])
def test_xgboost_with_gaps_in_numbers_is_read_whatever_its_tree_method(method) -> None:
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"]).mask(
        rng.random((200, 3)) < 0.15)
    y = ((X["a"].fillna(2) > 0) ^ (X["b"].fillna(-2) > 0.3)).astype(int)
    fitted = xgb.XGBClassifier(n_estimators=4, max_depth=3, tree_method=method).fit(X, y)
    model = read_xgboost(fitted)
    assert model.n_rows == len(X)
    if model.inputs is not None:
        encoded = _encoded(model, X)
    else:  # no column's splits disagree: a gap routes past every threshold on their side
        trees = json.loads(bytes(fitted.get_booster().save_raw(raw_format="json")))[
            "learner"]["gradient_booster"]["model"]["trees"]
        left = {f for t in trees for f, d, c in zip(t["split_indices"], t["default_left"],
                                                     t["left_children"], strict=True)
                if c >= 0 and d}
        encoded = X.fillna({X.columns[f]: -1e9 for f in left}).to_numpy()
    first = model.trees[0]
    assert (np.bincount(first.apply(encoded), minlength=first.n_leaves)
            == first.counts.sum(axis=1)).all()
    leaves = _xgboost_leaves(fitted.get_booster(), X)
    for t, tree in enumerate(model.trees):
        assert (tree.apply(encoded) == leaves[:, t]).all()


@pytest.mark.parametrize("framework", ["lightgbm", "xgboost"])
def test_a_booster_with_gaps_and_categories_is_rebuilt_in_the_tables_columns(framework):
    frame = _frame(120, 3)
    label = _label(frame)
    if framework == "lightgbm":
        model = read_lightgbm(lgb.LGBMClassifier(n_estimators=3, verbose=-1,
                                                 min_child_samples=10).fit(frame, label))
    else:
        model = read_xgboost(xgb.XGBClassifier(n_estimators=3, max_depth=3,
                                               enable_categorical=True,
                                               tree_method="hist").fit(frame, label))
    rebuilt = reconstruct(model, time_limit=60)
    assert rebuilt.summary()["verified"] and len(rebuilt.rows) == len(frame)
    rows = model.inputs.decode(rebuilt.rows)
    assert list(rows.columns[:3]) == ["island", "mass", "sex"]
    assert set(rows["island"].dropna()) <= set(ISLANDS)
    assert sorted(rows["label"]) == sorted(label)
    again = _encoded(model, rows)  # the rows, encoded again, fit every count of the file
    for tree in model.trees:
        if tree.counted:
            assert (np.bincount(tree.apply(again), minlength=tree.n_leaves)
                    == tree.counts.sum(axis=1)).all()


def test_stripped_boosters_with_gaps_and_categories_predict_as_before(table) -> None:
    frame, _ = table
    label = _label(frame)
    light = lgb.LGBMClassifier(n_estimators=4, verbose=-1, min_child_samples=5).fit(
        frame, label)
    text = frame.astype({"island": object, "sex": object})  # a CSV's text columns
    done = strip(light.booster_.model_to_string(), "lightgbm", rows=text)
    assert done.compared[0] == "identical on the 300 rows of --data"
    assert "gaps and categories never seen included" in done.compared[-1]
    stripped = read_lightgbm(done.content.decode(), counts_removed_ok=True)
    assert stripped.inputs.names == ["island", "mass", "sex"]  # the categories' names kept
    assert "sex=female" in stripped.feature_names
    boosted = xgb.XGBClassifier(n_estimators=4, enable_categorical=True,
                                tree_method="hist").fit(frame, label)
    data = json.loads(bytes(boosted.get_booster().save_raw(raw_format="json")))
    done = strip(data, "xgboost", rows=text)
    assert done.compared[0] == "identical on the 300 rows of --data"
    assert "gaps and categories never seen included" in done.compared[-1]
    stripped = read_xgboost(json.loads(done.content), counts_removed_ok=True)
    assert "sex=(missing)" in stripped.feature_names


def _lightgbm_text(frame: pd.DataFrame) -> str:
    return lgb.LGBMClassifier(n_estimators=2, verbose=-1, min_child_samples=5).fit(
        frame, _label(frame)).booster_.model_to_string()


def _edit_first_bitset(text: str, words: str) -> str:
    """The text with tree 0's first category bitset replaced by ``words``."""
    head, rest = text.split("Tree=0", 1)
    block, tail = rest.split("Tree=1", 1)
    lines = block.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("cat_threshold="))
    words_now = lines[at].split("=", 1)[1].split()
    bounds = [int(b) for b in next(line for line in lines if line.startswith(
        "cat_boundaries=")).split("=", 1)[1].split()]
    new = words.split() + words_now[bounds[1]:]
    lines[at] = "cat_threshold=" + " ".join(new)
    shift = len(words.split()) - bounds[1]
    lines = [("cat_boundaries=0 " + " ".join(str(b + shift) for b in bounds[1:]))
             if line.startswith("cat_boundaries=") else line for line in lines]
    return head + "Tree=0" + "\n".join(lines) + "\nTree=1" + tail


def test_a_lightgbm_category_the_list_lacks_is_read_and_said() -> None:
    text = _lightgbm_text(_frame(300, 0, gaps=False))
    edited = _edit_first_bitset(text, str((1 << 1) | (1 << 20)))  # code 20: no such island
    model = read_lightgbm(edited)
    fact = next(v for k, v in model.facts.items() if "pandas_categorical lacks" in k)
    assert "codes 20" in fact


def test_lightgbm_categories_that_leave_a_counted_leaf_unreachable_are_refused() -> None:
    text = _lightgbm_text(_frame(300, 0, gaps=False))
    edited = _edit_first_bitset(text, "0")  # no category goes left: its leaves' rows?
    with pytest.raises(ModelFormatError, match=r"LightGBM tree 0 leaf \d+: its leaf_count "
                       r"holds \d+ but no row can reach it through the splits' cat_threshold"):
        read_lightgbm(edited)


def test_xgboost_categories_that_contradict_the_trees_are_refused_or_said() -> None:
    frame = _frame(300, 0, gaps=False)
    fitted = xgb.XGBClassifier(n_estimators=2, max_depth=3, enable_categorical=True,
                               tree_method="hist").fit(frame, _label(frame))
    data = json.loads(bytes(fitted.get_booster().save_raw(raw_format="json")))
    tree = data["learner"]["gradient_booster"]["model"]["trees"][0]
    node = next(n for n, s in zip(tree["categories_nodes"], tree["categories_sizes"],
                                  strict=True) if s)
    position = tree["categories_nodes"].index(node)
    column = tree["split_indices"][node]
    n_codes = len(ISLANDS) if column == 0 else len(SEXES)
    start, cut = tree["categories_segments"][position], tree["categories_sizes"][position]

    def listing(codes: list[int]) -> dict:
        """The file with the node's categories sent right replaced by ``codes``."""
        edited = json.loads(json.dumps(data))
        at = edited["learner"]["gradient_booster"]["model"]["trees"][0]
        at["categories"][start:start + cut] = codes
        for later in range(position + 1, len(at["categories_segments"])):
            at["categories_segments"][later] += len(codes) - cut
        at["categories_sizes"][position] = len(codes)
        at["default_left"][node] = 0
        return edited

    listed = tree["categories"][start:start + cut]
    model = read_xgboost(listing([*listed, 40]))  # a code the file's categories lack
    assert any("cats lack" in k and "codes 40" in v for k, v in model.facts.items())
    # every category sent right, gaps too: the left subtree's rows have nowhere to come from
    data = listing(list(range(n_codes)))
    with pytest.raises(ModelFormatError, match=r"XGBoost tree 0 leaf \d+: its sum_hessian "
                       r"holds .* but no row can reach it through the splits' categories"):
        read_xgboost(data)


def test_zero_as_missing_is_refused_naming_the_option() -> None:
    frame = _frame(300, 0)
    fitted = lgb.LGBMClassifier(n_estimators=2, verbose=-1, zero_as_missing=True).fit(
        frame.assign(mass=frame["mass"] - 4000), _label(frame))
    with pytest.raises(UnsupportedModelError, match="zero_as_missing=true"):
        read_lightgbm(fitted)


def _fits_every_count(model, frame: pd.DataFrame) -> bool:
    encoded = _encoded(model, frame)
    return all((np.bincount(tree.apply(encoded), minlength=tree.n_leaves)
                == tree.counts.sum(axis=1)).all() for tree in model.trees if tree.counted)


def test_an_xgboost_ubj_file_and_a_model_fitted_on_codes_are_read(tmp_path) -> None:
    from treeleaks.io import load_model

    frame = _frame(300, 0)
    label = _label(frame)
    fitted = xgb.XGBClassifier(n_estimators=3, enable_categorical=True,
                               tree_method="hist").fit(frame, label)
    fitted.save_model(tmp_path / "m.ubj")
    model = load_model(tmp_path / "m.ubj")  # the category names XGBoost keeps, from UBJSON
    assert "island=Alpha" in model.feature_names and _fits_every_count(model, frame)
    codes = pd.DataFrame({"f0": frame["island"].cat.codes.replace(-1, np.nan).astype(float),
                          "f1": frame["mass"]})
    booster = xgb.train({"objective": "binary:logistic", "tree_method": "hist"},
                        xgb.DMatrix(codes.to_numpy(), label=label, feature_types=["c", "q"],
                                    enable_categorical=True), 3)
    model = read_xgboost(booster)  # no names: categories by code, one for the rest
    fact = model.facts["categories of 'f0'"]
    assert "by code" in fact and "stands for every code no split lists" in fact
    assert _fits_every_count(model, codes)


@pytest.mark.parametrize("framework", ["lightgbm", "xgboost"])
def test_a_regressor_with_gaps_and_categories_is_read(framework) -> None:
    frame = _frame(300, 0)
    target = frame["mass"].fillna(3000).to_numpy() / 100 + 5 * (frame["island"] == "Dream")
    table = frame.drop(columns="mass").assign(size=frame["mass"] / 1000)
    fitted = (lgb.LGBMRegressor(n_estimators=3, verbose=-1, min_child_samples=5)
              if framework == "lightgbm" else
              xgb.XGBRegressor(n_estimators=3, enable_categorical=True, tree_method="hist"))
    fitted.fit(table, target)
    model = (read_lightgbm if framework == "lightgbm" else read_xgboost)(fitted)
    assert model.task == "regression" and model.inputs.names == ["island", "sex", "size"]
    assert _fits_every_count(model, table)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), share=st.sampled_from([0.0, 0.1, 0.4]),
       framework=st.sampled_from(["lightgbm", "xgboost"]))
def test_random_tables_route_as_the_framework_does(seed, share, framework) -> None:
    """Random tables (gaps in any share, a category seen by few rows): the reader's model
    reproduces every count and sends every row where the framework does."""
    rng = np.random.default_rng(seed)
    n = 150
    kinds = ["a", "b", "c", "d"][:int(rng.integers(2, 5))]
    colour = rng.choice(kinds, n).astype(object)
    colour[rng.random(n) < share] = None
    size = rng.normal(size=n).round(2)
    size[rng.random(n) < share] = np.nan
    frame = pd.DataFrame({"colour": pd.Categorical(colour, categories=kinds), "size": size})
    label = ((frame["colour"] == kinds[0]).to_numpy() ^ (np.nan_to_num(size, nan=9) > 0)
             ^ (rng.random(n) < 0.1)).astype(int)
    if framework == "lightgbm":
        fitted = lgb.LGBMClassifier(n_estimators=3, verbose=-1, min_child_samples=3).fit(
            frame, label)
        model = read_lightgbm(fitted)
        leaves = fitted.booster_.predict(frame, pred_leaf=True)
    else:
        fitted = xgb.XGBClassifier(n_estimators=3, max_depth=4, enable_categorical=True,
                                   tree_method="hist").fit(frame, label)
        try:
            model = read_xgboost(fitted)
        except UnsupportedModelError as exc:
            # the reader's recovery of the learning rate from tree 0 (independent of gaps
            # and categories: the same table with its categories coded is refused alike)
            assert "no whole class counts for any learning rate" in str(exc)
            reject()
        leaves = _xgboost_leaves(fitted.get_booster(), frame)
    assert _fits_every_count(model, frame)
    encoded = _encoded(model, frame)
    for t, tree in enumerate(model.trees):
        assert (tree.apply(encoded) == leaves[:, t]).all()
