"""One typed account of a released model, made once by the reader that read its file.

`ModelDescription` says what the model is (framework, task, kind), how its trees drew their
rows (bootstrap, whether the per-tree draws are exposed), what the file gives away about the
training set (N and the class balance, exact or an estimate marked as such; a regressor's
targets) and each stored field with what it exposes (a stripped file: what was removed).
`inspect`, `audit`, `strip` and `reconstruct` read it and never re-derive it; `rows` renders it
in the one set of words they all print. `describe` derives the parts the IR settles (kind, N,
balance) for a reader, which adds what only it knows (framework, fields, a stripped file's
bootstrap). The IR module imports this one, so `describe` takes the model duck-typed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

INTERVAL_SDS = 3.0  # half-width of the bounds on a DP forest's N, in standard deviations


# Formats that never keep counts, draws or N (read as a stripped file is): their files say
# nothing of how the trees drew their rows.
FORMATS_WITHOUT_COUNTS = frozenset({"ONNX"})


class ModelKind(StrEnum):
    """What kind of model a file holds: the one type test downstream code makes."""

    SINGLE_TREE = "single tree"
    FOREST = "forest (no bootstrap)"
    BOOTSTRAP_FOREST = "bootstrap forest"
    GRADIENT_BOOSTED = "gradient-boosted model"
    DP_FOREST = "DP forest"
    RULE_LIST = "rule list"


@dataclass(frozen=True)
class StoredField:
    """One field the file stores, with what it gives away (``removed``: stripped out;
    ``per_row``: it gives a training row's label, leaf or values outright, row by row, as
    R models keep ``y`` and ``where``: a leak without any attack)."""

    name: str
    exposes: str
    removed: bool = False
    per_row: bool = False


@dataclass(frozen=True)
class ModelDescription:
    """What a model file is and gives away, as its reader found it.

    ``n_rows`` is N when the file gives it away (``n_rows_estimated``: an estimate, with
    ``n_rows_bounds`` when it has bounds), ``n_rows_how`` says from what; ``class_balance``
    likewise. ``target_range`` is a regressor's range of leaf values. A framework's other
    words (objective, early stopping) stay in the model's ``facts``, for display.
    """

    framework: str
    estimator: str
    task: str
    kind: ModelKind
    bootstrap: bool = False
    draws_exposed: bool = False
    max_samples: float | None = None
    n_rows: int | None = None
    n_rows_estimated: bool = False
    n_rows_how: str = ""
    n_rows_bounds: tuple[int, int] | None = None
    class_balance: tuple[tuple[str, int], ...] | None = None
    class_balance_estimated: bool = False
    target_range: tuple[float, float] | None = None
    stripped: bool = False
    fields: tuple[StoredField, ...] = ()

    @property
    def n_rows_given_away(self) -> bool:
        """Whether anyone holding the file reads N exactly off it."""
        return self.n_rows is not None and not self.n_rows_estimated

    def to_dict(self) -> dict[str, Any]:
        """The description as plain JSON (`from_dict` reads it back)."""
        return {
            "framework": self.framework, "estimator": self.estimator, "task": self.task,
            "kind": str(self.kind), "bootstrap": self.bootstrap,
            "draws_exposed": self.draws_exposed, "max_samples": self.max_samples,
            "n_rows": self.n_rows, "n_rows_estimated": self.n_rows_estimated,
            "n_rows_how": self.n_rows_how,
            "n_rows_bounds": None if self.n_rows_bounds is None else list(self.n_rows_bounds),
            "class_balance": None if self.class_balance is None else dict(self.class_balance),
            "class_balance_estimated": self.class_balance_estimated,
            "target_range": None if self.target_range is None else list(self.target_range),
            "stripped": self.stripped,
            "fields": [{"name": f.name, "exposes": f.exposes, "removed": f.removed,
                        **({"per_row": True} if f.per_row else {})} for f in self.fields],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelDescription:
        """Read what `to_dict` wrote (a KeyError or ValueError on a malformed one)."""
        bounds, balance, targets = (data.get(k) for k in ("n_rows_bounds", "class_balance",
                                                          "target_range"))
        return cls(
            framework=str(data["framework"]), estimator=str(data["estimator"]),
            task=str(data["task"]), kind=ModelKind(data["kind"]),
            bootstrap=bool(data.get("bootstrap", False)),
            draws_exposed=bool(data.get("draws_exposed", False)),
            max_samples=data.get("max_samples"), n_rows=data.get("n_rows"),
            n_rows_estimated=bool(data.get("n_rows_estimated", False)),
            n_rows_how=str(data.get("n_rows_how", "")),
            n_rows_bounds=None if bounds is None else (int(bounds[0]), int(bounds[1])),
            class_balance=None if balance is None else tuple(
                (str(k), int(v)) for k, v in balance.items()),
            class_balance_estimated=bool(data.get("class_balance_estimated", False)),
            target_range=None if targets is None else (float(targets[0]), float(targets[1])),
            stripped=bool(data.get("stripped", False)),
            fields=tuple(StoredField(str(f["name"]), str(f["exposes"]), bool(f["removed"]),
                                     bool(f.get("per_row", False)))
                         for f in data.get("fields", [])),
        )

    # --- the words every command prints --------------------------------------------------

    def rows(self) -> list[tuple[str, str]]:
        """The description as (name, words) rows: what every command prints about it."""
        maker = " ".join(word for word in (self.framework, self.estimator) if word)
        kind = ("tree ensemble" if self.framework in FORMATS_WITHOUT_COUNTS
                and self.kind != ModelKind.SINGLE_TREE else self.kind)
        out = [("Model", f"{kind}, {self.task} ({maker})"),
               ("Bootstrap", self.bootstrap_text()),
               ("Training rows N", self.n_rows_text()),
               ("Class balance", self.class_balance_text())]
        if self.target_range is not None:
            low, high = self.target_range
            out.append(("Targets", f"leaf values from {low:g} to {high:g}"))
        out.extend((f"Field {f.name}", f"removed (it gave away {f.exposes})" if f.removed
                    else f.exposes) for f in self.fields)
        return out

    @property
    def counts_removed_by_publisher(self) -> bool:
        """Whether the file's counts were taken out (a stripped file), not a format that
        never keeps any (ONNX)."""
        return self.stripped and self.framework not in FORMATS_WITHOUT_COUNTS

    def bootstrap_text(self) -> str:
        """Whether the trees drew their rows with replacement, and what the file says of
        the draws."""
        if self.kind == ModelKind.RULE_LIST:
            return "no: the rules counted each training row once"
        if self.framework in FORMATS_WITHOUT_COUNTS:
            return f"not recorded: an {self.framework} file keeps no draws or counts"
        if not self.bootstrap:
            return "no: every tree saw every row once"
        limit = "" if self.max_samples is None else f", max_samples={self.max_samples:g}"
        draws = ("per-tree draws exposed (stored, or repeated by the random states)"
                 if self.draws_exposed else "per-tree draws not exposed")
        return f"yes{limit}: {draws}"

    def n_rows_text(self) -> str:
        """N as the file gives it away, an estimate marked as such, or "not given away"."""
        if self.n_rows is None:
            return "not given away"
        bounds = ("" if self.n_rows_bounds is None else
                  f"between {self.n_rows_bounds[0]:,} and {self.n_rows_bounds[1]:,}")
        if not self.n_rows_estimated:
            noisy = f"; the noisy counts put it {bounds}" if bounds else ""
            return f"{self.n_rows:,} given away ({self.n_rows_how}){noisy}"
        return f"about {self.n_rows:,}{', ' + bounds if bounds else ''} (an estimate " \
            f"{self.n_rows_how})"

    def class_balance_text(self) -> str:
        """The class balance as the file gives it away, an estimate, or not at all."""
        if self.task == "regression":
            return "none: a regressor has no classes"
        if self.class_balance is None:
            return "not given away"
        shown = ", ".join(f"{c}: {k:,}" for c, k in self.class_balance)
        return f"about {shown} (an estimate)" if self.class_balance_estimated else (
            f"{shown} given away")


def describe(model: Any, framework: str, estimator: str = "",
             fields: Iterable[StoredField] = (), *, kind: ModelKind | None = None,
             bootstrap: bool | None = None, stripped: bool = False) -> ModelDescription:
    """Describe ``model`` (a `ReleasedModel`) as its reader found it.

    The IR settles the kind (unless ``kind`` is given), N, the class balance, the draws and a
    regressor's targets; the reader gives the ``framework``, the ``estimator``, the stored
    ``fields`` and, for a stripped file (``stripped``), whether it bootstrapped.
    """
    boot = bool(model.bootstrap if bootstrap is None else bootstrap)
    draws = (not stripped and bool(model.trees)
             and all(t.draws is not None for t in model.trees))
    kind = kind or _kind(model, boot)
    n_rows, estimated, how, bounds = (None, False, "", None) if stripped else _n_rows(
        model, draws)
    balance, balance_estimated = (None, False) if stripped else _balance(model, boot)
    if n_rows is None and balance is not None and balance_estimated:
        n_rows, estimated = sum(k for _, k in balance), True
        how = "from the trees' mean class totals"
    return ModelDescription(
        framework=framework, estimator=estimator, task=model.task, kind=kind,
        bootstrap=boot, draws_exposed=draws,
        max_samples=model.facts.get("max_samples") if boot else None,
        n_rows=n_rows, n_rows_estimated=estimated, n_rows_how=how, n_rows_bounds=bounds,
        class_balance=balance, class_balance_estimated=balance_estimated,
        target_range=_targets(model), stripped=stripped, fields=tuple(fields))


def _kind(model: Any, bootstrap: bool) -> ModelKind:
    if model.noise is not None:
        return ModelKind.DP_FOREST
    if model.gradients is not None:
        return ModelKind.GRADIENT_BOOSTED
    if bootstrap:
        return ModelKind.BOOTSTRAP_FOREST
    return ModelKind.SINGLE_TREE if model.n_trees == 1 else ModelKind.FOREST


def _n_rows(model: Any, draws: bool) -> tuple[int | None, bool, str, tuple[int, int] | None]:
    """N, whether estimated, from what, and an estimate's bounds."""
    stated = model.facts.get("n_rows")
    if model.n_rows is not None and model.counts_released:
        if getattr(model, "contradictions", ()):  # an edited file: its nodes disagree
            return model.n_rows, True, ("from the first tree's leaf counts; the file "
                                        "contradicts itself"), None
        return model.n_rows, False, "the leaf counts add up to it", None
    if draws:
        return len(model.trees[0].draws), False, "the length of the per-tree draws", None
    totals = {int(t.counts.sum()) for t in model.trees if t.counted}
    if (model.bootstrap and model.counts_released and "max_samples" in model.facts
            and model.facts["max_samples"] is None and len(totals) == 1):
        return totals.pop(), False, "each tree drew N rows: its counts add up to it", None
    if model.noise is not None and model.noise.kind == "laplace":
        low, high, estimate = noisy_row_bounds(model.trees, float(model.noise.scale))
        if stated is not None:
            return int(stated), False, "stated in the file", (low, high)
        return round(estimate), True, "from the noisy counts", (low, high)
    return None, False, "", None


