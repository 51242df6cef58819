"""Every default XGBoost binary classifier reads (issue 50): the first tree's class counts
are the training rows' whatever the table, and an edited file is still refused, naming the
edit."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from treeleaks.cli import app
from treeleaks.frontends.xgboost import read_xgboost
from treeleaks.frontends.xgboost_rates import whole_by_rate
from treeleaks.runtime.errors import UnsupportedModelError

xgb = pytest.importorskip("xgboost")
EDITED = "contradict each other at tree 0: edited or truncated?"


def _table(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """30-1,000 rows of rounded numbers and small integers, a label of any share."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 1001))
    columns = [rng.normal(size=n).round(int(rng.integers(1, 4)))
               for _ in range(int(rng.integers(1, 5)))]
    columns += [rng.integers(0, int(rng.integers(2, 12)), n).astype(float)
                for _ in range(int(rng.integers(0, 4)))]
    X = np.column_stack(columns)
    score = X[:, 0] + rng.normal(scale=rng.uniform(0.2, 2.0), size=n)
    y = (score > np.quantile(score, 1.0 - rng.uniform(0.05, 0.95))).astype(int)
    if y.min() == y.max():
        y[0] = 1 - y[0]
    return X, y


def _fitted(seed: int, rate: float = 0.3, penalty: float = 1.0
            ) -> tuple[np.ndarray, np.ndarray, object]:
    """A classifier (three rounds: the reader reads the first two trees; XGBoost's default
    learning rate and L2 penalty unless given) on the seed's table."""
    X, y = _table(seed)
    return X, y, xgb.XGBClassifier(n_estimators=3, random_state=0, learning_rate=rate,
                                   reg_lambda=penalty).fit(X, y)


def _check_counts(seed: int, rate: float = 0.3, penalty: float = 1.0) -> None:
    """The first tree's counts are the training rows', routed by XGBoost itself; the rate
    and penalty are the ones it was trained with."""
    X, y, fitted = _fitted(seed, rate, penalty)
    model = read_xgboost(fitted)
    tree = model.trees[0]
    nodes = fitted.get_booster().predict(xgb.DMatrix(X), pred_leaf=True)[:, 0].astype(int)
    true = np.zeros((tree.n_leaves, 2), dtype=np.int64)
    np.add.at(true, (tree.leaf_of_node[nodes], y), 1)
    assert (tree.counts == true).all()
    assert model.facts["learning rate (recovered)"] == pytest.approx(rate, rel=1e-4)
    assert model.facts["L2 penalty (recovered)"] == pytest.approx(penalty, rel=1e-3)


# refused before: 19 leaf values that all but cancel (the penalty their sum gives off by
# float32), 471 a leaf whose rows' gradients cancel (value 1e-8), 23 a first tree of two
# leaves, 602 a first tree whose values fit seven rates (the second tree settles both)
@pytest.mark.parametrize("seed", [19, 471, 23, 602])
def test_files_refused_before_give_the_training_rows_counts(seed: int) -> None:
    _check_counts(seed)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000))
def test_every_default_binary_file_gives_the_training_rows_counts(seed: int) -> None:
    _check_counts(seed)


# a pivot leaf once needed |value| x cover of 0.05, which small rates and large penalties
# (|value| x cover = rate x gradient sum x cover / (cover + penalty)) left no leaf of
@pytest.mark.parametrize(("rate", "penalty"), [(0.05, 4.0), (0.001, 50.0), (1e-6, 1.0)])
@pytest.mark.parametrize("seed", [0, 1])
def test_small_rates_and_large_penalties_give_the_training_rows_counts(seed, rate, penalty
                                                                       ) -> None:
    _check_counts(seed, rate, penalty)


def test_a_learning_rate_of_0_is_refused_as_such() -> None:
    _, _, fitted = _fitted(0, rate=0.0)
    with pytest.raises(UnsupportedModelError, match=r"leaf values are all 0: .* learning "
                                                    r"rate of 0\?"):
        read_xgboost(fitted)


def _edited(seed: int, leaf_rank: int, factor: float) -> dict:
    """The seed's file with one first-tree leaf value scaled: the leaf of the
    ``leaf_rank``-th largest gradient sum (|value| x cover)."""
    _, _, fitted = _fitted(seed)
    data = json.loads(bytes(fitted.get_booster().save_raw(raw_format="json")))
    tree = data["learner"]["gradient_booster"]["model"]["trees"][0]
    leaves = [k for k, left in enumerate(tree["left_children"]) if left < 0]
    weight = [abs(tree["split_conditions"][k]) * tree["sum_hessian"][k] for k in leaves]
    node = leaves[int(np.argsort(weight)[::-1][leaf_rank])]
    tree["split_conditions"][node] *= factor
    return data


def test_an_edited_leaf_value_is_refused_in_one_line(tmp_path) -> None:
    data = _edited(0, 0, 1.05)
    with pytest.raises(UnsupportedModelError, match="no whole class counts for any"):
        read_xgboost(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["inspect", str(path)])
    assert result.exit_code == 2 and EDITED in " ".join(result.output.split())


def test_an_edit_a_three_leaf_first_tree_absorbs_is_refused_by_the_second_tree() -> None:
    """Seed 94's first tree has three leaves: with one value 5% up, a rate of 0.326 and a
    penalty of 1.07 fit its values with whole counts; the second tree's covers are no sums
    of the hessians its rows would start from."""
    data = _edited(94, 2, 1.05)
    tree = data["learner"]["gradient_booster"]["model"]["trees"][0]
    leaf = np.array(tree["left_children"]) < 0
    cover, value = np.array(tree["sum_hessian"])[leaf], np.array(tree["split_conditions"])[leaf]
    base = float(str(data["learner"]["learner_model_param"]["base_score"]).strip("[]"))
    alone = whole_by_rate(np.rint(cover / (base * (1 - base))), cover, value, base)
    assert leaf.sum() == 3 and [round(eta, 3) for eta, _, _ in alone] == [0.326]
    with pytest.raises(UnsupportedModelError, match=r"second XGBoost tree's leaf .* edited"):
        read_xgboost(data)
