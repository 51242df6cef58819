"""Spot binary columns that look like one-hot encodings, so the user can declare them.

A schema's groups change the cost of a reconstruction by orders of magnitude (a 27-column
dataset: 14 s without its groups, 0.6 s with them), but treeleaks never assumes them: a
wrong group would make real rows impossible. It only suggests them, from two signs: binary
columns share a name prefix (``age:18-20``, ``age:21-22``; ``education_HS``), and no leaf
holding training rows forces two of them to 1.

The prefix is cut at a separator (``:``, ``=``, ``_`` or ``__``), and each column goes under
the longest prefix it shares with another column: ``cat__sex_f`` and ``cat__sex_m`` form
``cat__sex``, not ``cat``, so columns of two encoded attributes are not merged (a value that
holds a separator itself, ``workclass_Self_emp_inc``, can split a group in two smaller ones,
which stay true at-most-one groups).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np

from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema

SEPARATOR = re.compile(r"__|[:=_]")


@dataclass(frozen=True)
class SuggestedGroup:
    """Columns that look like one encoded attribute; ``exactly_one`` unless some leaf holds
    rows with every member 0 (then at most one can be 1)."""

    prefix: str
    columns: list[str]
    exactly_one: bool


def suggest_groups(model: ReleasedModel) -> list[SuggestedGroup]:
    """Groups of binary columns sharing a name prefix that the model does not contradict.

    None for a model whose leaves are reached by several paths: only a reader's spelled-out
    gaps and categories make them, and its input map states their groups.
    """
    if any(tree.aliased for tree in model.trees):
        return []
    kinds = FeatureSchema.infer(model).kind_array()
    binary = [j for j in range(model.n_features) if kinds[j] == "binary"]
    by_prefix = _by_prefix([model.feature_names[j] for j in binary])
    candidates = {p: np.array([binary[i] for i in members]) for p, members in by_prefix.items()}
    if not candidates:
        return []
    forced_one, all_zero = _leaf_facts(model, candidates)
    return [
        SuggestedGroup(p, [model.feature_names[j] for j in cols], not all_zero[p])
        for p, cols in candidates.items() if not forced_one[p]
    ]


def schema_json(groups: list[SuggestedGroup]) -> dict[str, list[list[str]]]:
    """The groups in the ``--schema`` JSON form."""
    return {
        "one_hot_groups": [g.columns for g in groups if g.exactly_one],
        "at_most_one_groups": [g.columns for g in groups if not g.exactly_one],
    }


def _by_prefix(names: list[str]) -> dict[str, list[int]]:
    """Positions of the names under the longest prefix each shares with another name;
    prefixes holding at least two."""
    prefixes = [_prefixes(name) for name in names]
    sharing = Counter(p for options in prefixes for p in set(options))
    groups: dict[str, list[int]] = defaultdict(list)
    for i, options in enumerate(prefixes):
        shared = [p for p in options if sharing[p] >= 2]
        if shared:
            groups[max(shared, key=len)].append(i)
    return {p: members for p, members in groups.items() if len(members) >= 2}


def _prefixes(name: str) -> list[str]:
    """Every cut of ``name`` at a separator that leaves a name before it and a value after."""
    return [name[:m.start()] for m in SEPARATOR.finditer(name)
            if m.start() > 0 and name[m.start() - 1] not in ":=_" and m.end() < len(name)]


def _leaf_facts(
    model: ReleasedModel, candidates: dict[str, np.ndarray]
) -> tuple[dict[str, bool], dict[str, bool]]:
    """Per prefix: does a leaf with rows force two members to 1, or every member to 0?"""
    forced_one = dict.fromkeys(candidates, False)
    all_zero = dict.fromkeys(candidates, False)
    for tree in model.trees:
        lower, upper = tree.leaf_boxes(model.n_features)
        occupied = tree.counts.sum(axis=1) > 0
        for prefix, cols in candidates.items():
            ones = (lower[occupied][:, cols] >= 0).sum(axis=1)
            zeros = (upper[occupied][:, cols] < 1).all(axis=1)
            forced_one[prefix] |= bool((ones >= 2).any())
            all_zero[prefix] |= bool(zeros.any())
    return forced_one, all_zero
