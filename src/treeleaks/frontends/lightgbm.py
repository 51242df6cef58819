"""LightGBM frontend: a binary classifier's (or squared-error regressor's) model text file,
read without LightGBM.

``booster.save_model("m.txt")`` (or ``model_to_string()``) writes every tree's splits and,
per leaf, ``leaf_count`` (the rows it holds), ``leaf_weight`` (their hessian sum) and
``leaf_value``. Without bagging every tree's counts add up to N: they constrain the rows
like a forest's, pooled over the classes. The first tree also gives each leaf's class
counts: every row starts at the same score s = logit(p0) (p0 the positive share; s = 0
when boosting does not start from the average), so a leaf of n rows holding P positives has
hessian sum H = n·p0(1-p0) and value v = s - η·(n·p0 - P)/(H + λ), with η the learning
rate and λ the L2 penalty; hence P = n·p0 + (v - s)(H + λ)/η. (p0 here is the start's
probability: the positive share, or 1/2 when boosting starts at 0.) p0(1-p0) = ΣH/N has two
roots; the wrong one leaves the counts far from whole numbers. The derived counts must be
whole: when they are not, a training option the formula leaves out was used (sample
weights, ``scale_pos_weight``, an initial score, L1 or ``max_delta_step``), and the model is
refused rather than rounded. A model fitted on a table with gaps or pandas categories
routes them as `treeleaks.frontends.lightgbm_routing` reads, spelled out over 0/1 features
(`treeleaks.frontends.gaps`), its ``inputs`` saying how the table's columns become them.
Reading the file runs no code.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from treeleaks.frontends.boosting import (
    booster_trees,
    check_node_sums,
    check_thresholds,
    float32_positives,
    no_sums,
    squared_error_gradients,
    sum_rows,
    whole_positives,
    wrapped_booster,
)
from treeleaks.frontends.gaps import with_routing
from treeleaks.frontends.lightgbm_multiclass import class_counts
from treeleaks.frontends.lightgbm_routing import (
    MISSING_SHIFT,
    NAN,
    LightGBMRouting,
    lightgbm_routing,
)
from treeleaks.frontends.multiclass import check_round, multiclass_facts, multiclass_trees
from treeleaks.frontends.numbers import checked, checked_one
from treeleaks.frontends.stored import lightgbm_fields
from treeleaks.frontends.stripped import Stripped, counts_removed, structure_only
from treeleaks.ir.description import ModelKind, describe
from treeleaks.ir.model import LeafGradients, ModelFormatError, ReleasedModel, Tree
from treeleaks.runtime.errors import UnsupportedModelError

WHOLE_TOLERANCE = 1e-4  # derived counts this close to whole numbers are whole (file: 17 digits)
ROW_PRECISION = 1e-6  # of a gradient or hessian sum, per row (float32 per row, 17 digits kept)
# a tree's IR nodes, and its leaves' row counts, hessian sums and values
_TREE_START = re.compile(r"(?m)^(?=Tree=\d+\s*$)|^(?=end of trees\s*$)")
_Converted = tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray, np.ndarray]


def read_lightgbm(source: str | Path | Any, feature_names: list[str] | None = None,
                  label_name: str = "label", counts_removed_ok: bool = False) -> ReleasedModel:
    """The `ReleasedModel` of a LightGBM binary classifier: a model text file's path, its
    text, a ``Booster`` or a fitted ``LGBMClassifier`` (see the module doc). A file without
    its counts (``treeleaks strip``) raises `CountsRemovedError`, or with
    ``counts_removed_ok`` comes back as its structure alone."""
    source, classes = wrapped_booster(source, "booster_")
    head, trees, params = _sections(_model_text(source))
    objective = head.get("objective", "").split()
    _check_objective(objective)
    classes = _classes(objective, classes)
    _check_boosting(objective, params)
    names = feature_names or head.get("feature_names", "").split()
    if not trees:
        raise ModelFormatError("LightGBM model file: it holds no tree ('Tree=' sections)")
    routing = lightgbm_routing(head, trees, names or _column_names(head), params)
    features = list(routing.layout.names) if routing else list(names)
    if _counts_missing(trees):
        if not counts_removed_ok:
            raise counts_removed("LightGBM model", "no tree keeps its leaf_count")
        return with_routing(_structure(trees, names, routing, objective[0], classes, features,
                                       label_name), routing)
    converted = [_tree(block, index, names, routing) for index, block in enumerate(trees)]
    _same_rows([count for _, count, _, _ in converted], params)
    eta = _float(params, "learning_rate", 0.1)
    l2 = _float(params, "lambda_l2", 0.0)
    if objective[0] == "regression":
        return with_routing(_regression(converted, params, features, eta, l2, label_name), routing)
    if objective[0] == "multiclass":
        return with_routing(_multiclass(converted, classes, features, eta, l2, label_name),
                       routing)
    return with_routing(_binary(converted, params, classes, features, eta, l2, label_name),
                        routing)


def _classes(objective: list[str], given: list[Any]) -> list[Any]:
    """The classes: a multiclass file's by index, unless a fitted classifier gave its
    labels."""
    if objective[0] == "multiclass" and given == [0, 1]:  # a file: its classes by index
        return list(range(int(_option(objective, "num_class", 2))))
    return given


def _structure(trees: list[dict[str, str]], names: list[str],
               routing: LightGBMRouting | None, objective: str, classes: list[Any],
               features: list[str], label_name: str) -> ReleasedModel:
    """A stripped file's model: its trees' structure alone (``counts_removed_ok``)."""
    shapes = [_tree(_zero_counts(block), index, names, routing)
              for index, block in enumerate(trees)]
    regression = objective == "regression"
    about = Stripped("LightGBM", f"objective {objective}", lightgbm_fields(
        regression, objective == "multiclass"), ModelKind.GRADIENT_BOOSTED)
    return structure_only([c[0] for c in shapes], [] if regression else classes,
                          features, label_name, "LightGBM", about,
                          shapes[0][3] if regression else None)


def _binary(converted: list[_Converted], params: dict[str, str], classes: list[Any],
            features: list[str], eta: float, l2: float, label_name: str) -> ReleasedModel:
    """A binary classifier: every tree's row counts, the first tree's class counts from its
    values, the later trees' gradient sums."""
    _hessians_fit_counts(converted)
    _, count, hessian, value = converted[0]
    positives = first_tree_positives(count, hessian, value, eta, l2, _options_used(params))
    out = booster_trees([c[0] for c in converted], [c[1] for c in converted], positives)
    gradients = LeafGradients(0.0, [c[3] for c in converted], [no_sums()] + [
        _sums(count, hessian, value, eta, l2) for _, count, hessian, value in converted[1:]])
    model = ReleasedModel(out, classes, features, label_name=label_name, source="LightGBM",
                          gradients=gradients,
                          facts={"objective": "binary", "learning_rate": eta, "lambda_l2": l2})
    model.validate()
    model.description = describe(model, "LightGBM", "objective binary",
                                 lightgbm_fields(False))
    return model


