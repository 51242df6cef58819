"""How many attribute vectors each rule of a rule list captures, counted two ways.

A vector is captured by rule j when it satisfies rule j's antecedent (a box) and none of
rules 1..j-1. Two independent counts, which the tests show agree:

- `capt_recursion`: the paper's recursion (Ferry et al., SaTML 2024, Eqs. 13-15):
  Capt(f_l, g) = num(f_l ∧ g) - Σ_{h<l} Capt(f_h, f_l ∧ g), and
  Capt(f_j) = num(f_j) - Σ_{l<j} Capt(f_l, f_j): inclusion-exclusion over the overlaps of
  earlier rules, exponential in the number of rules but pruned where an overlap is empty.
- `captured_pieces`: complement splitting, what `rule_list_reconstruction` counts with.
  The captured set, rule j's box minus the earlier boxes, is cut into disjoint boxes
  (peel off, column by column, the part of the box outside the first earlier box that
  meets it); each piece's count is the product of its per-attribute counts, which
  respect the schema's groups.

Counts are exact Python integers (they can exceed 2^63 on wide schemas).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from treeleaks.attacks.attributes import Attribute, box_count

Box = tuple[np.ndarray, np.ndarray]


def intersect(a: Box, b: Box) -> Box:
    return np.maximum(a[0], b[0]), np.minimum(a[1], b[1])


def capt_recursion(attributes: list[Attribute], boxes: list[Box]) -> list[int]:
    """Vectors captured by each box of an ordered list (the paper's Capt recursion)."""

    def num(box: Box) -> int:
        return box_count(attributes, *box)

    def capt(rule: int, within: Box) -> int:  # vectors of `within` that `rule` captures
        overlap = intersect(boxes[rule], within)
        total = num(overlap)
        if total == 0:
            return 0
        return total - sum(capt(h, overlap) for h in range(rule))

    return [capt(j, boxes[j]) for j in range(len(boxes))]


def captured_pieces(attributes: list[Attribute], box: Box,
                    earlier: list[Box]) -> Iterator[Box]:
    """Disjoint boxes, each admitting at least one vector, whose union is the part of
    ``box`` outside every box of ``earlier`` (within the schema)."""
    stack = [(box, 0)]
    while stack:
        (lower, upper), k = stack.pop()
        if box_count(attributes, lower, upper) == 0:
            continue
        while k < len(earlier) and box_count(attributes,
                                             *intersect((lower, upper), earlier[k])) == 0:
            k += 1
        if k == len(earlier):
            yield lower, upper
            continue
        e_lower, e_upper = earlier[k]
        lower, upper = lower.copy(), upper.copy()
        for j in np.flatnonzero((e_lower > lower) | (e_upper < upper)):
            if e_lower[j] > lower[j]:  # the slice below the earlier box on column j
                below = upper.copy()
                below[j] = min(upper[j], e_lower[j])
                stack.append(((lower.copy(), below), k + 1))
                lower[j] = e_lower[j]
            if e_upper[j] < upper[j]:  # the slice above it
                above = lower.copy()
                above[j] = max(lower[j], e_upper[j])
                stack.append(((above, upper.copy()), k + 1))
                upper[j] = e_upper[j]
        # what is left lies inside the earlier box: captured before, dropped
