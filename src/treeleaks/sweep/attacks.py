"""What one sweep point does: train a model on a sample of a dataset, attack it, score the
result against the sample. Each attack names its axes and their defaults.

- ``forest``: scikit-learn's ``RandomForestClassifier`` (any ``bootstrap``), reconstructed
  by ``treeleaks.reconstruct`` (draws read from the model unless ``ignore_draws``).
  ``worst_case`` adds the custodian's proven bound (`treeleaks.attacks.worst_case`).
- ``dp-forest``: treeleaks' ``DPRandomForestClassifier`` of budget ``epsilon``, attacked by
  the most-likely-dataset reconstruction (N known, or inferred with ``n_unknown``);
  ``leak_test`` adds the leak-vs-distribution test against the rows left out, ``informed``
  the informed adversary on that many target rows (`treeleaks.attacks.informed`).
- ``interpretable`` and ``single-out``: a single tree or rule list
  (`treeleaks.sweep.single_models`).
- ``audit``: the whole release audit of one model (`treeleaks.sweep.audit_points`).
- ``synthetic``: singling out from PrivBayes releases (`treeleaks.sweep.synthetic_points`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from treeleaks.runtime.vocabulary import Status
from treeleaks.sweep.audit_points import KINDS, run_audit_point
from treeleaks.sweep.single_models import run_interpretable, run_single_out
from treeleaks.sweep.synthetic_points import run_synthetic_point

SOLVED = (Status.OPTIMAL, Status.FEASIBLE)
DONE = Status.DONE  # the status of a point whose attack has no solver status
TEST_ROWS = 5000  # held-out rows the DP forest's test accuracy is read on (fewer if few are left)


@dataclass(frozen=True)
class Axis:
    """A parameter of a point: its default and the check its values must pass."""

    default: Any
    check: Callable[[Any], bool]
    expects: str


def _int_at_least(low: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _positive(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _depth(v: Any) -> bool:
    return v is None or _int_at_least(1)(v)


def _flag(v: Any) -> bool:
    return isinstance(v, bool)


COMMON = {
    "dataset": Axis(None, lambda v: isinstance(v, str) and bool(v), "a dataset name"),
    "n": Axis(100, _int_at_least(1), "an integer N >= 1"),
    "seed": Axis(0, _int_at_least(0), "an integer >= 0"),
    "time_limit": Axis(60.0, _positive, "seconds > 0"),
    "threads": Axis(1, _int_at_least(1), "an integer >= 1"),
}


@dataclass(frozen=True)
class Attack:
    """A kind of sweep point: its axes, the function that runs one point, and the measures
    the summary shows (means over seeds)."""

    axes: dict[str, Axis]
    run: Callable[[dict[str, Any], Path | None], dict[str, Any]]
    measures: tuple[str, ...]


def _schema(data: Any) -> Any:
    """The adversary's schema: domains and groups read off the whole dataset (public)."""
    from treeleaks.ir.schema import FeatureSchema

    return FeatureSchema.from_frame(data.features, data.one_hot_groups or None,
                                    data.at_most_one_groups or None)


def _score(train: pd.DataFrame, rows: pd.DataFrame, schema: Any, label: str,
           seed: int) -> dict[str, Any]:
    from treeleaks.evaluation.metrics import evaluate

    score = evaluate(train, rows, schema, label=label, n_baseline_draws=3, seed=seed)
    return {"error": score.error, "exact_share": score.exact_share,
            "worst_row_error": score.worst_row_error, "baseline_error": score.baseline_error,
            "label_agreement": score.label_agreement}


def _recovered(model: Any, train: pd.DataFrame, rows: pd.DataFrame, schema: Any,
               label: str, seed: int) -> dict[str, Any]:
    from treeleaks.evaluation.recovered import References, rows_recovered

    score = rows_recovered(model, train, rows, schema, label=label,
                           references=References(seed=seed))
    return {"recovered": score.rows_recovered, "recovered_share": score.recovered_share,
            "recovered_error": score.matched_error,
            "recovered_random_error": score.random_error,
            "recovered_truth_box_error": score.true_box_error}


