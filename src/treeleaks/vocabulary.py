"""The words every attack, the report, the sweep and the command line share.

How a run ended, how the cells were found, and which model of the training was solved. They
are `StrEnum`s, so each member is also its plain string: ``Status.OPTIMAL == "OPTIMAL"``,
and JSON and CSV outputs carry the string.

How often a tree drew a row is called its *draws* everywhere users read it; the model
file keeps the field name ``multiplicities`` and the audit report its key
``multiplicities_exposed`` (published formats), the command line accepts
``--ignore-multiplicities`` beside ``--ignore-draws``, and sweep grids the axis
``ignore_multiplicities`` beside ``ignore_draws``.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """How an attack's run ended."""

    OPTIMAL = "OPTIMAL"  # a complete answer, the best under the attack's objective
    FEASIBLE = "FEASIBLE"  # a complete answer, not proven the best (time ran out, fallback)
    INFEASIBLE = "INFEASIBLE"  # no training set reproduces the model: it was altered
    UNKNOWN = "UNKNOWN"  # no complete answer in time; what was proven, if anything
    DONE = "done"  # an attack without a solver ran to the end
    PARTIAL = "partial"  # an attack without a solver stopped at its budget: lower bounds


class Strategy(StrEnum):
    """How the reconstruction found the cells of the trees' common refinement."""

    AUTO = "auto"  # list them within the budget, generate them beyond it
    ENUMERATE = "enumerate"  # every cell listed
    GENERATE = "generate"  # cells generated on demand by pricing
    PER_ROW = "per-row"  # no cells: one leaf per (row, drawing tree), draws known


class Formulation(StrEnum):
    """Which model of the training the reconstruction solved."""

    EXACT = "exact"  # every tree saw every row once
    BOOTSTRAP_KNOWN = "bootstrap-known"  # rows drawn with replacement, draws read off the model
    BOOTSTRAP_UNKNOWN = "bootstrap-unknown"  # rows drawn with replacement, draws inferred
    DP = "dp"  # noisy (differentially private) counts
    # a regression forest's rows drawn with replacement, draws read off the model, each
    # row's target among its leaves' values
    REGRESSION_BOOTSTRAP_KNOWN = "regression-bootstrap-known"
    # a regression model whose trees each saw every row once, target by target
    REGRESSION_EXACT = "regression-exact"
    # a boosted regressor: its cells' rows and target sums, or the rows single-row leaves
    # prove, each target within its interval
    REGRESSION_BOOSTED = "regression-boosted"
    # a regression forest grown with limits: one tree's rows, each target within the
    # interval its leaf's mean and variance allow
    REGRESSION_LEAVES = "regression-leaves"
