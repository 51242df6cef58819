"""R models read without R: the committed fixtures (tests/fixtures/r/make.R) read with rdata
and checked against what R itself printed about them (the JSON beside each)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeleaks.frontends.r_files import RValue, read_rds
from treeleaks.frontends.r_models import read_r_model, read_r_object
from treeleaks.frontends.rpart import read_rpart
from treeleaks.io import load_model
from treeleaks.ir.model import ModelFormatError
from treeleaks.runtime.errors import UnsupportedModelError

FIXTURES = Path(__file__).parent / "fixtures" / "r"


def _r(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


@pytest.mark.parametrize("name", ["rpart_class", "rpart_reg"])
def test_rpart_routes_every_training_row_to_its_leaf(name: str) -> None:
    read, r = read_r_model(FIXTURES / f"{name}.rds"), _r(name)
    model, tree = read.model, read.model.trees[0]
    leaves = model.apply(np.array(r["X"]))[:, 0]
    where = np.array(r["where"]) - 1  # R's frame rows, 1-based
    assert model.feature_names == r["columns"]
    assert np.array_equal(leaves, tree.leaf_of_node[where])
    assert np.array_equal(read.rows["where"], leaves)
    leaf_rows = [i for i, v in enumerate(r["var"]) if v == "<leaf>"]
    assert tree.n_samples.tolist() == [r["n"][i] for i in leaf_rows]
    if model.is_regression:
        assert np.allclose(tree.values[leaves], r["predict"])
        assert np.allclose(read.rows["y"], r["y"])
        assert np.allclose(tree.values, [r["yval"][i] for i in leaf_rows])
    else:
        assert tree.counts.tolist() == [r["counts"][i] for i in leaf_rows]
        predicted = np.array(model.classes)[tree.counts.argmax(axis=1)[leaves]]
        assert predicted.tolist() == r["predict"]
        assert np.array(model.classes)[read.rows["y"]].tolist() == r["y"]
        # the leaves and labels stored in training order give every leaf's counts back
        recount = np.zeros_like(tree.counts)
        np.add.at(recount, (read.rows["where"], read.rows["y"]), 1)
        assert np.array_equal(recount, tree.counts)


@pytest.mark.parametrize("name", ["rf_class", "rf_class_inbag", "rf_reg"])
def test_random_forest_trees_predict_as_in_r(name: str) -> None:
    read, r = read_r_model(FIXTURES / f"{name}.rds"), _r(name)
    model = read.model
    leaves = model.apply(np.array(r["X"]))
    per_tree = np.array([read.outputs[t][leaves[:, t]] for t in range(model.n_trees)]).T
    assert model.n_trees == r["ntree"][0] and model.bootstrap
    assert [2 * t.n_leaves - 1 for t in model.trees] == r["ndbigtree"]
    assert not model.counts_released  # randomForest keeps no counts
    assert np.array_equal(read.rows["oob.times"], r["oob_times"])
    if model.is_regression:
        assert np.allclose(per_tree, r["individual"])
        assert np.allclose(per_tree.mean(axis=1), r["predict"])
        assert np.allclose(read.rows["y"], r["y"])
        return
    classes = np.array(model.classes)
    assert model.classes == r["classes"]
    assert classes[per_tree].tolist() == r["individual"]
    assert classes[read.rows["y"]].tolist() == r["y"]
    votes = np.array([[np.nan if v is None else v for v in row] for row in r["votes"]])
    assert np.allclose(read.rows["votes"], votes, equal_nan=True)
    predicted = read.rows["predicted"]
    assert [None if np.isnan(p) else str(classes[int(p)]) for p in predicted] == r["predicted"]
    about = model.described()
    assert about.n_rows == len(r["y"]) and not about.n_rows_estimated
    assert dict(about.class_balance) == {c: r["y"].count(c) for c in r["classes"]}
    assert ("inbag" in read.rows) == ("inbag" in r) == about.draws_exposed
    if "inbag" in r:
        assert np.array_equal(read.rows["inbag"], r["inbag"])


def test_the_door_reads_rds_and_lists_the_per_row_fields() -> None:
    model = load_model(FIXTURES / "rpart_class.rds")
    fields = {f.name: f for f in model.described().fields}
    assert fields["where"].per_row and fields["y"].per_row
    assert not fields["frame$n"].per_row
    forest = load_model(FIXTURES / "rf_class_inbag.rds")
    names = [f.name for f in forest.described().fields if f.per_row]
    assert names == ["y"]
    assert "inbag" in [f.name for f in forest.described().fields]
    with pytest.raises(UnsupportedModelError, match="regressor"):
        load_model(FIXTURES / "rf_reg.rds")
    assert load_model(FIXTURES / "rf_reg.rds", allow_regression=True).is_regression


def test_xz_compressed_file_reads_as_the_gzip_one() -> None:
    plain = read_r_model(FIXTURES / "rpart_class.rds").model
    xz = read_r_model(FIXTURES / "rpart_class_xz.rds").model
    assert np.array_equal(plain.trees[0].counts, xz.trees[0].counts)


@pytest.mark.parametrize(("name", "words"), [("data_frame", "holds data.frame, not a tree"),
                                             ("lm", "holds lm, not a tree")])
def test_other_r_objects_are_refused_naming_their_class(name: str, words: str) -> None:
    with pytest.raises(UnsupportedModelError, match=words):
        load_model(FIXTURES / f"{name}.rds")


def test_an_rpart_splitting_a_factor_routes_every_row_as_r_does() -> None:
    """csplit's levels (1 left, 3 right) spelled out over one feature per level: routing
    the training rows, level names encoded by the input map, gives R's where and classes;
    the reconstruction fits every count, verified."""
    from treeleaks import reconstruct

    read, r = read_r_model(FIXTURES / "rpart_factor.rds"), _r("rpart_factor")
    model = read.model
    assert [c.name for c in model.inputs.columns] == r["columns"]
    frame = pd.DataFrame({"age_band": r["age_band"], "glu": r["glu"]})
    leaves = model.apply(model.inputs.encode(frame).to_numpy(float))[:, 0]
    assert np.array_equal(leaves, read.rows["where"])  # R's where, as IR leaves
    classes = np.array(model.classes)[model.trees[0].counts.argmax(axis=1)[leaves]]
    assert classes.tolist() == r["predict"]
    result = reconstruct(model, time_limit=30)
    assert result.verified and len(result.rows) == len(r["glu"])


def test_a_factor_split_naming_a_missing_csplit_row_is_refused() -> None:
    obj = read_rds(FIXTURES / "rpart_factor.rds")
    csplit = obj.get("csplit")
    cut = _replaced(obj, "csplit", dataclasses.replace(csplit, value=csplit.value[:1]))
    with pytest.raises(ModelFormatError, match=r"names row .* of 'csplit', which it does not"):
        read_rpart(cut)


def test_unsupported_compression_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "model.rds"
    path.write_bytes(b"\x28\xb5\x2f\xfd" + bytes(60))
    with pytest.raises(UnsupportedModelError, match="compressed with zstd"):
        load_model(path)
    path.write_bytes(b"not an R file at all")
    with pytest.raises(ModelFormatError, match="not an R serialization"):
        load_model(path)


def _without(obj: RValue, name: str) -> RValue:
    keep = [i for i, n in enumerate(obj.names) if n != name]
    names = dataclasses.replace(obj.attributes["names"],
                                value=[obj.names[i] for i in keep])
    return dataclasses.replace(obj, value=[obj.value[i] for i in keep],
                               attributes={**obj.attributes, "names": names})


def _replaced(obj: RValue, name: str, value: RValue) -> RValue:
    items = list(obj.value)
    items[obj.names.index(name)] = value
    return dataclasses.replace(obj, value=items)


def test_missing_and_short_fields_are_refused_naming_them(tmp_path: Path) -> None:
    obj = read_rds(FIXTURES / "rpart_class.rds")
    with pytest.raises(ModelFormatError, match="rpart field 'frame' is missing"):
        read_rpart(_without(obj, "frame"))
    frame = obj.get("frame")
    short = _replaced(frame, "n", dataclasses.replace(frame.get("n"),
                                                      value=frame.get("n").value[:3]))
    with pytest.raises(ModelFormatError, match="'frame\\$n' must be a numeric vector of 7"):
        read_rpart(_replaced(obj, "frame", short))


@given(cut=st.floats(-1e6, 1e6, allow_nan=False), direction=st.sampled_from([-1.0, 1.0]),
       xs=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=20))
def test_rpart_split_direction_matches_r(cut: float, direction: float, xs: list) -> None:
    """ncat -1 sends x < cut to node 2, +1 sends x >= cut there; the IR agrees exactly."""
    obj = read_rds(FIXTURES / "rpart_reg.rds")
    frame, splits = obj.get("frame"), obj.get("splits")
    first = splits.value.copy()
    first[0, 1], first[0, 3] = direction, cut
    model = read_rpart(_replaced(obj, "splits", dataclasses.replace(splits, value=first)))
    tree, var = model.trees[0], model.feature_names.index(frame.get("var").value[0])
    X = np.zeros((len(xs), model.n_features))
    X[:, var] = xs
    # the root's first step: which of R's children (frame row 1 is node 2) each row takes
    ids = list(frame.attributes["row.names"].value)
    node2 = ids.index(2)
    first_step = np.where(X[:, var] <= tree.threshold[0], tree.left[0], tree.right[0])
    goes_to_2 = np.array(xs) < cut if direction < 0 else np.array(xs) >= cut
    assert np.array_equal(first_step == node2, goes_to_2)


def test_rpart_reconstruction_fits_every_count_and_holds_the_training_rows() -> None:
    """The engine's exact route on rpart's one tree: 120 rows, every leaf's class counts
    reproduced and certified, leaf by leaf as R's own training rows fill them."""
    from treeleaks import reconstruct

    model, r = load_model(FIXTURES / "rpart_class.rds"), _r("rpart_class")
    result = reconstruct(model, time_limit=30)
    certificate = result.summary()["certificate"]
    assert result.verified and certificate["counts_wrong"] == 0
    rows = result.rows
    assert len(rows) == len(r["y"]) == 120
    X = rows[model.feature_names].to_numpy(dtype=float)
    assert model.leaf_counts_of(X, rows[model.label_name])[0].tolist() == \
        model.trees[0].counts.tolist()
    true_leaves = model.apply(np.array(r["X"]))[:, 0]
    rebuilt = np.zeros_like(model.trees[0].counts)
    np.add.at(rebuilt, (model.apply(X)[:, 0], model.class_index(rows[model.label_name])), 1)
    truth = np.zeros_like(rebuilt)
    np.add.at(truth, (true_leaves, model.class_index(r["y"])), 1)
    assert np.array_equal(rebuilt, truth)


