"""XGBoost frontend: a binary classifier's JSON model file, read without XGBoost.

``booster.save_model("m.json")`` keeps, per node, the hessian sum of its rows
(``sum_hessian``, XGBoost's *cover*) and, per leaf, its value. In the first tree every row
has the same prediction, the stored ``base_score`` b, so a leaf's cover is n·b(1-b): its
row count n. Its value is w = -η·G/(H + λ) with G = Σ(b - y) = n·b - P, so the positives
are P = n·b + w(H + λ)/η. The file keeps neither the learning rate η nor the L2 penalty λ:
`treeleaks.frontends.xgboost_rates` finds the (η, λ) that make every leaf's count whole,
the counts adding up to the whole number nearest N·b (XGBoost's default base score is the
class share), with the second tree's leaves when its covers pin them. Without one, or with
several that disagree, the model is refused rather than rounded. Later trees' covers are sums of
p(1-p) over rows whose p depends on the earlier trees, not counts: those trees enter the
IR without counts, with their hessian sums and the gradient sums their values give
(`LeafGradients`). XGBoost sends ``x < t`` left; the IR sends ``x <= t`` left, so each
threshold becomes the float32 just below it (XGBoost compares in float32). Gaps
(``default_left``) and categorical splits are routed as `treeleaks.frontends.xgboost_routing`
reads, spelled out over 0/1 features (`treeleaks.frontends.gaps`), the model's ``inputs``
saying how the table's columns become them. Reading the file runs no code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from treeleaks.frontends.boosting import (
    check_node_sums,
    check_thresholds,
    no_sums,
    sum_rows,
    whole_positives,
    wrapped_booster,
)
from treeleaks.frontends.gaps import with_routing
from treeleaks.frontends.multiclass import (
    check_round,
    multiclass_facts,
    multiclass_trees,
    softmax,
)
from treeleaks.frontends.numbers import checked, checked_one
from treeleaks.frontends.stored import xgboost_fields
from treeleaks.frontends.stripped import (
    Stripped,
    counts_removed,
    structure_only,
    zeroed_trees,
)
from treeleaks.frontends.xgboost_rates import (
    WHOLE_TOLERANCE,
    first_tree_positives,
    whole_by_rate,
)
from treeleaks.frontends.xgboost_regression import regression_model
from treeleaks.frontends.xgboost_routing import XGBoostRouting, xgboost_routing
from treeleaks.ir.description import ModelKind, describe
from treeleaks.ir.model import LeafGradients, ModelFormatError, ReleasedModel, Tree
from treeleaks.runtime.errors import UnsupportedModelError

FILE, PARAMS = "XGBoost model file", "learner.learner_model_param"
MULTICLASS = ("multi:softprob", "multi:softmax")
RATE_DIGITS = 4  # a learning rate recovered from float32 values, matched across classes
FLOAT32_MAX = float(np.finfo(np.float32).max)
COUNT_TOLERANCE = 1e-3  # of a row, for n = cover / (b(1-b))
COVER_RTOL = 1e-5  # a node's cover against its children's, each kept in float32
REGRESSION = "reg:squarederror"
FLOAT32 = 1e-5  # precision of a later tree's sums: per row, and relative to the stored value


def is_xgboost_json(data: Any) -> bool:
    """Whether parsed JSON is an XGBoost model file (its top level holds ``learner``)."""
    return isinstance(data, dict) and "learner" in data and "format" not in data


def read_xgboost(source: str | Path | dict[str, Any] | Any,
                 feature_names: list[str] | None = None,
                 label_name: str = "label", counts_removed_ok: bool = False) -> ReleasedModel:
    """The `ReleasedModel` of an XGBoost binary classifier: its JSON file's path, the
    parsed JSON, a ``Booster`` or a fitted ``XGBClassifier`` (see the module doc). A file
    whose covers were zeroed (``treeleaks strip``) raises `CountsRemovedError`, or with
    ``counts_removed_ok`` comes back as its structure alone."""
    source, classes = wrapped_booster(source, "get_booster")
    sampled = _subsample(source)
    learner = _field(_model_json(source), "learner", "")
    objective = _objective(learner)
    multiclass = objective in MULTICLASS
    params = _field(learner, "learner_model_param", "learner")
    if multiclass and classes == [0, 1]:  # a file: its classes by index
        classes = _class_indices(params)
    base = _base_score(params, objective, multiclass)
    booster = _field(learner, "gradient_booster", "learner")
    trees, n_features = _trees(booster, params)
    names = _feature_names(feature_names, learner, n_features)
    routing = xgboost_routing(learner, trees, list(names))
    features = list(routing.layout.names) if routing else list(names)
    parsed = [_tree(tree, t, n_features, routing) for t, tree in enumerate(trees)]
    if _covers_removed([cover for _, cover, _ in parsed]):
        if not counts_removed_ok:
            raise counts_removed("XGBoost model", "its covers, sum_hessian, are 0")
        return with_routing(_structure(parsed, objective, multiclass, classes, features,
                                       label_name, base), routing)
    if objective == REGRESSION:
        return with_routing(regression_model(trees, parsed, base, features, label_name, objective),
                       routing)
    if multiclass:
        return with_routing(_multiclass(parsed, params, booster["model"].get("tree_info", []),
                                   classes, features, label_name, objective), routing)
    used = ", ".join(option for option in (_scale_pos_weight(learner), sampled) if option)
    return with_routing(_binary(parsed, base, used, classes, features, label_name, objective),
                        routing)


def _class_indices(params: dict[str, Any]) -> list[int]:
    """A softmax file's classes, by index: 0 to ``num_class`` - 1."""
    return list(range(int(checked_one(_field(params, "num_class", PARAMS), FILE,
                                      f"{PARAMS}.num_class", whole=True, low=2))))