def run_forest(point: dict[str, Any], data_dir: Path | None) -> dict[str, Any]:
    """Fit a random forest on N sampled rows, reconstruct them from the model, score."""
    from sklearn.ensemble import RandomForestClassifier

    from treeleaks.attacks.reconstruct import reconstruct
    from treeleaks.frontends.sklearn import from_sklearn
    from treeleaks.sweep.datasets import load_dataset

    data = load_dataset(point["dataset"], data_dir)
    train = data.sample(point["n"], point["seed"])
    X, y = train.drop(columns=[data.label]), train[data.label]
    schema = _schema(data)
    tick = time.perf_counter()
    forest = RandomForestClassifier(
        n_estimators=point["trees"], bootstrap=point["bootstrap"], max_depth=point["depth"],
        random_state=point["seed"], n_jobs=1).fit(X, y)
    out: dict[str, Any] = {"fit_s": time.perf_counter() - tick}
    model = from_sklearn(forest, label_name=data.label)
    rec = reconstruct(model, schema, time_limit=point["time_limit"], threads=point["threads"],
                      seed=point["seed"], solver=point["solver"],
                      ignore_draws=point["ignore_draws"])
    out.update(status=rec.status, verified=bool(rec.verified), n_rows=rec.n_rows,
               time_s=rec.time_s, n_cells=rec.n_cells, proven_share=rec.proven_rows / len(train),
               formulation=rec.formulation, timings=dict(rec.timings), message=rec.message)
    if rec.status in SOLVED and rec.n_rows == len(train):  # a partial result is not scored
        out.update(_score(train, rec.rows, schema, data.label, point["seed"]))
    if rec.n_rows:  # rows recovered: every result, scored as a multiset
        out.update(_recovered(model, train, rec.rows, schema, data.label, point["seed"]))
    if point["worst_case"]:
        out.update(_worst_case(model, train, schema, point["time_limit"]))
    return out


def _worst_case(model: Any, train: pd.DataFrame, schema: Any,
                time_limit: float) -> dict[str, Any]:
    """The custodian's proven bound on any dataset that reproduces the model."""
    from treeleaks.attacks.worst_case import worst_case

    tick = time.perf_counter()
    worst = worst_case(model, schema, truth=train, time_limit=time_limit)
    return {"worst_time_s": time.perf_counter() - tick, "worst_status": worst.status,
            "worst_recovery": worst.guaranteed_recovery, "worst_mean_found": worst.mean_found,
            "worst_mean_bound": worst.mean_bound,
            "worst_rows_settled": int(worst.row_settled.sum())}


def run_dp_forest(point: dict[str, Any], data_dir: Path | None) -> dict[str, Any]:
    """Fit an ε-DP forest on N sampled rows, reconstruct the most likely dataset, score."""
    from treeleaks.attacks.reconstruct import reconstruct
    from treeleaks.defences.dp_forest import DPRandomForestClassifier
    from treeleaks.frontends.dp import from_dp_forest
    from treeleaks.sweep.datasets import load_dataset

    data = load_dataset(point["dataset"], data_dir)
    order = np.random.default_rng(point["seed"]).permutation(len(data.frame))
    train = data.frame.iloc[np.sort(order[: point["n"]])].reset_index(drop=True)
    test = data.frame.iloc[order[point["n"]:][:TEST_ROWS]]
    X, y = train.drop(columns=[data.label]), train[data.label]
    schema = _schema(data)
    forest = DPRandomForestClassifier(
        n_estimators=point["trees"], max_depth=point["depth"], epsilon=point["epsilon"],
        schema=schema, random_state=point["seed"]).fit(X, y)
    out: dict[str, Any] = {"train_accuracy": float((forest.predict(X) == y.to_numpy()).mean())}
    if len(test):
        out["test_accuracy"] = float(
            (forest.predict(test.drop(columns=[data.label])) == test[data.label]).mean())
    model = from_dp_forest(forest, label_name=data.label)
    rec = reconstruct(model, schema, time_limit=point["time_limit"], threads=point["threads"],
                      seed=point["seed"], n_unknown=point["n_unknown"])
    dp = rec.dp
    out.update(status=rec.status, verified=dp is not None and dp.likelihood_checked,
               n_rows=rec.n_rows, time_s=rec.time_s, n_cells=rec.n_cells,
               first_solution_s=None if dp is None else dp.first_solution_s,
               log_likelihood=None if dp is None else dp.log_likelihood, message=rec.message)
    if rec.n_rows:
        out.update(_score(train, rec.rows, schema, data.label, point["seed"]))
    if point["leak_test"] and rec.n_rows:
        from treeleaks.evaluation.leak_or_distribution import leak_test

        rest = data.frame.iloc[order[point["n"]:]].reset_index(drop=True)
        result = leak_test(rec.rows, truth=train, population=rest,
                           schema=schema, label=data.label, seed=point["seed"])
        out.update(leak_test=result.summary(), leak_p_value=result.p_value)
    if point["informed"]:
        from treeleaks.attacks.informed import informed_adversary

        informed = informed_adversary(model, schema, train=train, label=data.label,
                                      n_targets=point["informed"],
                                      time_limit=point["time_limit"] / 4)
        out.update({f"informed_{k}": v for k, v in informed.summary().items()})
    return out


