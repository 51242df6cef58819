"""An XGBoost booster's learning rate and L2 penalty, and its first tree's class counts,
read from the leaf values and covers (the model file keeps neither option).

In a first-round tree every row starts at the same probability p, so a leaf of n rows, P of
them positive, has the gradient sum n·p - P, its cover H, and the value
w = -η(n·p - P)/(H + λ); with a = 1/η and c = λ/η,

    P - n·p = w·(a·H + c),   P whole, 0 <= P <= n.

Two leaves with different covers and a guess of their positives fix (a, c); every other leaf
must then give whole positives, and a tree's positives add up to its class total, the whole
number nearest N·p (XGBoost's default base score is the class share, kept in float32). Every
guess of the two smallest such leaves is tried at once (numpy), the guesses narrowed leaf by
leaf with (a, c) refitted by least squares as they go, then checked at float32's precision.
No sum of leaf values divides anything, so values that all but cancel read like any other.

A first tree of two or three leaves can fit several (a, c). The second tree settles it: its
rows start at the first tree's probabilities p_k, so a leaf's cover C = Σ m_k·p_k(1 - p_k)
over the first tree's leaves k pins the rows m_k it takes from each, and its positives
Σ m_k·p_k + v·(a·C + c) obey the same rule, with its value v.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from treeleaks.runtime.errors import UnsupportedModelError

ROUGH = 0.1  # of a row: counts from (a, c) fitted to a few leaves, before the fit to all
WHOLE_TOLERANCE = 1e-3  # float32 values: counts derived this close to whole are whole
DISTINCT = 1e-6  # relative: covers closer than this give no second equation
APART = 0.05  # relative: a second pivot's cover this far from the first's, where one is (the
# second tree often repeats a first-tree leaf with a cover 1e-4 off: near-parallel equations
# whose float32 noise moves (a, c) by more than a count)
MOST_GUESSES = 4_000_000  # guesses of the two pivot leaves' positives tried at once
CANCEL = 1e-5  # relative: leaf values whose sum is this near 0 leave the total no equation
SIGNAL = 1e-3  # a pivot leaf's |w|·H per row (at most its gradient sum per row), against the
# largest of the leaves': a leaf whose rows' gradients cancel keeps float32's noise, under
# 1e-6 of the largest measured, and that noise stays a small part of a pivot's equation;
# relative, as |w|·H = η·G·H/(H+λ) scales with the rate and penalty
MOST_SPLITS = 1_000_000  # splits of one second-tree leaf's cover tried
COVER_PRECISION = 4e-6  # relative: a cover against a split's hessians (float32 values and
# XGBoost's float32 probabilities against ours)
SHOWN = 5  # learning rates named in a refusal
# the training options an XGBoost file does not record that break the count derivation
UNRECORDED = ("trained with subsample below 1 (each tree fitted on a sample of the rows) or "
              "sample weights")


@dataclass(frozen=True)
class Leaves:
    """Leaves obeying P - offset = value·(a·cover + c) with P whole in [0, bound], each
    of a ``tree`` (0 the first, 1 the second)."""

    offset: np.ndarray
    value: np.ndarray
    cover: np.ndarray
    bound: np.ndarray
    tree: np.ndarray

    @staticmethod
    def first(rows: np.ndarray, cover: np.ndarray, value: np.ndarray, start: float
              ) -> Leaves:
        """A first-round tree's leaves: every row starts at ``start``."""
        rows = np.asarray(rows, dtype=np.float64)
        return Leaves(rows * start, np.asarray(value, np.float64),
                      np.asarray(cover, np.float64), rows.astype(np.int64),
                      np.zeros(rows.size, dtype=np.int64))

    def __add__(self, other: Leaves) -> Leaves:
        return Leaves(*(np.concatenate([getattr(self, f), getattr(other, f)])
                        for f in ("offset", "value", "cover", "bound", "tree")))