def _feature_names(given: list[str] | None, learner: dict[str, Any],
                   n_features: int) -> list[str]:
    """The names given, else the file's, else f0, f1, …"""
    return list(given or learner.get("feature_names") or [f"f{j}" for j in range(n_features)])


def _objective(learner: dict[str, Any]) -> str:
    """The file's objective, refused unless treeleaks reads it."""
    objective = _field(_field(learner, "objective", "learner"), "name", "learner.objective")
    if objective not in ("binary:logistic", REGRESSION) and objective not in MULTICLASS:
        raise UnsupportedModelError(f"XGBoost objective {objective!r}: treeleaks reads binary "
                                    "classifiers (objective 'binary:logistic'), softmax "
                                    "multiclass ones ('multi:softprob', 'multi:softmax') and "
                                    f"squared-error regressors ({REGRESSION!r}) so far")
    return objective


def _base_score(params: dict[str, Any], objective: str, multiclass: bool) -> float:
    """The stored base score (a binary classifier's: a probability); 0.5 for a softmax
    booster, whose class scores `_class_scores` reads."""
    base = 0.5 if multiclass else checked_one(_field(params, "base_score", PARAMS), FILE,
                                              f"{PARAMS}.base_score")
    if objective == "binary:logistic" and not 0.0 < base < 1.0:
        raise ModelFormatError(f"{FILE}: field '{PARAMS}.base_score' holds {base:g}, not a "
                               "probability strictly between 0 and 1: an edited file?")
    return base


def _trees(booster: dict[str, Any], params: dict[str, Any]) -> tuple[list[Any], int]:
    """The booster's trees (one per round, at least one) and the number of features."""
    _check_booster(booster)
    trees = _field(_field(booster, "model", "learner.gradient_booster"), "trees",
                   "learner.gradient_booster.model")
    if not trees:
        raise ModelFormatError("XGBoost model file: it holds no tree")
    n_features = int(checked_one(_field(params, "num_feature", PARAMS), FILE,
                                 f"{PARAMS}.num_feature", whole=True, low=1))
    model_param = booster["model"].get("gbtree_model_param", {})
    if checked_one(model_param.get("num_parallel_tree", 1), FILE, "num_parallel_tree",
                   whole=True, low=1) != 1:
        raise UnsupportedModelError("this XGBoost model grows several trees per round "
                                    "(num_parallel_tree > 1); treeleaks reads one per round")
    return trees, n_features