def test_random_forest_guesses_single_out_training_rows() -> None:
    """Without counts, the guesses (deepest leaves first) are what an adversary has; checked
    against R's training rows, some single a row out."""
    import pandas as pd

    from treeleaks.attacks import singling_out as so

    model, r = load_model(FIXTURES / "rf_class.rds"), _r("rf_class")
    guesses = so.no_counts_guesses(model)
    assert guesses.predicates
    frame = pd.DataFrame(r["X"], columns=r["columns"]).assign(**{model.label_name: r["y"]})
    checked = so.check_against_data(guesses, model, frame, model.label_name)
    assert checked.singled_out and checked.n_rows == 120
    X, y = np.array(r["X"]), np.array(r["y"])
    for p in guesses.predicates:  # a row singled out: the only one of its label in a leaf
        if p.matches is not None and len(p.matches) == 1:
            in_leaf = model.trees[p.tree].apply_nodes(X) == p.node
            assert np.flatnonzero(in_leaf & (y == p.label)).tolist() == p.matches


def test_an_edited_rpart_frame_contradicts_itself() -> None:
    obj = read_rds(FIXTURES / "rpart_reg.rds")
    frame = obj.get("frame")
    yval = frame.get("yval").value.copy()
    yval[0] += 1.0  # the root's mean no longer its children's
    edited = _replaced(obj, "frame", _replaced(frame, "yval", dataclasses.replace(
        frame.get("yval"), value=yval)))
    assert read_rpart(edited).contradictions
    assert not read_rpart(obj).contradictions


