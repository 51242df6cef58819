"""The rule-list IR: what an adversary sees in a released rule list, JSON in and out.

A rule list is an ordered list of rules, each a conjunction of conditions on columns with a
prediction and, when the release shows it, the per-class number of training rows it
captures (its support), followed by the default rule. A row is captured by the first rule
it satisfies. The JSON form::

    {"format": "treeleaks.RuleList", "feature_names": ["a1", "a2", "a3"], "classes": [0, 1],
     "rules": [{"if": [{"feature": "a1", "op": "==", "value": 1}], "then": 1,
                "counts": [0, 2]}, ...],
     "default": {"then": 1, "counts": [0, 1]}, "n_rows": 5}

Conditions are ``feature <= value``, ``feature > value`` (any column) or
``feature == value`` (a whole number: binary and ordinal columns). ``counts`` are given for
every rule and the default, or for none; ``n_rows``, when given, must be their total.
`from_imodels` reads what a fitted imodels ``GreedyRuleListClassifier`` shows.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from treeleaks.ir.description import ModelDescription, ModelKind, StoredField
from treeleaks.runtime.errors import TreeleaksError

FORMAT = "treeleaks.RuleList"
OPERATORS = ("<=", ">", "==")


class RuleListFormatError(TreeleaksError, ValueError):
    """A rule-list file is malformed; the message names the field at fault and the fix."""


@dataclass(frozen=True)
class Condition:
    feature: str
    op: str
    value: float

    def bounds(self) -> tuple[float, float]:
        """The condition as an interval ``lower < x <= upper`` (``==`` on whole numbers)."""
        if self.op == "<=":
            return -math.inf, self.value
        if self.op == ">":
            return self.value, math.inf
        return self.value - 1, self.value

    def __str__(self) -> str:
        return f"{self.feature} {self.op} {self.value:g}"


@dataclass(frozen=True)
class Rule:
    conditions: tuple[Condition, ...]
    prediction: Any
    counts: tuple[int, ...] | None = None

    def __str__(self) -> str:
        if not self.conditions:
            return f"else {self.prediction}"
        return f"if {' and '.join(map(str, self.conditions))} then {self.prediction}"


@dataclass
class RuleList:
    """Ordered rules then the default rule (``default.conditions`` is empty)."""

    rules: list[Rule]
    default: Rule
    feature_names: list[str]
    classes: list[Any]
    label_name: str = "label"
    n_rows_declared: int | None = None
    source: str = ""
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def all_rules(self) -> list[Rule]:
        return [*self.rules, self.default]

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def has_counts(self) -> bool:
        return self.default.counts is not None

    @property
    def n_rows(self) -> int | None:
        return sum(sum(r.counts) for r in self.all_rules) if self.has_counts else None

    def described(self) -> ModelDescription:
        """What the file is and gives away, in the words every command prints."""
        balance = None
        if self.has_counts:
            balance = tuple((str(c), int(sum(r.counts[k] for r in self.all_rules)))
                            for k, c in enumerate(self.classes))
        fields = (StoredField("counts", "each rule's class counts: with the rules before "
                              "it, the rows it alone holds"),) if self.has_counts else ()
        return ModelDescription(
            framework="treeleaks rule list", estimator=self.source, task="classification",
            kind=ModelKind.RULE_LIST, n_rows=self.n_rows,
            n_rows_how="the rules' counts add up to it" if self.has_counts else "",
            class_balance=balance, fields=fields)

    def boxes(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each rule's antecedent as a box ``lower < x <= upper`` (the default: everything)."""
        index = {name: j for j, name in enumerate(self.feature_names)}
        out = []
        for rule in self.all_rules:
            lower = np.full(self.n_features, -np.inf)
            upper = np.full(self.n_features, np.inf)
            for condition in rule.conditions:
                j = index[condition.feature]
                low, high = condition.bounds()
                lower[j], upper[j] = max(lower[j], low), min(upper[j], high)
            out.append((lower, upper))
        return out

    def thresholds(self) -> list[np.ndarray]:
        """Each column's sorted distinct cut points (of ``<=`` and ``>`` conditions)."""
        per_feature: list[list[float]] = [[] for _ in self.feature_names]
        index = {name: j for j, name in enumerate(self.feature_names)}
        for rule in self.rules:
            for c in rule.conditions:
                if c.op != "==":
                    per_feature[index[c.feature]].append(c.value)
        return [np.unique(np.asarray(v, dtype=np.float64)) for v in per_feature]

    def equality_columns(self) -> set[str]:
        return {c.feature for r in self.rules for c in r.conditions if c.op == "=="}

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The prediction of the first rule each row satisfies."""
        X = np.asarray(X, dtype=np.float64)
        out = np.full(X.shape[0], self.default.prediction, dtype=object)
        free = np.ones(X.shape[0], dtype=bool)
        for rule, (lower, upper) in zip(self.rules, self.boxes()):
            hit = free & np.all((lower < X) & (upper >= X), axis=1)
            out[hit] = rule.prediction
            free &= ~hit
        return out

    # --- JSON ----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        def rule_dict(rule: Rule) -> dict[str, Any]:
            out: dict[str, Any] = {"then": _plain(rule.prediction)}
            if rule.conditions:
                out = {"if": [{"feature": c.feature, "op": c.op, "value": c.value}
                              for c in rule.conditions], **out}
            if rule.counts is not None:
                out["counts"] = list(rule.counts)
            return out

        data: dict[str, Any] = {
            "format": FORMAT,
            "source": self.source,
            "feature_names": list(self.feature_names),
            "classes": [_plain(c) for c in self.classes],
            "label_name": self.label_name,
            "rules": [rule_dict(r) for r in self.rules],
            "default": rule_dict(self.default),
        }
        if self.n_rows_declared is not None:
            data["n_rows"] = self.n_rows_declared
        return data

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_dict(cls, data: Any) -> RuleList:
        """A rule list from its JSON form, every field checked."""
        if not isinstance(data, dict):
            raise RuleListFormatError("a rule-list file holds a JSON object, not "
                                      f"{type(data).__name__}")
        try:
            record = _RuleListRecord.model_validate(data)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"]) or "(top level)"
            raise RuleListFormatError(f"rule-list file: {where}: {error['msg']}") from None
        return record.to_rule_list()

    @classmethod
    def from_json(cls, path: str | Path) -> RuleList:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise RuleListFormatError(f"rule-list file {Path(path).name} is not valid JSON: "
                                      f"{exc}") from None
        return cls.from_dict(data)


def is_rule_list_json(data: Any) -> bool:
    """Whether parsed JSON is a rule list (it has ``rules``) rather than the model IR."""
    return isinstance(data, dict) and ("rules" in data or data.get("format") == FORMAT)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


# --- the checked JSON shape ----------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _ConditionRecord(_Strict):
    feature: str
    op: Literal["<=", ">", "=="]
    value: float = Field(allow_inf_nan=False)

    @field_validator("value", mode="before")
    @classmethod
    def _number(cls, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("a condition's value must be a number")
        return float(value)


class _RuleRecord(_Strict):
    conditions: list[_ConditionRecord] = Field(alias="if", min_length=1)
    then: str | int | float | bool
    counts: list[int] | None = None


class _DefaultRecord(_Strict):
    then: str | int | float | bool
    counts: list[int] | None = None


class _RuleListRecord(_Strict):
    format: Literal["treeleaks.RuleList"] = FORMAT
    source: str = ""
    feature_names: list[str] = Field(min_length=1)
    classes: list[str | int | float | bool] = Field(min_length=1)
    label_name: str = "label"
    rules: list[_RuleRecord]
    default: _DefaultRecord
    n_rows: int | None = Field(default=None, ge=0)

    def to_rule_list(self) -> RuleList:
        """The `RuleList` this record holds, every rule checked against the names and
        classes."""
        names = self.feature_names
        self._check_header()
        known = set(names)
        records = [*self.rules, self.default]
        rules = [_rule(record, "the default rule" if i > len(self.rules) else f"rule {i}",
                       self.classes, known)
                 for i, record in enumerate(records, start=1)]
        rule_list = RuleList(rules[:-1], rules[-1], list(names), list(self.classes),
                             self.label_name, self.n_rows, self.source)
        if self.n_rows is not None and rule_list.has_counts and rule_list.n_rows != self.n_rows:
            raise RuleListFormatError(f"the rules' supports add up to {rule_list.n_rows} rows "
                                      f"but n_rows is {self.n_rows}; fix the counts or n_rows")
        return rule_list

    def _check_header(self) -> None:
        """Refuse a feature or class named twice, and counts given for some rules only."""
        names = self.feature_names
        if len(set(names)) != len(names):
            raise RuleListFormatError("the rule list names a feature twice; names must differ")
        if len(set(map(repr, self.classes))) != len(self.classes):
            raise RuleListFormatError("the rule list lists a class twice; classes must differ")
        given = [r.counts is not None for r in self.rules] + [self.default.counts is not None]
        if any(given) and not all(given):
            raise RuleListFormatError("counts are given for some rules but not others; give "
                                      "every rule's and the default's per-class counts, or none")


def _rule(record: _RuleRecord | _DefaultRecord, where: str,
          classes: list[str | int | float | bool], known: set[str]) -> Rule:
    """One rule (``where``: its name in a refusal), its class, tests and counts checked."""
    if record.then not in classes:
        raise RuleListFormatError(f"{where} predicts {record.then!r}, which is not one "
                                  f"of the classes {classes}")
    conditions = tuple(Condition(c.feature, c.op, c.value)
                       for c in getattr(record, "conditions", []))
    _check_conditions(conditions, where, known)
    if record.counts is not None and (
            len(record.counts) != len(classes) or min(record.counts) < 0):
        raise RuleListFormatError(f"{where} has counts {record.counts}: give one count "
                                  f"of 0 or more per class ({len(classes)})")
    return Rule(conditions, record.then,
                None if record.counts is None else tuple(record.counts))


def _check_conditions(conditions: tuple[Condition, ...], where: str, known: set[str]) -> None:
    """Refuse a test of a feature the list does not name, or ``==`` with a fraction."""
    for c in conditions:
        if c.feature not in known:
            raise RuleListFormatError(f"{where} tests {c.feature!r}, which is not one of "
                                      "the rule list's feature_names")
        if c.op == "==" and c.value != round(c.value):
            raise RuleListFormatError(f"{where}: '{c}' compares with a fraction; "
                                      "'==' tests whole values (use <= and >)")


# --- imodels -------------------------------------------------------------------------------


def from_imodels(model: Any) -> RuleList:
    """The rule list a fitted imodels ``GreedyRuleListClassifier`` shows (its printout
    lists each rule's test, training rows and class-1 share): rule j captures the rows with
    ``x[col] >= cutoff`` (``<`` when flipped) that no earlier rule took. ``x >= c`` is
    stored exactly as ``x > c⁻`` (c⁻ the float just below c); per-class counts are
    ``round(rows * share)``; a rule predicts class 1 when its share exceeds 1/2, as imodels
    does."""
    rules_ = getattr(model, "rules_", None)
    if not rules_ or "num_pts" not in rules_[-1]:
        raise RuleListFormatError("the imodels model is not a fitted GreedyRuleListClassifier "
                                  "(no rules_); fit it first")
    classes = [_plain(c) for c in model.classes_]
    if len(classes) != 2:
        raise RuleListFormatError("imodels' greedy rule list is binary; this one has "
                                  f"{len(classes)} classes")
    names = getattr(model, "feature_names_", None)
    names = [str(n) for n in names] if names is not None else [
        f"X{j}" for j in range(int(model.n_features_in_))]

    def counts(rows: int, share: float) -> tuple[int, int]:
        positive = round(rows * share)
        return rows - positive, positive

    rules = []
    for raw in rules_[:-1]:
        below = float(np.nextafter(float(raw["cutoff"]), -np.inf))
        condition = Condition(names[int(raw["index_col"])], "<=" if raw["flip"] else ">", below)
        share = float(raw["val_right"])
        rules.append(Rule((condition,), classes[int(share > 0.5)],
                          counts(int(raw["num_pts_right"]), share)))
    share = float(rules_[-1]["val"])
    default = Rule((), classes[int(share > 0.5)], counts(int(rules_[-1]["num_pts"]), share))
    rule_list = RuleList(rules, default, names, classes,
                         source="imodels.GreedyRuleListClassifier")
    rule_list.n_rows_declared = rule_list.n_rows
    return rule_list