def _structure(parsed: list[tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]],
               objective: str, multiclass: bool, classes: list[Any], features: list[str],
               label_name: str, base: float) -> ReleasedModel:
    """A stripped file's model: its trees' structure alone (``counts_removed_ok``)."""
    regressor = objective == REGRESSION
    about = Stripped("XGBoost", f"objective {objective}",
                     xgboost_fields(regressor, multiclass), ModelKind.GRADIENT_BOOSTED)
    return structure_only(
        [p[0] for p in parsed], [] if regressor else classes, features, label_name,
        "XGBoost", about, np.full(parsed[0][2].size, base) if regressor else None)


def _binary(parsed: list[tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]],
            base: float, used: str, classes: list[Any], features: list[str],
            label_name: str, objective: str) -> ReleasedModel:
    """A binary classifier: the first tree's row and class counts (its covers over
    b(1-b), its values at the recovered rate and penalty), the later trees without counts,
    with their gradient sums. ``used`` names the training options the file shows that
    weigh rows."""
    nodes, cover, value = parsed[0]
    rows = _first_rows(cover, base * (1.0 - base), f"b(1-b) for its base score b = {base:g}")
    positives, eta, l2 = first_tree_positives(
        rows, cover, value, base, used,
        parsed[1][1:] if len(parsed) > 1 else None)
    counts = np.column_stack([rows - positives, positives]).astype(np.int64)
    n_rows = int(rows.sum())
    out = [Tree(*nodes, counts, n_samples=rows.astype(np.int64))] + [
        Tree(*shape, np.zeros((leaf_value.size, 2), dtype=np.int64), counted=False)
        for shape, _, leaf_value in parsed[1:]]
    gradients = LeafGradients(float(np.log(base / (1.0 - base))), [p[2] for p in parsed],
                              [no_sums()] + [_sums(h, w, eta, l2, n_rows)
                                             for _, h, w in parsed[1:]])
    model = ReleasedModel(out, classes, features, label_name=label_name,
                          source="XGBoost", gradients=gradients,
                          facts={"objective": objective, "trees in file": len(parsed),
                                 **_rates(eta, l2)})
    model.validate()
    model.description = describe(model, "XGBoost", f"objective {objective}",
                                 xgboost_fields(False))
    return model


def _model_json(source: str | Path | dict[str, Any] | Any) -> Any:
    """The parsed JSON of a ``Booster``, of a file's path, or the JSON itself."""
    if hasattr(source, "save_raw"):
        return json.loads(bytes(source.save_raw(raw_format="json")))
    if isinstance(source, dict):
        return source
    try:
        return json.loads(Path(source).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ModelFormatError(f"XGBoost model file: not JSON ({exc})") from None


def _check_booster(booster: dict[str, Any]) -> None:
    """Refuse a booster other than gbtree (DART, a linear booster)."""
    if booster.get("name") != "gbtree":
        why = (" (DART drops earlier trees and rescales them, so the later trees' sums do not "
               "follow from the leaf values as saved)" if booster.get("name") == "dart" else "")
        raise UnsupportedModelError(f"XGBoost booster {booster.get('name')!r}{why}: treeleaks "
                                    "reads tree boosters (gbtree, the default)")


def _first_rows(cover: np.ndarray, per_row: float, what: str, tree: int = 0) -> np.ndarray:
    """A first-round tree's row counts: its covers over every row's hessian ``per_row``,
    refused unless whole."""
    count = cover / per_row
    rows = np.rint(count)
    off = (np.abs(count - rows) > COUNT_TOLERANCE) | (rows < 1)
    if off.any():
        raise UnsupportedModelError(
            f"the first-round XGBoost tree {tree}'s covers are not whole row counts times "
            f"{what}: the file's values contradict each other at tree {tree} leaf "
            f"{int(np.argmax(off))}: edited or truncated? (or trained with sample weights, "
            "which the file does not record; treeleaks refuses to guess its counts)")
    return rows


def _multiclass(parsed: list[tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]],
                params: dict[str, Any], tree_info: list[Any], classes: list[Any],
                names: list[str], label_name: str, objective: str) -> ReleasedModel:
    """A softmax booster of K classes (`treeleaks.frontends.multiclass`): every row starts
    at the probabilities p = softmax(base_score) (one score per class; a single number
    starts every class alike), so tree k of round one has covers n·2p_k(1-p_k) (XGBoost's
    softmax hessian is doubled) and class-k counts P = n·p_k + w(H + λ)/η, η and λ
    recovered as for two classes and the same for every class. Later trees enter without
    counts, with their softmax gradient sums (from the class scores ``base_score``)."""
    n_classes = len(classes)
    if [int(k) for k in tree_info] != [t % n_classes for t in range(len(parsed))]:
        raise ModelFormatError(f"{FILE}: 'tree_info' does not give rounds of {n_classes} "
                               "trees, one per class in order: an edited file?")
    scores = _class_scores(params, n_classes)
    first, derived, eta, l2 = _first_round(parsed[:n_classes], softmax(scores))
    n_rows = int(first[0].sum())
    check_round(derived, n_rows, "XGBoost")
    trees = multiclass_trees([p[0] for p in parsed],
                             [*first, *([None] * (len(parsed) - n_classes))], derived)
    gradients = LeafGradients(scores, [p[2] for p in parsed], [no_sums()] * n_classes + [
        _sums(cover, value, eta, l2, n_rows, 2.0) for _, cover, value in parsed[n_classes:]])
    model = ReleasedModel(trees, classes, names, label_name=label_name, source="XGBoost",
                          gradients=gradients,
                          facts=multiclass_facts(n_classes, len(parsed), objective=objective,
                                                 **_rates(eta, l2)))
    model.validate()
    model.description = describe(model, "XGBoost", f"objective {objective}",
                                 xgboost_fields(False, multiclass=True))
    return model