def test_random_forest_fields_missing_or_misshapen_are_refused_naming_them() -> None:
    from treeleaks.frontends.r_forest import read_random_forest

    obj = read_rds(FIXTURES / "rf_class_inbag.rds")
    forest = obj.get("forest")
    with pytest.raises(ModelFormatError, match="randomForest field 'forest\\$treemap' is missing"):
        read_random_forest(_replaced(obj, "forest", _without(forest, "treemap")))
    inbag = obj.get("inbag")
    short = _replaced(obj, "inbag", dataclasses.replace(inbag, value=inbag.value[:10]))
    with pytest.raises(ModelFormatError, match="'inbag' must have shape \\(120, 5\\)"):
        from treeleaks.frontends import r_models

        r_models._forest(short)


def test_per_row_marks_survive_the_treeleaks_json(tmp_path: Path) -> None:
    model = load_model(FIXTURES / "rpart_class.rds")
    path = tmp_path / "model.json"
    model.to_json(path)
    back = load_model(path)
    assert [f.name for f in back.described().fields if f.per_row] == ["where", "y"]


def test_the_cli_refuses_an_r_object_it_does_not_read_in_one_line() -> None:
    from typer.testing import CliRunner

    from treeleaks.cli import app

    result = CliRunner().invoke(app, ["inspect", str(FIXTURES / "lm.rds")])
    assert result.exit_code == 2
    assert "lm.rds holds lm, not a tree model" in " ".join(result.output.split())
    assert "Traceback" not in result.output