def _balance(model: Any, bootstrap: bool) -> tuple[tuple[tuple[str, int], ...] | None, bool]:
    """The class balance, and whether it is an estimate (a bootstrap forest's)."""
    if model.is_regression or not model.counts_released or model.noise is not None:
        return None, False
    if model.n_rows is not None:
        return tuple((str(c), int(k)) for c, k in zip(model.classes,
                                                      model.class_totals())), False
    share = _draw_share(model.facts)
    if bootstrap and share is not None and all(t.counted and not t.pooled
                                               for t in model.trees):
        return bootstrap_class_balance(model, share), True
    return None, False


def _draw_share(facts: Mapping[str, Any]) -> float | None:
    """How many rows each bootstrap tree drew, as a share of N: 1 by default
    (``max_samples`` None or not recorded), its fraction, or None when it drew a number of
    rows (``max_samples`` an integer), which says nothing of N."""
    limit = facts.get("max_samples")
    if limit is None:
        return 1.0
    return float(limit) if isinstance(limit, float) and 0 < limit <= 1 else None


def bootstrap_class_balance(model: Any, share: float = 1.0) -> tuple[tuple[str, int], ...]:
    """A bootstrap forest's class balance, estimated: each tree drew ``share`` times N rows with
    replacement, every row ``share`` times on average, so the trees' class totals average
    to ``share`` times each class's rows (within about 1% over 100 trees). Rounded to add up
    to the mean total."""
    totals = np.array([tree.counts.sum(axis=0) for tree in model.trees], dtype=np.float64)
    mean = totals.mean(axis=0) / share
    counts = np.floor(mean).astype(np.int64)
    short = round(mean.sum()) - int(counts.sum())
    counts[np.argsort(counts - mean)[:max(short, 0)]] += 1  # largest remainders first
    return tuple((str(c), int(k)) for c, k in zip(model.classes, counts))