def _first_round(parsed: list[tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]],
                 start: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray], float, float]:
    """The first round's rows and class counts per tree, with the learning rate and L2
    penalty they share. A tree whose values pin no rate on their own (a single leaf, whose
    value is all but 0; or values that all but cancel, so Σw leaves the penalty to float32
    noise) is read at the rate and penalty the other trees give."""
    first, options = _first_round_rows(parsed, start)
    counts, penalties, eta = _one_rate([o for o in options if o])
    l2 = _one_penalty(penalties)
    found = iter(counts)
    derived = []
    for k, (option, rows, (_, cover, value)) in enumerate(zip(options, first, parsed,
                                                              strict=True)):
        whole = next(found) if option else whole_positives(
            rows * start[k] + value * (cover + l2) / eta, rows, WHOLE_TOLERANCE)
        if whole is None:
            raise UnsupportedModelError(
                f"the first-round XGBoost tree {k}'s leaf values give no whole counts of "
                f"class {k} at the learning rate {eta:g} and L2 penalty {l2:.6g} the other "
                "trees give: trained with sample weights or a base_score of its own (which "
                "the file does not record), or an edited file; treeleaks refuses to guess "
                "its classes")
        derived.append(whole)
    return first, derived, eta, l2


def _first_round_rows(parsed: list[tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]],
                      start: np.ndarray
                      ) -> tuple[list[np.ndarray], list[dict[float, tuple[np.ndarray, float]]]]:
    """Per first-round tree, its row counts (the same total in every tree) and, per
    learning rate under which its values give whole class counts, those counts and the L2
    penalty (none for a single leaf)."""
    options: list[dict[float, tuple[np.ndarray, float]]] = []
    first: list[np.ndarray] = []
    for k, (_, cover, value) in enumerate(parsed):
        per_row = 2.0 * start[k] * (1.0 - start[k])
        rows = _first_rows(cover, per_row, f"2p(1-p) for class {k}'s start p = "
                           f"{start[k]:.6g}", k)
        if first and rows.sum() != first[0].sum():
            raise ModelFormatError(f"{FILE}: the first-round trees' covers give {int(rows.sum())} "
                                   f"rows to tree {k}, {int(first[0].sum())} to tree 0: an "
                                   "edited file?")
        first.append(rows)
        by_rate = whole_by_rate(rows, cover, value, float(start[k])) if rows.size > 1 else []
        options.append({round(eta, RATE_DIGITS): (whole, l2) for eta, whole, l2 in by_rate})
    return first, options