@pytest.mark.parametrize("name", ["rf_class", "rf_class_inbag", "rf_reg"])
def test_a_random_forest_without_counts_is_refused_by_reconstruct_in_one_line(name) -> None:
    """randomForest keeps no row counts: the reconstruction says so (it once divided by
    zero looking for draws to infer)."""
    from typer.testing import CliRunner

    from treeleaks.cli import app

    from conftest import one_line_error

    result = CliRunner().invoke(app, ["reconstruct", str(FIXTURES / f"{name}.rds"),
                                      "--time-limit", "5"])
    line = one_line_error(result, 2)
    assert "hold no counts" in line and "single-out --no-counts" in line


@pytest.mark.parametrize("name", ["ranger_class", "ranger_prob", "ranger_reg"])
def test_ranger_trees_predict_as_in_r(name: str) -> None:
    read, r = read_r_model(FIXTURES / f"{name}.rds"), _r(name)
    model = read.model
    leaves = model.apply(np.array(r["X"]))
    assert model.n_trees == r["ntree"][0] and model.bootstrap
    assert not model.counts_released  # ranger keeps no counts
    assert model.described().n_rows == r["num_samples"][0]
    per_tree = [read.outputs[t][leaves[:, t]] for t in range(model.n_trees)]
    if model.is_regression:
        assert np.allclose(np.array(per_tree).T, r["individual"])
        assert np.allclose(np.mean(per_tree, axis=0), r["predict"])
        oob = np.array([np.nan if v is None else v for v in r["oob"]])
        assert np.allclose(read.rows["predictions"], oob, equal_nan=True)
        return
    assert model.classes == r["classes"]
    classes = np.array(model.classes)
    if r["treetype"] == ["Probability estimation"]:
        for t, fractions in enumerate(per_tree):
            assert np.allclose(fractions, r["individual"][t])
        assert np.allclose(np.mean(per_tree, axis=0), r["predict"])
        assert model.facts["rows a leaf held at least, by its class fractions"] > 1
        return
    # a classifier's trees give class values (1-based codes), R's individual predictions too
    assert (np.array(per_tree).T + 1).tolist() == r["individual"]
    oob = [None if np.isnan(p) else str(classes[int(p)]) for p in read.rows["predictions"]]
    assert oob == r["oob"]
    assert np.array_equal(read.rows["inbag"], r["inbag"])
    assert model.described().draws_exposed
    fields = {f.name for f in model.described().fields}
    assert {"forest", "predictions", "inbag.counts", "confusion.matrix"} <= fields