def _column_names(head: dict[str, str]) -> list[str]:
    """LightGBM's own names for a file's columns (``Column_0``, ...), from its
    ``max_feature_idx``."""
    last = checked_one(head.get("max_feature_idx", "-1"), "LightGBM model file",
                       "max_feature_idx", whole=True, low=-1)
    return [f"Column_{j}" for j in range(int(last) + 1)]


def _model_text(source: str | Path | Any) -> str:
    """The model text of a ``Booster``, of a file's path, or the text itself."""
    if hasattr(source, "model_to_string"):
        return source.model_to_string()
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source):
        return Path(source).read_text(encoding="utf-8", errors="replace")
    return str(source)


def _check_objective(objective: list[str]) -> None:
    """Refuse a missing objective and the objectives treeleaks does not read."""
    if not objective:
        raise ModelFormatError("LightGBM model file: field 'objective' is missing")
    if objective[0] == "multiclassova":
        raise UnsupportedModelError(
            "LightGBM objective 'multiclassova': its trees are K binary boosters whose "
            "sigmoid start scores the file does not keep; treeleaks reads the softmax "
            "objective 'multiclass'")
    if objective[0] not in ("binary", "regression", "multiclass"):
        raise UnsupportedModelError(
            f"LightGBM objective {objective[0]!r}: treeleaks reads binary classifiers "
            "(objective 'binary'), softmax multiclass ones ('multiclass') and squared-error "
            "regressors ('regression') so far")