def _one_penalty(penalties: list[float]) -> float:
    """The L2 penalty every class's first tree gives, refused when they differ."""
    l2 = penalties[0]
    if max(abs(p - l2) for p in penalties) > 1e-3 * max(1.0, abs(l2)):
        raise UnsupportedModelError(
            "the first-round XGBoost trees give L2 penalties that differ between classes "
            f"({', '.join(f'{p:.6g}' for p in penalties)}): trained with sample weights or "
            "an initial margin, which the file does not record; treeleaks refuses to guess")
    return l2


def _rates(eta: float, l2: float) -> dict[str, float]:
    """The facts of the options recovered from the first round's values."""
    return {"learning rate (recovered)": float(f"{eta:.6g}"),
            "L2 penalty (recovered)": float(f"{l2:.6g}")}


def _one_rate(options: list[dict[float, tuple[np.ndarray, float]]]
              ) -> tuple[list[np.ndarray], list[float], float]:
    """The first round's class counts and L2 penalties for the one learning rate under
    which every class's tree gives whole counts (a tree of pure leaves alone fits many), or
    a refusal (also when no tree pins a rate on its own)."""
    if not options:
        raise UnsupportedModelError(
            "no first-round XGBoost tree's leaf values pin a learning rate on their own "
            "(single leaves, or values that cancel), so its classes' counts cannot be read; "
            "treeleaks refuses to guess")
    shared = sorted(set.intersection(*(set(o) for o in options)))
    answers = {b"".join(o[eta][0].tobytes() for o in options): eta for eta in shared}
    if len(answers) != 1:
        why = ("no learning rate gives every class's tree whole counts" if not answers else
               f"several learning rates ({', '.join(f'{e:g}' for e in answers.values())}) "
               "give every class's tree whole counts that disagree")
        raise UnsupportedModelError(
            f"the first-round XGBoost trees' leaf values: {why}: trained with a base_score "
            "of its own, sample weights, alpha or max_delta_step (which the file does not "
            "record), or an edited file; treeleaks refuses to guess its classes")
    eta = next(iter(answers.values()))
    return [o[eta][0] for o in options], [o[eta][1] for o in options], eta


def _class_scores(params: dict[str, Any], n_classes: int) -> np.ndarray:
    """Every class's start score: ``base_score`` as one number per class (XGBoost 3
    writes ``[s0,s1,...]``), or one number for all."""
    raw = str(_field(params, "base_score", PARAMS)).strip().strip("[]")
    scores = checked(raw.split(","), FILE, f"{PARAMS}.base_score")
    if scores.size == 1:
        return np.zeros(n_classes)
    if scores.size != n_classes:
        raise ModelFormatError(f"{FILE}: field '{PARAMS}.base_score' holds {scores.size} "
                               f"scores for {n_classes} classes: an edited file?")
    return scores


def _sums(cover: np.ndarray, value: np.ndarray, eta: float, l2: float, n_rows: int,
          scale: float = 1.0) -> np.ndarray:
    """A later tree's hessian sums (its covers, ``scale`` times the rows' p(1-p): 2 for
    softmax) and gradient sums G = -w(H + λ)/η per leaf, trusted to XGBoost's float32 per
    row and in the stored value."""
    gradient = -value * (cover + l2) / eta
    return np.vstack([sum_rows(1.0, 0.0, gradient, FLOAT32 * (n_rows + np.abs(gradient))),
                      sum_rows(0.0, scale, cover, FLOAT32 * (n_rows + cover))])


def _scale_pos_weight(learner: dict[str, Any]) -> str:
    """``scale_pos_weight=w`` when the file records a weight other than 1, else ""."""
    raw = learner.get("objective", {}).get("reg_loss_param", {}).get("scale_pos_weight", "1")
    try:
        return "" if float(raw) == 1.0 else f"scale_pos_weight={raw}"
    except (TypeError, ValueError):
        return f"scale_pos_weight={raw!r}"


def _covers_removed(covers: list[np.ndarray]) -> bool:
    """Whether every tree's covers are 0 (``treeleaks strip`` zeroes them all); a tree
    without nodes, or some trees zeroed and others not, is a damaged or edited file,
    refused naming the tree."""
    return all(zeroed_trees(covers, "covers (sum_hessian)", f"{FILE}: "))


