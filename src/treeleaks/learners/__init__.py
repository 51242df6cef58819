"""Small learners of interpretable models, for experiments on what they reveal."""

from treeleaks.learners.greedy_rule_list import GreedyRuleListClassifier

__all__ = ["GreedyRuleListClassifier"]