def _check_boosting(objective: list[str], params: dict[str, str]) -> None:
    """Refuse a sigmoid other than 1 and a boosting other than gbdt (or goss, refused later
    as a subsample)."""
    if _option(objective, "sigmoid", 1.0) != 1.0:
        raise UnsupportedModelError("LightGBM binary objective with sigmoid other than 1: its "
                                    "first tree's class counts are not derived")
    boosting = params.get("boosting", "gbdt").strip()
    if boosting not in ("gbdt", "goss"):  # goss: refused later as a subsample
        raise UnsupportedModelError(
            f"LightGBM boosting {boosting!r}: "
            + ("DART drops earlier trees and rescales them, so the later trees' sums do "
               "not follow from the leaf values as saved" if boosting == "dart" else
               "its trees are not fit one after another on every row")
            + "; treeleaks reads boosting 'gbdt' (the default)")


def _regression(converted: list[_Converted], params: dict[str, str], names: list[str],
                eta: float, l2: float, label_name: str) -> ReleasedModel:
    """A squared-error regressor: every tree's row counts, and the first tree's values as
    each leaf's target mean. Every row starts at s (the mean target, with boost_from_average)
    and has hessian 1, so a leaf's value is v = s + η·Σ(y - s)/(n + λ): its mean target is
    s + (v - s)(n + λ)/(η·n). Without s in the file, the means adding up to N·s give it."""
    _, count, hessian, value = converted[0]
    # a first tree with no split keeps no hessian sum: squared error gives each row h = 1
    hessian = np.where(np.isnan(hessian), count, hessian)
    if np.abs(hessian - count).max() > 1e-6 * count.max():  # squared error: h = 1 a row
        raise UnsupportedModelError(
            "the first LightGBM tree's hessian sums are not its row counts: it was trained "
            "with sample weights, which its values mix into the targets; treeleaks needs "
            "unweighted training")
    start = 0.0
    if params.get("boost_from_average", "1").strip() not in ("0", "false"):
        start = float((value * (hessian + l2)).sum() / (hessian + l2).sum())
    means = start + (value - start) * (hessian + l2) / (eta * count)
    out = [Tree(*shape, rows[:, None].copy(), n_samples=rows.copy(),
                values=means if t == 0 else None)
           for t, (shape, rows, _, _) in enumerate(converted)]
    # the first tree's values carry the start: its rows' gradients were taken at s
    added = [value - start] + [c[3] for c in converted[1:]]
    gradients = squared_error_gradients(start, added, [c[1] for c in converted], eta, l2,
                                        ROW_PRECISION)
    model = ReleasedModel(out, [], list(names), label_name=label_name, source="LightGBM",
                          task="regression", gradients=gradients,
                          facts={"learning_rate": eta, "lambda_l2": l2})
    model.validate()
    model.description = describe(model, "LightGBM", "objective regression",
                                 lightgbm_fields(True))
    return model


def _multiclass(converted: list[_Converted], classes: list[Any], names: list[str],
                eta: float, l2: float, label_name: str) -> ReleasedModel:
    """A softmax multiclass booster: K trees a round, the first round's counting each
    class apart (`treeleaks.frontends.lightgbm_multiclass`), the rest pooled."""
    n_classes = len(classes)
    if len(converted) % n_classes:
        raise ModelFormatError(f"LightGBM model file: {len(converted)} trees is not whole "
                               f"rounds of {n_classes} (num_class): a truncated file?")
    _hessians_fit_counts(converted)
    derived = [class_counts(count, hessian, value, n_classes, eta, l2, k)
               for k, (_, count, hessian, value) in enumerate(converted[:n_classes])]
    check_round(derived, int(converted[0][1].sum()), "LightGBM")
    trees = multiclass_trees([c[0] for c in converted], [c[1] for c in converted], derived)
    scale = n_classes / (n_classes - 1)  # LightGBM's softmax hessian: K/(K-1)·p(1-p)
    sums = [no_sums()] * n_classes + [_sums(count, hessian, value, eta, l2, scale)
                                      for _, count, hessian, value in converted[n_classes:]]
    # the first round's values hold the start scores log(π_k): every score starts at 0
    gradients = LeafGradients(np.zeros(n_classes), [c[3] for c in converted], sums)
    model = ReleasedModel(trees, classes, list(names), label_name=label_name,
                          source="LightGBM", gradients=gradients,
                          facts=multiclass_facts(n_classes, len(trees), objective="multiclass",
                                                 learning_rate=eta, lambda_l2=l2))
    model.validate()
    model.description = describe(model, "LightGBM", "objective multiclass",
                                 lightgbm_fields(False, multiclass=True))
    return model