def fits(leaves: Leaves, totals: dict[int, int]) -> list[tuple[float, np.ndarray, float]]:
    """Every (rate η, the first tree's positives per leaf, penalty λ) that makes every
    leaf's positives whole, adding up to ``totals[t]`` in each tree t it names, with
    0 < η <= 1 and λ >= 0; distinct positives only."""
    start = _guesses(leaves, totals)
    if start is None:
        return []
    columns, normal = start
    a, c = normal.solve()
    for k in (int(k) for k in np.argsort(leaves.bound, kind="stable")):
        if k in columns:
            continue
        with np.errstate(invalid="ignore"):  # parallel equations solve to inf: dropped
            derived = leaves.offset[k] + leaves.value[k] * (a * leaves.cover[k] + c)
        whole = np.rint(derived)
        keep = (np.abs(derived - whole) <= ROUGH) & (whole >= 0) & (whole <= leaves.bound[k])
        columns = {leaf: column[keep] for leaf, column in columns.items()}
        columns[k] = whole[keep]
        normal = normal.keep(keep)
        normal.add(leaves, k, columns[k])
        a, c = normal.solve()
    counts = np.column_stack([columns[k] for k in range(leaves.bound.size)])
    keep = (a >= 1.0 - ROUGH) & (c >= -ROUGH * a)
    for tree, total in totals.items():
        keep &= counts[:, leaves.tree == tree].sum(axis=1) == total
    found: dict[bytes, tuple[float, np.ndarray, float]] = {}
    for row in np.unique(counts[keep], axis=0):
        fitted = _checked(leaves, row)
        if fitted is not None:
            found.setdefault(fitted[1].tobytes(), fitted)
    return list(found.values())


def _guesses(leaves: Leaves, totals: dict[int, int]
             ) -> tuple[dict[int, np.ndarray], _Normal] | None:
    """Every guess of the pivot leaves' positives, with the normal equations they give.
    When the two smallest leaves' guesses are too many (a tree of a few large leaves), or
    no second leaf has a cover of its own, the first tree's positives adding up to its
    total stand in for the second leaf, unless its values cancel to float32's precision.
    None: no leaf's gradient sum rises above float32's noise."""
    pivots = _pivots(leaves)
    if not pivots:
        return None
    i = pivots[0]
    if len(pivots) == 2 and (leaves.bound[i] + 1) * (leaves.bound[pivots[1]] + 1) <= MOST_GUESSES:
        j = pivots[1]
        guess_i, guess_j = (g.ravel().astype(np.float64) for g in np.meshgrid(
            np.arange(leaves.bound[i] + 1), np.arange(leaves.bound[j] + 1), indexing="ij"))
        normal = _Normal(guess_i.size)
        normal.add(leaves, i, guess_i)
        normal.add(leaves, j, guess_j)
        return {i: guess_i, j: guess_j}, normal
    first = leaves.tree == 0
    values = leaves.value[first]
    if 0 not in totals or abs(values.sum()) <= CANCEL * np.abs(values).sum():
        raise UnsupportedModelError(
            "the first XGBoost tree's leaf values cancel and its smallest leaves hold "
            f"{leaves.bound[i]} and more rows: too many guesses of their positives to "
            "recover its learning rate; treeleaks refuses to guess its classes")
    guess = np.arange(leaves.bound[i] + 1, dtype=np.float64)
    normal = _Normal(guess.size)
    normal.add_row(float((values * leaves.cover[first]).sum()), float(values.sum()),
                   np.full(guess.size, totals[0] - leaves.offset[first].sum()))
    normal.add(leaves, i, guess)
    return {i: guess}, normal


def _pivots(leaves: Leaves) -> list[int]:
    """The leaf of fewest rows whose gradient sum per row is well above float32's noise
    (`SIGNAL`), and the next such whose cover is `APART` from its (two independent
    equations in a and c; else the one whose cover is farthest), as far as there are."""
    signal = np.abs(leaves.value) * leaves.cover / np.maximum(leaves.bound, 1)
    usable = signal > SIGNAL * float(signal.max())
    order = [int(k) for k in np.argsort(leaves.bound, kind="stable") if usable[k]]
    if not order:
        return []
    first = order[0]
    scale = float(np.abs(leaves.cover).max())
    gap = {k: abs(leaves.cover[k] - leaves.cover[first]) for k in order[1:]}
    apart = [k for k in order[1:] if gap[k] > DISTINCT * scale]
    if not apart:
        return [first]
    wide = [k for k in apart if gap[k] > APART * max(leaves.cover[k], leaves.cover[first])]
    return [first, wide[0] if wide else max(apart, key=gap.__getitem__)]