def test_ranger_fields_missing_or_misshapen_are_refused_naming_them() -> None:
    obj = read_rds(FIXTURES / "ranger_class.rds")
    forest = obj.get("forest")
    for name in ("child.nodeIDs", "split.values", "is.ordered"):
        cut = _without(forest, name)
        with pytest.raises(ModelFormatError, match=f"forest\\${name}"):
            read_r_object(_replaced(obj, "forest", cut))
    inbag = obj.get("inbag.counts")
    short = dataclasses.replace(inbag, value=inbag.value[:2])
    with pytest.raises(ModelFormatError, match=r"'inbag\.counts' must hold one vector per tree"):
        read_r_object(_replaced(obj, "inbag.counts", short))
    old = dataclasses.replace(forest, value=[*forest.value, forest.get("num.trees")],
                              attributes={**forest.attributes, "names": RValue(
                                  "STR", [*forest.names, "dependent.varID"])})
    with pytest.raises(UnsupportedModelError, match=r"ranger 0\.10 or older"):
        read_r_object(_replaced(obj, "forest", old))


def test_text_classes_that_read_as_numbers_match_a_csvs_numeric_labels() -> None:
    """R's factor levels "0", "1", "2" come back from a CSV as numbers; they are the same
    labels. Other text classes never match a number."""
    model = read_r_model(FIXTURES / "rf_class.rds").model
    model.classes = ["0", "1", "2"]
    assert model.class_index([2, 0, 1.0]).tolist() == [2, 0, 1]
    assert model.class_index(["1", "2"]).tolist() == [1, 2]
    model.classes = ["No", "Yes"]
    with pytest.raises(ValueError, match="label 0 is not one of the model's classes"):
        model.class_index([0])