def _counts_missing(trees: list[dict[str, str]]) -> bool:
    """Whether no tree keeps a row in its ``leaf_count`` (absent or all 0): a stripped
    file (a malformed field is left for `_tree` to name)."""
    try:
        return not any(float(v) for block in trees for v in block.get("leaf_count", "").split())
    except ValueError:
        return False


def _zero_counts(block: dict[str, str]) -> dict[str, str]:
    """A tree's fields with its removed leaf counts and hessian sums put back as zeros."""
    n_leaves = checked_one(block.get("num_leaves", "1"), "LightGBM tree", "num_leaves",
                           whole=True, low=1)
    zeros = " ".join("0" for _ in range(int(n_leaves)))
    return {**block, "leaf_count": zeros, "leaf_weight": zeros}


def _same_rows(counts: list[np.ndarray], params: dict[str, str]) -> None:
    """Every tree's leaves hold the first tree's rows: else the trees saw subsamples, when
    the file says so (`_subsampling`), or the file was edited."""
    totals = [int(count.sum()) for count in counts]
    n_rows = max(totals, key=totals.count)  # most trees' rows: an edit is in the others
    first = next((t for t, total in enumerate(totals) if total != n_rows), None)
    if first is None:
        return
    index, count = first, counts[first]
    sampled = _subsampling(params)
    if sampled:
        raise UnsupportedModelError(
            f"LightGBM tree {index}'s leaves count {int(count.sum())} rows but most "
            f"trees' count {n_rows}: the trees were fit on subsamples ({sampled}), whose "
            "counts treeleaks does not model; it audits boosters trained on every row "
            "(bagging_fraction=1, no GOSS)")
    raise ModelFormatError(
        f"the file's values contradict each other at LightGBM tree {index}: its "
        f"leaf_count adds up to {int(count.sum())} rows, most trees' to {n_rows}, and the "
        "file records no bagging or GOSS: edited or truncated?")


def _subsampling(params: dict[str, str]) -> str:
    """The row subsampling the file's parameters record ("" when none)."""
    strategy = params.get("data_sample_strategy", "").strip()
    if strategy == "goss" or params.get("boosting", "").strip() == "goss":
        return "GOSS"
    fractions = [_float(params, key, 1.0) for key in
                 ("bagging_fraction", "pos_bagging_fraction", "neg_bagging_fraction")]
    if min(fractions) < 1.0 and _float(params, "bagging_freq", 0.0) > 0:
        return f"bagging, bagging_fraction={min(fractions):g}"
    return ""


def _hessians_fit_counts(converted: list[_Converted]) -> None:
    """A leaf of no rows has no hessian sum, whatever the weights: anything else is an
    edited file."""
    for index, (_, count, hessian, _) in enumerate(converted):
        off = (count == 0) & (hessian > 0)
        if off.any():
            leaf = int(np.argmax(off))
            raise ModelFormatError(
                f"the file's values contradict each other at LightGBM tree {index} leaf "
                f"{leaf}: leaf_count 0 but leaf_weight {hessian[leaf]:g}: edited or "
                "truncated?")


def _sums(count: np.ndarray, hessian: np.ndarray, value: np.ndarray, eta: float,
          l2: float, scale: float = 1.0) -> np.ndarray:
    """A later tree's gradient and hessian sums per leaf: H as stored (``scale`` times the
    rows' p(1-p)), G from the value v = -η·G/(H + λ). LightGBM keeps each row's gradient in
    float32: the sums are trusted to `ROW_PRECISION` per row. A tree without its hessian
    sum (no split, value 0) adds nothing and says nothing."""
    if np.isnan(hessian).any():
        return no_sums()
    gradient = -value * (hessian + l2) / eta
    tolerance = count * ROW_PRECISION
    return np.vstack([sum_rows(1.0, 0.0, gradient, tolerance),
                      sum_rows(0.0, scale, hessian, tolerance)])