class _Normal:
    """The normal equations of the least-squares fit of (a, c), one per guess."""

    def __init__(self, n: int) -> None:
        self.sums = np.zeros((n, 5))  # Σx1², Σx1x2, Σx2², Σx1y, Σx2y

    def add(self, leaves: Leaves, k: int, positives: np.ndarray) -> None:
        """Leaf k's equation at each guess of its ``positives``."""
        self.add_row(float(leaves.value[k] * leaves.cover[k]), float(leaves.value[k]),
                     positives - leaves.offset[k])

    def add_row(self, x1: float, x2: float, y: np.ndarray) -> None:
        """The equation x1·a + x2·c = y, one y per guess."""
        self.sums += np.column_stack([np.full(y.size, x1 * x1), np.full(y.size, x1 * x2),
                                      np.full(y.size, x2 * x2), x1 * y, x2 * y])

    def keep(self, mask: np.ndarray) -> _Normal:
        kept = _Normal(0)
        kept.sums = self.sums[mask]
        return kept

    def solve(self) -> tuple[np.ndarray, np.ndarray]:
        s11, s12, s22, s1y, s2y = self.sums.T
        det = s11 * s22 - s12 * s12
        with np.errstate(divide="ignore", invalid="ignore"):
            return (s22 * s1y - s12 * s2y) / det, (s11 * s2y - s12 * s1y) / det


def _checked(leaves: Leaves, counts: np.ndarray) -> tuple[float, np.ndarray, float] | None:
    """(η, the first tree's positives, λ) fitted to every leaf from whole ``counts``, or
    None when the fit leaves a count off whole, η outside (0, 1] or λ below 0."""
    design = np.column_stack([leaves.value * leaves.cover, leaves.value])
    (a, c), *_ = np.linalg.lstsq(design, counts - leaves.offset, rcond=None)
    if not (a >= 1.0 - 1e-9 and np.isfinite(a)) or c < -WHOLE_TOLERANCE * a:
        return None
    derived = leaves.offset + design @ [a, c]
    if np.abs(derived - counts).max() > WHOLE_TOLERANCE:
        return None
    return 1.0 / float(a), counts[leaves.tree == 0].astype(np.int64), max(float(c / a), 0.0)


def second_tree(rows: np.ndarray, value: np.ndarray, margin: float, cover: np.ndarray,
                later: np.ndarray, used: str = "") -> tuple[Leaves, bool] | None:
    """The second tree's leaves whose covers split one way over the first tree's leaves
    (see the module doc), as `Leaves` of tree 1, and whether that is every leaf (so their
    positives add up to the class total); None when the splits to try are more than
    `MOST_SPLITS` or no leaf splits one way. A cover no split gives is refused: the first
    tree's values are not the ones the second tree's rows started from (blamed on ``used``,
    the training options known to leave the derivation out, else on an edit)."""
    order = np.argsort(rows, kind="stable")  # the largest leaf last: it is not enumerated
    rows, value = np.asarray(rows)[order].astype(np.int64), np.asarray(value)[order]
    if np.prod(rows[:-1] + 1.0) > MOST_SPLITS:
        return None
    p = 1.0 / (1.0 + np.exp(-(margin + value)))
    h = p * (1.0 - p)
    grids = np.meshgrid(*(np.arange(n + 1) for n in rows[:-1]), indexing="ij")
    head = np.column_stack([g.ravel() for g in grids]).astype(np.float64)
    kept: list[tuple[float, float, float, int]] = []
    for leaf, (leaf_cover, leaf_value) in enumerate(zip(cover, later, strict=True)):
        rest = leaf_cover - head @ h[:-1]
        whole = np.rint(rest / h[-1])
        ok = ((np.abs(rest - whole * h[-1]) <= COVER_PRECISION * (leaf_cover + 1.0))
              & (whole >= 0) & (whole <= rows[-1]))
        splits = np.column_stack([head[ok], whole[ok]])
        if not splits.size:
            head = (f"the second XGBoost tree's leaf {leaf} has a cover ({leaf_cover:g}) that "
                    "no rows of the first tree's leaves give")
            raise UnsupportedModelError(
                f"{head}: the model was trained with {used}, which the derivation leaves "
                "out; treeleaks refuses to guess its classes" if used else
                f"{head}: the file's values contradict each other at tree 0: edited or "
                f"truncated? (or {UNRECORDED}, which the file does not record; treeleaks "
                "refuses to guess its classes)")
        starts, sizes = splits @ p, splits.sum(axis=1)
        if np.ptp(starts) <= 1e-9 and np.ptp(sizes) == 0:
            kept.append((float(starts[0]), float(leaf_value), float(leaf_cover),
                         int(sizes[0])))
    if not kept:
        return None
    offset, values, covers, bound = (np.array(x) for x in zip(*kept, strict=True))
    return Leaves(offset, values, covers, bound.astype(np.int64),
                  np.ones(bound.size, dtype=np.int64)), len(kept) == cover.size


