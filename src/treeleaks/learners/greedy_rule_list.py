"""A small greedy rule-list learner, so experiments need no unmaintained package.

Top-down: each step picks, on the rows no earlier rule captured, the conjunction of at most
``max_width`` literals (``x_j <= t`` or ``x_j > t``) whose capture split has the lowest
weighted Gini impurity, built one literal at a time; every rule captures at least
``min_support`` of the training rows. It stops after ``max_length`` rules, when the rest
is pure, or when no rule improves the impurity; the rest gets the default rule. The fitted
rule list, with each rule's per-class supports, is ``rule_list_`` (the treeleaks IR).
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from treeleaks.frontends.rule_list import Condition, Rule, RuleList


class GreedyRuleListClassifier(ClassifierMixin, BaseEstimator):
    """Greedy, Gini-driven rule list (a scikit-learn classifier).

    max_length: rules before the default; max_width: literals per rule; min_support:
    fraction of the training rows each rule must capture; max_thresholds: candidate cut
    points per column (quantiles when a column has more distinct values).
    """

    def __init__(self, max_length: int = 5, max_width: int = 2, min_support: float = 0.01,
                 max_thresholds: int = 16) -> None:
        self.max_length = max_length
        self.max_width = max_width
        self.min_support = min_support
        self.max_thresholds = max_thresholds

    def fit(self, X, y) -> GreedyRuleListClassifier:
        X, y = validate_data(self, X, y)
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        onehot = np.eye(len(self.classes_), dtype=np.int64)[codes]
        literals, masks = self._literals(X)
        min_rows = max(1, math.ceil(self.min_support * X.shape[0]))
        free = np.ones(X.shape[0], dtype=bool)
        self.rules_: list[tuple[list[int], int]] = []
        while len(self.rules_) < self.max_length and len(np.unique(codes[free])) > 1:
            chosen, captured = self._best_rule(masks, onehot, free, min_rows)
            if not chosen:
                break
            self.rules_.append((chosen, int(onehot[captured].sum(axis=0).argmax())))
            free &= ~captured
        remaining = onehot[free].sum(axis=0) if free.any() else onehot.sum(axis=0)
        self.default_ = int(remaining.argmax())
        self.literals_ = literals
        self.rule_list_ = self._to_rule_list(masks, onehot)
        return self

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        out = np.full(X.shape[0], self.default_)
        free = np.ones(X.shape[0], dtype=bool)
        for chosen, label in self.rules_:
            hit = free & np.all([self._holds(X, self.literals_[i]) for i in chosen], axis=0)
            out[hit] = label
            free &= ~hit
        return self.classes_[out]

    # --- learning ------------------------------------------------------------------------

    def _literals(self, X: np.ndarray) -> tuple[list[tuple[int, str, float]], np.ndarray]:
        literals, masks = [], []
        for j in range(X.shape[1]):
            values = np.unique(X[:, j])
            cuts = (values[:-1] + values[1:]) / 2
            if cuts.size > self.max_thresholds:
                cuts = np.unique(np.quantile(cuts, np.linspace(0, 1, self.max_thresholds)))
            for t in cuts.tolist():
                for op in ("<=", ">"):
                    literals.append((j, op, t))
                    masks.append(self._holds(X, (j, op, t)))
        return literals, np.array(masks, dtype=bool).reshape(len(masks), X.shape[0]).T

    @staticmethod
    def _holds(X: np.ndarray, literal: tuple[int, str, float]) -> np.ndarray:
        j, op, t = literal
        return X[:, j] <= t if op == "<=" else X[:, j] > t

    def _best_rule(self, masks: np.ndarray, onehot: np.ndarray, free: np.ndarray,
                   min_rows: int) -> tuple[list[int], np.ndarray]:
        """The conjunction (literal indices) of lowest split impurity on the free rows,
        grown one literal at a time, and the free rows it captures."""
        total = onehot[free].sum(axis=0)
        best = _gini(total[None])[0]
        chosen: list[int] = []
        captured = free.copy()
        for _ in range(self.max_width):
            inside = masks[captured].T.astype(np.int64) @ onehot[captured]  # (L, K)
            size = inside.sum(axis=1)
            score = _gini(inside) + _gini(total - inside)
            score[(size < min_rows) | (size == captured.sum())] = np.inf
            pick = int(np.argmin(score))
            if not score[pick] < best - 1e-12:
                break
            best = score[pick]
            chosen.append(pick)
            captured = captured & masks[:, pick]
        return chosen, captured

    def _to_rule_list(self, masks: np.ndarray, onehot: np.ndarray) -> RuleList:
        names = [str(n) for n in getattr(self, "feature_names_in_", [])] or [
            f"x{j}" for j in range(self.n_features_in_)]
        free = np.ones(onehot.shape[0], dtype=bool)
        rules = []
        for chosen, label in self.rules_:
            hit = free & np.all(masks[:, chosen], axis=1)
            conditions = tuple(Condition(names[self.literals_[i][0]], self.literals_[i][1],
                                         self.literals_[i][2]) for i in chosen)
            rules.append(Rule(conditions, _plain(self.classes_[label]),
                              tuple(onehot[hit].sum(axis=0).tolist())))
            free &= ~hit
        default = Rule((), _plain(self.classes_[self.default_]),
                       tuple(onehot[free].sum(axis=0).tolist()))
        return RuleList(rules, default, names, [_plain(c) for c in self.classes_],
                        n_rows_declared=int(onehot.shape[0]),
                        source="treeleaks.GreedyRuleListClassifier")


def _gini(counts: np.ndarray) -> np.ndarray:
    """Size-weighted Gini impurity of each row of class counts."""
    size = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        purity = np.where(size > 0, (counts**2).sum(axis=1) / np.maximum(size, 1), 0)
    return size - purity


def _plain(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value