def first_tree_positives(count: np.ndarray, hessian: np.ndarray, value: np.ndarray,
                         eta: float, l2: float, used: str = "") -> np.ndarray:
    """Each leaf's positives in the first tree of a binary booster (see the module doc),
    refused unless they are whole and within the leaf; ``used`` names the training options
    the file records that the derivation leaves out (`_options_used`)."""
    n_rows = int(count.sum())
    q = float(hessian.sum() / n_rows)  # p0 (1 - p0), the same for every row
    disc = 1.0 - 4.0 * q
    if disc < -1e-9:
        raise UnsupportedModelError(_not_whole("its hessian sums exceed n/4", used, None))
    # Near p0 = 1/2 the roots are ill-conditioned; the positive share is k/N, so snap to
    # it (1/2 itself: boosting that does not start from the average).
    roots = {round((0.5 + sign * math.sqrt(max(disc, 0.0)) / 2) * n_rows) / n_rows
             for sign in (-1, 1)} | {0.5}
    worst, leaf = math.inf, 0
    for p0 in sorted(roots):
        if not 0.0 < p0 < 1.0:
            continue
        start = math.log(p0 / (1.0 - p0))
        derived = float32_positives(count, -(value - start) * (hessian + l2) / eta, p0)
        # the other root's start, -s, leaves counts off whole numbers by about 2sH/eta
        whole = whole_positives(derived, count, WHOLE_TOLERANCE)
        if whole is not None:
            return whole
        outside = np.maximum(np.maximum(-derived, derived - count), 0.0)
        off = np.abs(derived - np.rint(derived)) + outside
        if float(off.max()) < worst:
            worst, leaf = float(off.max()), int(np.argmax(off))
    raise UnsupportedModelError(_not_whole(
        f"they miss whole counts within the leaf by up to {worst:.3g}", used, leaf))


def _not_whole(why: str, used: str, leaf: int | None) -> str:
    """The refusal of a first tree without whole class counts: blamed on the options the
    file records, else on an edit or on what the file cannot record."""
    head = f"the first LightGBM tree's leaf values give no whole class counts ({why})"
    if used:
        return (f"{head}: the model was trained with {used}, which the derivation leaves "
                "out; treeleaks refuses to guess its classes")
    at = "LightGBM tree 0" + ("" if leaf is None else f" leaf {leaf}")
    return (f"{head}: the file's values contradict each other at {at}: edited or "
            "truncated? (or trained with sample weights or an initial score, which the file "
            "does not record; treeleaks refuses to guess its classes)")


def _options_used(params: dict[str, str]) -> str:
    """The training options the file records that the first tree's derivation leaves out
    (LightGBM writes every parameter, so an option at its default was not used)."""
    defaults = {"scale_pos_weight": 1.0, "is_unbalance": 0.0, "lambda_l1": 0.0,
                "max_delta_step": 0.0, "path_smooth": 0.0}
    used = []
    for key, default in defaults.items():
        raw = params.get(key, "").strip().lower()
        value = {"true": 1.0, "false": 0.0}.get(raw)
        try:
            value = float(raw) if value is None and raw else value
        except ValueError:
            value = None
        if value is not None and value != default:
            used.append(f"{key}={raw}")
    return ", ".join(used)


