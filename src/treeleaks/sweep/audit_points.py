"""Sweep points that run the whole release audit (`treeleaks.report`) as a custodian
would: N training rows and a disjoint population sampled from a dataset, one model of a
given kind fitted on the rows, audited with the rows (``--data``), the population and the
dataset's schema."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

FOREST_KINDS = ("forest", "bootstrap", "dp", "tree")  # see `fitted`
BOOSTER_KINDS = ("lightgbm", "xgboost", "gb", "hgb")  # each framework's defaults, 100 trees
KINDS = FOREST_KINDS + BOOSTER_KINDS


def fitted(kind: str, X: Any, y: Any, schema: Any, label: str, point: dict[str, Any]
           ) -> tuple[Any, Any]:
    """The estimator of ``kind`` fitted on (X, y) (None for the DP forest, which the audit
    reads as a model file only) and its released model: a no-bootstrap forest, a bootstrap
    forest (scikit-learn's default), an ε = 5 DP forest of 10 trees of depth 5, or a
    depth-10 decision tree."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    from treeleaks.defences.dp_forest import DPRandomForestClassifier
    from treeleaks.frontends.dp import from_dp_forest
    from treeleaks.frontends.sklearn import from_sklearn

    seed = point["seed"]
    if kind in BOOSTER_KINDS:
        return fitted_booster(kind, X, y, label, seed)
    if kind == "dp":
        forest = DPRandomForestClassifier(n_estimators=10, max_depth=5, epsilon=5.0,
                                          schema=schema, random_state=seed).fit(X, y)
        return None, from_dp_forest(forest, label_name=label)
    estimator = {
        "forest": RandomForestClassifier(n_estimators=point["forest_trees"], bootstrap=False,
                                         random_state=seed),
        "bootstrap": RandomForestClassifier(n_estimators=point["bootstrap_trees"],
                                            random_state=seed),
        "tree": DecisionTreeClassifier(max_depth=10, random_state=seed),
    }[kind].fit(X, y)
    return estimator, from_sklearn(estimator, label_name=label)


def fitted_booster(kind: str, X: Any, y: Any, label: str, seed: int) -> tuple[Any, Any]:
    """A booster with its framework's defaults and 100 trees, and the model its users
    release (LightGBM's and XGBoost's read from the booster, as from their files; the
    scikit-learn boosters are the estimators a .skops file holds)."""
    import numpy as np
    from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier

    from treeleaks.frontends.sklearn import from_sklearn

    names = [str(c) for c in X.columns]
    classes, y_index = np.unique(np.asarray(y), return_inverse=True)
    matrix = X.to_numpy(dtype=float)
    if kind == "lightgbm":
        import lightgbm as lgb

        from treeleaks.frontends.lightgbm import read_lightgbm

        booster = lgb.LGBMClassifier(n_estimators=100, random_state=seed, verbose=-1)
        model = read_lightgbm(booster.fit(matrix, y_index), names, label_name=label)
    elif kind == "xgboost":
        import xgboost as xgb

        from treeleaks.frontends.xgboost import read_xgboost

        booster = xgb.XGBClassifier(n_estimators=100, random_state=seed)
        model = read_xgboost(booster.fit(matrix, y_index), names, label_name=label)
    else:
        estimator = (GradientBoostingClassifier(random_state=seed) if kind == "gb" else
                     HistGradientBoostingClassifier(random_state=seed)).fit(X, y)
        return estimator, from_sklearn(estimator, label_name=label)
    model.classes = classes.tolist()  # the frameworks were given class indices
    return None, model


def run_audit_point(point: dict[str, Any], data_dir: Path | None) -> dict[str, Any]:
    """Fit one model, audit it as `treeleaks audit` does (the JSON report validated), and
    keep the verdict, the risk and each attack's status and time."""
    from treeleaks.ir.schema import FeatureSchema
    from treeleaks.report.collect import run_audit
    from treeleaks.report.evidence import AuditInput
    from treeleaks.report.json_report import to_json
    from treeleaks.sweep.datasets import load_dataset

    data = load_dataset(point["dataset"], data_dir)
    rows = data.sample(point["n"] + point["population"], point["seed"])
    train = rows.iloc[:point["n"]].reset_index(drop=True)
    population = rows.iloc[point["n"]:].reset_index(drop=True)
    schema = FeatureSchema.from_frame(train.drop(columns=[data.label]),
                                      data.one_hot_groups, data.at_most_one_groups)
    X, y = train.drop(columns=[data.label]), train[data.label]
    estimator, model = fitted(point["kind"], X, y, schema, data.label, point)
    start = time.perf_counter()
    audit = run_audit(AuditInput(model, f"{point['kind']}.skops", schema, estimator, train,
                                 data.label, population, math.inf,
                                 attack_budget=point["budget"]))  # seconds per attack
    to_json(audit)  # the report validates against its schema
    return {"audit_s": time.perf_counter() - start, "risk": audit.risk["level"],
            "rule": audit.risk["rule"], "partial": audit.partial,
            "attacks": {a.name: {"status": a.status, "time_s": a.time_s}
                        for a in audit.attacks},
            **{k: v for k, v in audit.verdict.items()
               if k not in ("n_rows_given_away", "class_balance_given_away")}}