def _targets(model: Any) -> tuple[float, float] | None:
    """A regressor's range of leaf values (its trees' targets or their means)."""
    if not model.is_regression:
        return None
    values = [t.values for t in model.trees if t.values is not None]
    if not values:
        return None
    joined = np.concatenate(values)
    return float(joined.min()), float(joined.max())


def noisy_row_bounds(trees: list[Any], scale: float) -> tuple[int, int, float]:
    """Bounds on a DP forest's N from its noisy counts alone, and their centre.

    A released count r = int(z + Y) puts z + Y in an interval of length 1 (r != 0) or 2
    (r = 0); its midpoint estimates z + Y, so each tree's midpoints add up to N plus the
    tree's summed noise (mean 0), up to the rounding within the intervals. Averaged over the
    trees, that estimate has standard deviation ``sqrt(counts * (2 scale^2 + 1/12) / T)``
    (Laplace variance 2 scale^2, uniform rounding 1/12), and the bounds lie `INTERVAL_SDS`
    of them either side (for the sums of many counts here, a normal approximation).
    """
    totals = [np.sign(t.counts).sum() * 0.5 + t.counts.sum() for t in trees]
    n_counts = float(np.mean([t.counts.size for t in trees]))
    estimate = float(np.mean(totals))
    spread = INTERVAL_SDS * math.sqrt(n_counts * (2 * scale**2 + 1 / 12) / len(trees))
    return (max(1, math.floor(estimate - spread)), max(1, math.ceil(estimate + spread)),
            estimate)