def _subsample(source: Any) -> str:
    """``subsample=r`` when a fitted ``Booster``'s configuration (which its model file does
    not keep) records a row sample below 1, else ""."""
    if not hasattr(source, "save_config"):
        return ""
    try:
        config = json.loads(source.save_config())
        raw = config["learner"]["gradient_booster"]["tree_train_param"]["subsample"]
        return "" if float(raw) >= 1.0 else f"subsample={float(raw):.6g}"
    except (KeyError, TypeError, ValueError):
        return ""


def _tree(tree: dict[str, Any], index: int, n_features: int,
          routing: XGBoostRouting | None = None
          ) -> tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]:
    """A tree's IR nodes, and its leaves' covers and values, every number checked
    (`treeleaks.frontends.numbers`); with ``routing``, its gap and category splits spelled
    out and the leaves no row can reach dropped."""
    where = f"learner.gradient_booster.model.trees[{index}]"
    at = f"{FILE}: {where}"

    def numbers(key: str, default: Any = None, **bounds: Any) -> np.ndarray:
        raw = _field(tree, key, where) if default is None else tree.get(key, default)
        return checked(raw, at, key, **bounds)

    left = numbers("left_children", whole=True, low=-1)
    n = left.size
    right = numbers("right_children", whole=True, low=-1)
    feature = numbers("split_indices", whole=True, low=0)
    condition = numbers("split_conditions")
    hessian = numbers("sum_hessian", low=0.0)
    kinds = numbers("split_type", [0] * n, whole=True, low=0)
    if not all(len(a) == n for a in (right, feature, condition, hessian, kinds)):
        raise ModelFormatError(f"XGBoost model file: {where}: its node fields differ in length "
                               "(a truncated or edited file?)")
    if (np.maximum(left, right) >= n).any():
        raise ModelFormatError(f"{at}: a child index is past the tree's {n} nodes (a "
                               "truncated or edited file?)")
    leaf = left < 0
    check_node_sums(left, np.where(leaf, -1, right), hessian, f"XGBoost tree {index}",
                    "of hessian (sum_hessian)", rtol=COVER_RTOL)
    if (feature[~leaf] >= n_features).any():
        node = int(np.flatnonzero(~leaf & (feature >= n_features))[0])
        raise ModelFormatError(f"{at}: field 'split_indices' holds {feature[node]} at entry "
                               f"{node}, past the file's {n_features} features (num_feature): "
                               "an edited file?")
    check_thresholds(np.where(leaf, 0.0, condition), f"XGBoost model file: {where}",
                     "split_conditions")
    leaf_of_node = np.full(n, -1, dtype=np.int64)
    leaf_of_node[leaf] = np.arange(int(leaf.sum()))
    if (np.abs(condition[leaf]) > FLOAT32_MAX).any():
        node = int(np.flatnonzero(leaf & (np.abs(condition) > FLOAT32_MAX))[0])
        raise ModelFormatError(f"{at}: field 'split_conditions' holds {condition[node]:g} at "
                               f"entry {node}, a leaf value past what XGBoost's float32 holds: "
                               "an edited file?")
    split_at = np.where(leaf, 0.0, condition).astype(np.float32)
    below = np.nextafter(split_at, np.float32(-np.inf)).astype(np.float64)
    threshold = np.where(leaf, 0.0, below)  # x < t in float32 is x <= the float32 below t
    nodes = (np.where(leaf, -1, feature), threshold, np.where(leaf, -1, left),
             np.where(leaf, -1, right), leaf_of_node)
    if routing is not None:
        nodes, kept = routing.tree(index, nodes, hessian[leaf])
        return nodes, hessian[leaf][kept], condition[leaf][kept]
    return nodes, hessian[leaf], condition[leaf]


def _field(data: Any, key: str, where: str) -> Any:
    """``data[key]``, or a one-line error naming the field."""
    if not isinstance(data, dict) or key not in data:
        path = f"{where}.{key}" if where else key
        raise ModelFormatError(f"XGBoost model file: field {path!r} is missing")
    return data[key]
