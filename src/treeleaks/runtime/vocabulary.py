"""The words every attack, the report, the sweep and the command line share.

How a run ended, how the cells were found, and which model of the training was solved. They
are `StrEnum`s, so each member is also its plain string: ``Status.OPTIMAL == "OPTIMAL"``,
and JSON and CSV outputs carry the string.

Two words for how something ended, kept apart: `Status` is an *attack's* outcome, the one
every result's ``status`` holds and every output prints; `SolverStatus` is a *solver's*
word, as the count system's solvers (`treeleaks.counts`) return it. An attack turns the
second into the first with `Status.solved` where its result is made: a solver's word never
reaches a result, and an attack's words (``done``, ``partial``) never come from a solver.

How often a tree drew a row is called its *draws* everywhere users read it; the model
file keeps the field name ``multiplicities`` and the audit report its key
``multiplicities_exposed`` (published formats), the command line accepts
``--ignore-multiplicities`` beside ``--ignore-draws``, and sweep grids the axis
``ignore_multiplicities`` beside ``ignore_draws``.
"""

from __future__ import annotations

from enum import StrEnum


class SolverStatus(StrEnum):
    """How a solver's run ended, in the solver's words.

    CP-SAT's status names, which the HiGHS calls are mapped onto. Attacks report `Status`,
    through `Status.solved`.
    """

    OPTIMAL = "OPTIMAL"  # a solution, proven the best under the objective
    FEASIBLE = "FEASIBLE"  # a solution, not proven the best (time ran out)
    INFEASIBLE = "INFEASIBLE"  # proven: no solution
    UNKNOWN = "UNKNOWN"  # no solution found in time, none ruled out
    MODEL_INVALID = "MODEL_INVALID"  # CP-SAT refused the model


class Status(StrEnum):
    """How an attack's run ended: the ``status`` of every attack's result."""

    OPTIMAL = "OPTIMAL"  # a complete answer, the best under the attack's objective
    FEASIBLE = "FEASIBLE"  # a complete answer, not proven the best (time ran out, fallback)
    INFEASIBLE = "INFEASIBLE"  # no training set reproduces the model: it was altered
    UNKNOWN = "UNKNOWN"  # no complete answer in time; what was proven, if anything
    DONE = "done"  # an attack without a solver ran to the end
    PARTIAL = "partial"  # an attack without a solver stopped at its budget: lower bounds

    @classmethod
    def solved(cls, word: SolverStatus) -> Status:
        """The attack's outcome a solver's word gives, when the solver's answer is the attack's.

        Parameters
        ----------
        word : SolverStatus
            The solver's word.

        Returns
        -------
        Status
            The same word, and ``UNKNOWN`` for a model the solver refused.
        """
        return cls.UNKNOWN if word == SolverStatus.MODEL_INVALID else cls(word.value)


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