def _sections(text: str) -> tuple[dict[str, str], list[dict[str, str]], dict[str, str]]:
    """The header's fields, each tree's fields, and the training parameters."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "tree":
        raise ModelFormatError("not a LightGBM model file: it does not start with the line "
                               "'tree' (save it with booster.save_model)")
    head: dict[str, str] = {}
    trees: list[dict[str, str]] = []
    params: dict[str, str] = {}
    current: dict[str, str] | None = head
    ended = False
    parameters = 0  # 1 inside the parameters' section, 2 past its end
    for raw in lines[1:]:
        line = raw.strip()
        if line.startswith("Tree="):
            current = {}
            trees.append(current)
        elif line == "end of trees":
            current, ended = None, True
        elif line in ("parameters:", "end of parameters") and current is None:
            parameters = 1 if line == "parameters:" else 2
        else:
            _store_field(line, current, head, params)
    _check_complete(head, len(trees), "end of trees" if not ended else (
        "end of parameters" if parameters == 1 else None))
    return head, trees, params


def _store_field(line: str, current: dict[str, str] | None, head: dict[str, str],
                 params: dict[str, str]) -> None:
    """File one line that opens no section: the pandas categories (after the trees) into
    the header, a ``[key: value]`` line into the parameters, a ``key=value`` line into the
    section it sits in (the header or the current tree)."""
    if line.startswith("pandas_categorical:") and current is None:
        head["pandas_categorical"] = line.split(":", 1)[1]
    elif line.startswith("[") and line.endswith("]") and ": " in line:
        key, value = line[1:-1].split(": ", 1)
        params[key] = value
    elif "=" in line and current is not None:
        key, value = line.split("=", 1)
        current[key] = value


def check_tree_sizes(text: str) -> None:
    """Refuse a model text whose trees' byte sizes differ from its ``tree_sizes`` line:
    LightGBM seeks by those sizes and aborts the process on an edited tree (the treeleaks
    reader parses line by line and reads such a file), so `treeleaks strip` asks this
    before LightGBM sees the file."""
    listed = re.search(r"(?m)^tree_sizes=(.*)$", text)
    if listed is None:
        return
    blocks = _TREE_START.split(text)[1:-1]
    sizes = [len(block.encode("utf-8")) for block in blocks]
    for index, (size, said) in enumerate(zip(sizes, listed.group(1).split(), strict=False)):
        if str(size) != said:
            raise ModelFormatError(
                f"LightGBM model file: tree {index} is {size} bytes but tree_sizes says "
                f"{said}: an edited file, which LightGBM itself cannot load (it seeks by "
                "tree_sizes); delete the tree_sizes line and LightGBM reads the trees in "
                "order")


def _check_complete(head: dict[str, str], n_trees: int, cut: str | None) -> None:
    """Refuse a file cut short (``cut``: the closing line it lacks, 'end of trees' or 'end
    of parameters') or missing trees: LightGBM lists each tree's size in ``tree_sizes`` and
    seeks by them, and reads past a cut end into memory it does not own."""
    listed = len(head.get("tree_sizes", "").split())
    of = f" of the {listed} its tree_sizes lists" if listed else ""
    if cut == "end of trees":
        what = f"it stops after {n_trees} tree(s){of}, before the line 'end of trees'"
    elif cut is not None:
        what = f"it stops inside its parameters, before the line '{cut}'"
    elif listed and listed != n_trees:
        what = f"its tree_sizes lists {listed} trees but it holds {n_trees}"
    else:
        return
    kind = "an edited file" if cut is None else "a truncated file"
    raise ModelFormatError(f"LightGBM model file: {what}: {kind}; copy it again from where "
                           "it was saved (booster.save_model writes it whole)")


def _tree(block: dict[str, str], index: int, names: list[str],
          routing: LightGBMRouting | None = None) -> _Converted:
    """One tree's IR nodes (internal nodes first, then leaves; with ``routing``, its gap
    and category splits spelled out and the leaves no row can reach dropped), leaf counts,
    hessian sums and values."""
    n_leaves = int(_numbers(block, "num_leaves", index, 1, whole=True, low=1)[0])
    if block.get("is_linear", "0") != "0":
        raise UnsupportedModelError(f"LightGBM tree {index} is a linear tree; treeleaks reads "
                                    "constant leaves only")
    count = _numbers(block, "leaf_count", index, n_leaves, whole=True, low=0)
    value = _numbers(block, "leaf_value", index, n_leaves)
    # a tree LightGBM grew no split in (a class whose gradients had nothing left to gain,
    # late in a multiclass booster) keeps its rows and value 0 but no hessian sum
    hessian = (np.full(1, np.nan) if n_leaves == 1 and not block.get("leaf_weight", "x").strip()
               else _numbers(block, "leaf_weight", index, n_leaves, low=0.0))
    n_internal = n_leaves - 1
    if not n_internal:
        nodes = (np.array([-1]), np.array([0.0]), np.array([-1]), np.array([-1]),
                 np.array([0]))
        return nodes, count, hessian, value
    feature = _numbers(block, "split_feature", index, n_internal, whole=True, low=0,
                       high=len(names) - 1 if names else math.inf)
    decision = _numbers(block, "decision_type", index, n_internal, whole=True, low=0)
    threshold = _thresholds(block, index, n_internal, decision)
    left, right = _children(block, index, n_internal, n_leaves)
    _check_row_sums(block, index, left, right, count)
    if routing is not None:  # gaps and categories spelled out (`lightgbm_routing`)
        nodes, kept = routing.tree(block, index, feature, threshold, decision, left, right,
                                   count)
        return nodes, count[kept], hessian[kept], value[kept]
    leaf_of_node = np.concatenate([np.full(n_internal, -1), np.arange(n_leaves)])
    nodes = (np.concatenate([feature, np.full(n_leaves, -1)]),
             np.concatenate([threshold, np.zeros(n_leaves)]),
             np.concatenate([left, np.full(n_leaves, -1)]),
             np.concatenate([right, np.full(n_leaves, -1)]), leaf_of_node)
    return nodes, count, hessian, value


def _children(block: dict[str, str], index: int, n_internal: int, n_leaves: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """Each internal node's children, numbered internal nodes first, then leaves (the file
    writes leaf k as ~k), every one in range."""
    children = [_numbers(block, key, index, n_internal, whole=True,
                         low=-n_leaves, high=n_internal - 1)
                for key in ("left_child", "right_child")]
    left, right = (np.where(c >= 0, c, n_internal + ~c) for c in children)
    n_nodes = n_internal + n_leaves
    if not (min(left.min(), right.min()) > 0 and max(left.max(), right.max()) < n_nodes):
        raise ModelFormatError(f"LightGBM tree {index}: a child index is out of range")
    return left, right


def _check_row_sums(block: dict[str, str], index: int, left: np.ndarray, right: np.ndarray,
                    count: np.ndarray) -> None:
    """Each internal node's rows (``internal_count``) the sum of its children's, when the
    file keeps both them and the leaves' (it is not stripped)."""
    n_internal, n_leaves = left.size, count.size
    inner = (_numbers(block, "internal_count", index, n_internal, whole=True, low=0)
             if "internal_count" in block else np.zeros(0))
    if inner.any() and count.any():  # both kept (not stripped): nodes, then the leaves
        no_child = np.full(n_leaves, -1)
        check_node_sums(np.concatenate([left, no_child]), np.concatenate([right, no_child]),
                        np.concatenate([inner, count]), f"LightGBM tree {index}",
                        "rows (internal_count, leaf_count)")


