"""The audit's steps, one object each, in the order the audit runs them (`STEPS`).

A step has a name (the report's key), a title, a weight (its claim on the audit's budget, by
the rule of `treeleaks.report.budget`), the words that rule names it by, ``applies`` (why
it does not apply to these inputs, "" when it does) and ``run`` (the attack within the
seconds the audit gives it). The weights are written here only: the budget's rule, the
``--budget`` help and the documentation's table are made from `STEPS`. A new step is one
subclass of `AuditStep` and one line in `STEPS`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from treeleaks.ir.model import ReleasedModel
    from treeleaks.report.evidence import AuditInput, Evidence
    from treeleaks.report.findings import AttackRun, Defence
    from treeleaks.runtime.progress import ProgressCallback


@dataclass(frozen=True)
class StepInputs:
    """What every step reads and adds to: the audit's input (never rebound: its
    ``total_budget`` stays the whole audit's), the evidence gathered so far, the defences
    measured, and the reconstruction engine's progress callback."""

    audit: AuditInput
    evidence: Evidence
    defences: list[Defence]
    progress: ProgressCallback | None = None


class AuditStep(ABC):
    """One attack of the audit (a subclass per attack, one instance in `STEPS`)."""

    name: ClassVar[str]
    title: ClassVar[str]
    rule_words: ClassVar[str]  # how the budget's rule names it
    weight: ClassVar[float] = 1.0

    def applies(self, inputs: StepInputs) -> str:
        """Why this step does not apply to ``inputs`` ("" when it does)."""
        return ""

    @abstractmethod
    def run(self, inputs: StepInputs, seconds: float) -> AttackRun:
        """Run the attack within ``seconds`` (this step's share of the budget)."""


def is_forest(model: ReleasedModel) -> bool:
    """Several trees, or one tree fitted as a forest (bootstrap, DP noise)."""
    return model.n_trees > 1 or model.bootstrap or model.noise is not None


def has_draws(model: ReleasedModel) -> bool:
    """Whether the model exposes per-tree draws (a bootstrap forest's random states)."""
    from treeleaks.attacks.reconstruction.bootstrap import has_draws as exposed

    return exposed(model)


def counts_removed(model: ReleasedModel) -> str:
    """Why an attack that reads counts does not apply ("" when the file has them)."""
    if model.counts_released:
        return ""
    if model.described().counts_removed_by_publisher:
        return "the counts were removed (a stripped file), and this attack reads them"
    return "the file stores no counts (its framework keeps none), and this attack reads them"


def regression_refusal(model: ReleasedModel) -> str:
    """Why the reconstruction does not read this regressor, or "" when it does."""
    from treeleaks.attacks.reconstruction.regression import refuse_regression
    from treeleaks.attacks.reconstruction.regression_boosted import is_boosted_regressor
    from treeleaks.runtime.errors import UnsupportedModelError

    if is_boosted_regressor(model):  # its own route, which takes every such booster
        return ""
    try:
        refuse_regression(model)
    except UnsupportedModelError as exc:
        return str(exc)
    return ""


class Reconstruct(AuditStep):
    """The forest reconstruction (`treeleaks reconstruct`), scored against the data."""

    name = "reconstruct"
    title = "Reconstruction of the training set"
    rule_words = "reconstruction"
    weight = 4.0

    def applies(self, inputs: StepInputs) -> str:
        model = inputs.audit.model
        if not (is_forest(model) or model.is_regression):
            return ("a single tree: the probabilistic reconstruction and singling out are "
                    "its attacks")
        refused = regression_refusal(model) if model.is_regression else ""
        return counts_removed(model) or refused

    def run(self, inputs: StepInputs, seconds: float) -> AttackRun:
        from treeleaks.report.evidence import reconstruction

        return reconstruction(inputs.audit, seconds, inputs.evidence, inputs.progress)


class SingleOut(AuditStep):
    """Predicate singling out; the adversary's guesses when the counts were removed."""

    name = "single-out"
    title = "Predicate singling out"
    rule_words = "singling out"

    def run(self, inputs: StepInputs, seconds: float) -> AttackRun:
        from treeleaks.report.evidence import guessing, singling_out

        if inputs.audit.model.counts_released:
            return singling_out(inputs.audit, seconds, inputs.evidence)
        return guessing(inputs.audit, inputs.evidence)