def _share(v: Any) -> bool:
    return _positive(v) and v <= 1


def _fraction(v: Any) -> bool:
    return _positive(v) and v < 1


ATTACKS = {
    "forest": Attack({
        **COMMON,
        "trees": Axis(100, _int_at_least(1), "an integer >= 1"),
        "depth": Axis(None, _depth, '"none" or an integer >= 1'),
        "bootstrap": Axis(False, _flag, "true or false"),
        "ignore_draws": Axis(False, _flag, "true or false"),
        "worst_case": Axis(False, _flag, "true or false"),
        "solver": Axis("highs", lambda v: v in ("highs", "cp-sat"), '"highs" or "cp-sat"'),
    }, run_forest, ("time_s", "recovered_share", "error", "proven_share")),
    "dp-forest": Attack({
        **COMMON,
        "trees": Axis(10, _int_at_least(1), "an integer >= 1"),
        "depth": Axis(5, _int_at_least(1), "an integer >= 1"),
        "epsilon": Axis(1.0, _positive, "a privacy budget > 0"),
        "n_unknown": Axis(False, _flag, "true or false"),
        "leak_test": Axis(False, _flag, "true or false"),
        "informed": Axis(0, _int_at_least(0), "a number of target rows >= 0"),
    }, run_dp_forest, ("time_s", "first_solution_s", "error", "baseline_error")),
    "interpretable": Attack({
        "dataset": COMMON["dataset"], "seed": COMMON["seed"],
        "learner": Axis("cart", lambda v: v in ("cart", "dl85", "greedy-rl"),
                        '"cart", "dl85" (pydl8.5) or "greedy-rl"'),
        "depth": Axis(3, _int_at_least(1), "an integer >= 1 (rules, for a rule list)"),
        "min_support": Axis(0.01, _fraction, "a share of the rows in (0, 1)"),
        "train_share": Axis(1.0, _share, "a share of the dataset in (0, 1]"),
    }, run_interpretable, ("dist_g", "dist", "accuracy", "size")),
    "single-out": Attack({
        "dataset": COMMON["dataset"], "seed": COMMON["seed"],
        "search": Axis(5, _int_at_least(1), "a number of candidates >= 1"),
        "min_rows": Axis(1000, _int_at_least(2), "an integer >= 2"),
        "max_rows": Axis(10000, _int_at_least(2), "an integer >= 2"),
    }, run_single_out, ("vulnerable", "expected_tries", "test_before", "test_after",
                        "vulnerable_after")),
    "audit": Attack({
        "dataset": COMMON["dataset"], "seed": COMMON["seed"], "n": COMMON["n"],
        "population": Axis(500, _int_at_least(1), "a number of rows >= 1"),
        "kind": Axis("forest", lambda v: v in KINDS, " or ".join(f'"{k}"' for k in KINDS)),
        "budget": Axis(60.0, _positive, "seconds per attack > 0"),
        "forest_trees": Axis(100, _int_at_least(1), "an integer >= 1"),
        "bootstrap_trees": Axis(10, _int_at_least(1), "an integer >= 1"),
    }, run_audit_point, ("audit_s", "rows_proven", "rows_singled_out", "dist_g", "error")),
    "synthetic": Attack({
        "dataset": COMMON["dataset"], "seed": COMMON["seed"], "n": COMMON["n"],
        "epsilon": Axis(1.0, _positive, "a privacy budget > 0"),
        "white_box": Axis(False, _flag, "true or false"),
        "targets": Axis(10, _int_at_least(1), "a number of targets >= 1"),
        "shadows": Axis(100, _int_at_least(1), "a number of shadow pairs >= 1"),
        "attacks": Axis(200, _int_at_least(1), "a number of releases >= 1"),
        "time_limit": Axis(900.0, _positive, "seconds for the whole point > 0"),
    }, run_synthetic_point, ("success_rate", "ci_low", "ci_high", "baseline",
                             "js_distance_mean", "time_s")),
}