def _thresholds(block: dict[str, str], index: int, n_internal: int, decision: np.ndarray
                ) -> np.ndarray:
    """Tree ``index``'s thresholds, each checked. LightGBM writes ``inf`` at a split that
    sends every value left and only the gaps right (missing type NaN): kept there, refused
    anywhere else."""
    raw = block.get("threshold", "").split()
    gap_only = np.zeros(len(raw), dtype=bool)
    gaps = ((decision.astype(np.int64) >> MISSING_SHIFT) & 3) == NAN
    gap_only[:min(len(raw), gaps.size)] = gaps[:len(raw)] & np.isin(
        raw[:gaps.size], ["inf", "+inf"])
    shown = " ".join("0" if past else value for value, past in zip(raw, gap_only))
    threshold = _numbers({**block, "threshold": shown}, "threshold", index, n_internal)
    check_thresholds(threshold, f"LightGBM tree {index}", "threshold")
    threshold[gap_only] = np.inf
    return threshold


def _numbers(block: dict[str, str], key: str, index: int, length: int,
             **bounds: Any) -> np.ndarray:
    """Field ``key`` of tree ``index`` as ``length`` numbers, each checked (finite, whole
    and in range as ``bounds`` say: `treeleaks.frontends.numbers.checked`), or a one-line
    error naming it."""
    if key not in block:
        raise ModelFormatError(f"LightGBM tree {index}: field {key!r} is missing")
    values = checked(block[key].split(), f"LightGBM tree {index}", key, **bounds)
    if values.size != length:
        raise ModelFormatError(f"LightGBM tree {index}: field {key!r} has {values.size} "
                               f"entries, expected {length} (a truncated or edited file?)")
    return values


def _option(tokens: list[str], name: str, default: float) -> float:
    """``name:value`` among the objective's tokens."""
    for token in tokens[1:]:
        key, _, value = token.partition(":")
        if key == name:
            return float(value)
    return default


def _float(params: dict[str, str], key: str, default: float) -> float:
    try:
        return float(params.get(key, default))
    except ValueError:
        raise ModelFormatError(f"LightGBM model file: parameter {key!r} is not a number"
                               ) from None