def whole_by_rate(rows: np.ndarray, cover: np.ndarray, value: np.ndarray, start: float
                  ) -> list[tuple[float, np.ndarray, float]]:
    """Every (η, positives, λ) a first-round tree's values fit on their own, its positives
    adding up to the whole number nearest its rows times ``start``."""
    return fits(Leaves.first(rows, cover, value, start), {0: int(np.rint(rows.sum() * start))})


def first_tree_positives(rows: np.ndarray, cover: np.ndarray, value: np.ndarray,
                         base: float, used: str = "",
                         second: tuple[np.ndarray, np.ndarray] | None = None
                         ) -> tuple[np.ndarray, float, float]:
    """A binary booster's first-tree positives per leaf, with the learning rate and L2
    penalty that make them whole (``second``: the second tree's covers and values, read
    too where its covers split over the first tree's leaves), or a refusal (blaming ``used``, the
    options the file records that the derivation leaves out, else an edit)."""
    if rows.size == 1:
        raise UnsupportedModelError(
            "the first XGBoost tree is a single leaf: its value pins no learning rate, so "
            "the later trees' sums cannot be read; treeleaks refuses to guess them")
    first = Leaves.first(rows, cover, value, base)
    totals = {0: int(np.rint(rows.sum() * base))}
    split = None if second is None else second_tree(
        rows, value, float(np.log(base / (1.0 - base))), *second, used=used)
    leaves = first
    if split is not None:
        later, complete = split
        leaves = first + later
        totals = {**totals, **({1: totals[0]} if complete else {})}
    found = fits(leaves, totals)
    if len(found) == 1:
        eta, whole, l2 = found[0]
        return whole, eta, l2
    if not found and not _pivots(leaves):
        raise UnsupportedModelError(
            "the first XGBoost tree's leaf values are all 0: they pin no learning rate (a "
            "learning rate of 0?), so its classes' counts cannot be read; treeleaks refuses "
            "to guess them")
    if found:
        rates = ", ".join(f"{eta:g}" for eta, _, _ in found[:SHOWN])
        more = f" and {len(found) - SHOWN:,} more" if len(found) > SHOWN else ""
        raise UnsupportedModelError(
            f"the first XGBoost tree's leaf values give whole class counts for several "
            f"learning rates ({rates}{more}) that disagree on them, and its second tree "
            "does not settle which; treeleaks refuses to guess")
    head = ("the first XGBoost tree's leaf values give no whole class counts for any "
            "learning rate")
    if used:
        raise UnsupportedModelError(f"{head}: the model was trained with {used}, which the "
                                    "derivation leaves out; treeleaks refuses to guess its "
                                    "classes")
    raise UnsupportedModelError(
        f"{head}: the file's values contradict each other at tree 0: edited or truncated? "
        f"(or {UNRECORDED}, a base score of its own, alpha or max_delta_step, which the "
        "file does not record; treeleaks refuses to guess its classes)")