def test_a_file_inflating_past_the_cap_is_refused_before_it_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from treeleaks.frontends import r_files

    monkeypatch.setattr(r_files, "MAX_RDS_BYTES", 1000)
    with pytest.raises(ModelFormatError, match=r"rf_class\.rds inflates to more than "):
        read_rds(FIXTURES / "rf_class.rds")
    cut = tmp_path / "cut.rds"
    content = (FIXTURES / "rf_class.rds").read_bytes()
    cut.write_bytes(content[:len(content) // 2])
    monkeypatch.undo()
    with pytest.raises(ModelFormatError, match=r"cut\.rds is not a readable gzip stream"):
        read_rds(cut)


def test_an_audit_of_draws_without_counts_says_the_worst_case_needs_counts() -> None:
    """randomForest with keep.inbag exposes draws but no counts: the worst case (which
    reads both) does not apply, rather than failing on the custodian's rows."""
    from treeleaks.report.collect import run_audit
    from treeleaks.report.evidence import AuditInput

    model = read_r_model(FIXTURES / "rf_class_inbag.rds").model
    r = _r("rf_class_inbag")
    data = pd.DataFrame(r["X"], columns=r["columns"]).assign(type=r["y"])
    audit = run_audit(AuditInput(model=model, path="rf.rds", data=data, label="type",
                                 total_budget=10))
    worst = next(run for run in audit.attacks if run.name == "worst-case")
    assert str(worst.status) == "does not apply"
    assert worst.why == ("the file stores no counts (its framework keeps none), and this "
                         "attack reads them")


def test_data_without_label_takes_the_label_the_r_formula_names(tmp_path: Path) -> None:
    """rpart(type ~ ., data) names its label: --data with a column 'type' needs no --label;
    data without that column still asks for it."""
    from typer.testing import CliRunner

    from treeleaks.cli import app

    r = _r("rpart_class")
    data = tmp_path / "train.csv"
    pd.DataFrame(r["X"], columns=r["columns"]).assign(type=r["y"]).to_csv(data, index=False)
    done = CliRunner().invoke(app, ["single-out", str(FIXTURES / "rpart_class.rds"), "--data",
                                    str(data)])
    assert done.exit_code == 0, done.output
    assert "0 of 120" in done.output  # the predicates checked against the 120 rows given
    bare = tmp_path / "bare.csv"
    pd.DataFrame(r["X"], columns=r["columns"]).to_csv(bare, index=False)
    asked = CliRunner().invoke(app, ["single-out", str(FIXTURES / "rpart_class.rds"), "--data",
                                     str(bare)])
    assert asked.exit_code == 2 and "--data needs --label" in asked.output


def test_a_forest_splitting_factors_routes_every_row_as_r_does() -> None:
    """randomForest splits a factor by a bitmask of its levels; read over one feature per
    level, the custodian's column of level names (and numbers for "0"/"1" levels) encoded
    by the input map, every tree gives R's own prediction."""
    read, r = read_r_model(FIXTURES / "rf_factor.rds"), _r("rf_factor")
    model = read.model
    assert model.inputs is not None
    assert [c.name for c in model.inputs.columns] == r["columns"]
    assert "race=black" in model.feature_names
    frame = pd.DataFrame({"age": r["age"], "lwt": r["lwt"], "race": r["race"],
                          "smoke": [int(s) for s in r["smoke"]]})  # a CSV's numbers
    leaves = model.apply(model.inputs.encode(frame).to_numpy(float))
    per_tree = np.array([read.outputs[t][leaves[:, t]] for t in range(model.n_trees)]).T
    assert np.array(model.classes)[per_tree].tolist() == r["individual"]


def test_a_factor_split_that_is_no_set_of_levels_is_refused() -> None:
    from treeleaks.frontends.r_factors import _left_levels

    assert _left_levels(0, 0, 5.0, 3) == frozenset({0, 2})
    for mask in (0.0, 8.0, 1.5):
        with pytest.raises(ModelFormatError, match="is no set of the column's 3 levels"):
            _left_levels(0, 0, mask, 3)


def test_a_ranger_forest_coding_its_factors_routes_every_row_as_r_does() -> None:
    """respect.unordered.factors = "order": the factors' codes are ranger's own, named by
    covariate.levels; the input map codes the level names so every tree gives R's class."""
    read, r = read_r_model(FIXTURES / "ranger_order.rds"), _r("ranger_order")
    model = read.model
    assert [c.name for c in model.inputs.columns] == r["columns"]
    frame = pd.DataFrame({"age": r["age"], "lwt": r["lwt"], "race": r["race"],
                          "smoke": [int(s) for s in r["smoke"]]})
    leaves = model.apply(model.inputs.encode(frame).to_numpy(float))
    per_tree = np.array([read.outputs[t][leaves[:, t]] for t in range(model.n_trees)]).T
    assert (per_tree + 1).tolist() == r["individual"]  # R's class values, from 1


def test_a_caret_train_object_is_read_as_its_final_model_with_the_rows_caret_keeps() -> None:
    """caret keeps the training rows (trainingData) beside its finalModel: both stored row
    by row; the forest predicts as caret's predict on the training rows."""
    read, r = read_r_model(FIXTURES / "caret_rf.rds"), _r("caret_rf")
    model = read.model
    about = model.described()
    assert about.estimator.startswith("caret train (randomForest (classification)")
    fields = {f.name: f for f in about.fields}
    assert fields["trainingData"].per_row and fields["y"].per_row
    assert f"{r['training_rows'][0]} rows" in fields["trainingData"].exposes
    leaves = model.apply(np.array(r["X"]))
    votes = np.array([read.outputs[t][leaves[:, t]] for t in range(model.n_trees)]).T
    winners = [np.bincount(v, minlength=len(model.classes)) for v in votes]
    decided = [w.max() > np.sort(w)[-2] for w in winners]  # ties are R's coin flips
    said = np.array(model.classes)[[w.argmax() for w in winners]]
    assert [s for s, d in zip(said, decided, strict=True) if d] == [
        p for p, d in zip(r["predict"], decided, strict=True) if d]


def test_an_r_file_under_another_extension_is_told_by_its_content(tmp_path: Path) -> None:
    """gzip opens both R's files and compressed joblib pickles: the inflated bytes tell."""
    import joblib
    from sklearn.tree import DecisionTreeClassifier

    from treeleaks.runtime.errors import UntrustedPickleError

    renamed = tmp_path / "model.bin"
    renamed.write_bytes((FIXTURES / "rpart_class.rds").read_bytes())
    assert load_model(renamed).described().framework == "R"
    pickled = tmp_path / "tree.bin"
    joblib.dump(DecisionTreeClassifier().fit(np.eye(4), [0, 1, 0, 1]), pickled, compress=3)
    with pytest.raises(UntrustedPickleError):
        load_model(pickled)