class Leak(AuditStep):
    """The probabilistic reconstruction of each tree alone (`treeleaks leak`)."""

    name = "leak"
    title = "Probabilistic reconstruction"
    rule_words = "the probabilistic reconstruction"

    def applies(self, inputs: StepInputs) -> str:
        model = inputs.audit.model
        if model.is_regression:
            return "a regression model: this attack reads classifiers"
        if model.noise is not None:
            return ("the leaf counts are noisy (DP); the probabilistic reconstruction needs "
                    "exact supports")
        return counts_removed(model)

    def run(self, inputs: StepInputs, seconds: float) -> AttackRun:
        from treeleaks.report.evidence import entropy_leak

        return entropy_leak(inputs.audit, seconds, inputs.evidence)


class WorstCase(AuditStep):
    """The custodian's proven bound for a bootstrap forest with known draws."""

    name = "worst-case"
    title = "Worst case over consistent datasets"
    rule_words = "worst case"
    weight = 2.0

    def applies(self, inputs: StepInputs) -> str:
        if not has_draws(inputs.audit.model):
            return "the model exposes no per-tree draws, as a bootstrap forest's may"
        missing = "needs your training rows, --data" if inputs.audit.data is None else ""
        return counts_removed(inputs.audit.model) or missing  # R's inbag: draws, no counts

    def run(self, inputs: StepInputs, seconds: float) -> AttackRun:
        from treeleaks.report.evidence import worst_case_bound

        return worst_case_bound(inputs.audit, seconds)


class LeakTest(AuditStep):
    """Is the reconstruction the training data or only the population (`leak-test`)?"""

    name = "leak-test"
    title = "Leak or distribution?"
    rule_words = "the leak test"

    def applies(self, inputs: StepInputs) -> str:
        inp = inputs.audit
        if not is_forest(inp.model):
            return "needs a forest's reconstruction"
        if inp.population is None or inp.data is None:
            return ("needs --data and --population, rows of the same population that were "
                    "not trained on")
        return ""

    def run(self, inputs: StepInputs, seconds: float) -> AttackRun:
        from treeleaks.report.evidence import leak_or_distribution

        return leak_or_distribution(inputs.audit, inputs.evidence)


class Prune(AuditStep):
    """Pruning re-measured: the singling out left after `treeleaks prune`."""

    name = "prune"
    rule_words = "pruning's re-measure"

    @property
    def title(self) -> str:
        from treeleaks.report.remedies import PRUNE_K

        return f"Pruning to k = {PRUNE_K}"

    def applies(self, inputs: StepInputs) -> str:
        return counts_removed(inputs.audit.model)

    def run(self, inputs: StepInputs, seconds: float) -> AttackRun:
        from treeleaks.report.remedies import prune_effect

        record, defence = prune_effect(inputs.audit, seconds)
        inputs.defences.extend([defence] if defence else [])
        return record


class StripRandomStates(AuditStep):
    """The bootstrap attack re-run without the per-tree draws the random states give."""

    name = "strip-random-states"
    title = "The bootstrap attack without the random states"
    rule_words = "the attack without the random states"
    weight = 2.0

    def applies(self, inputs: StepInputs) -> str:
        return "" if has_draws(inputs.audit.model) else "the model exposes no per-tree draws"

    def run(self, inputs: StepInputs, seconds: float) -> AttackRun:
        from treeleaks.report.remedies import strip_random_states

        record, defence = strip_random_states(inputs.audit, seconds, inputs.evidence,
                                              inputs.progress)
        inputs.defences.extend([defence] if defence else [])
        return record


STEPS: tuple[AuditStep, ...] = (
    Reconstruct(),
    SingleOut(),
    Leak(),
    WorstCase(),
    LeakTest(),
    Prune(),
    StripRandomStates(),
)


def weights_words(others: str) -> str:
    """The weights as the rule states them: each step weighing more than 1 by name, then
    ``others`` (e.g. "the others") with 1."""
    heavy = [f"{step.rule_words} {step.weight:g}" for step in STEPS if step.weight != 1]
    return ", ".join([*heavy, f"{others} 1"])


def markdown_table() -> str:
    """The steps as the documentation lists them: name, title and weight."""
    lines = ["| step | title | weight |", "|---|---|---|"]
    lines += [f"| `{step.name}` | {step.title} | {step.weight:g} |" for step in STEPS]
    return "\n".join(lines)
