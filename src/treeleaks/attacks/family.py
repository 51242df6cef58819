"""The attack families, as data: one shape, one registry.

Every attack is a function of a released model (and its options) returning one result that
has the shape `treeleaks.result.AttackResult`: how the run ended (``status``) and its
figures as plain JSON (``summary()``), the shape anonymeter's evaluators share
(``evaluate``, ``results``, ``risk``). `FAMILIES` lists each family once, by name (its
command's and its audit step's), with its entry point and result type as import paths, so
that listing them loads nothing: the package's public names are made from it
(`public_names`), and the tests check every family against the shape, the command line and
the audit. A new family is its module here and one line in `FAMILIES`; to run in the audit,
one `treeleaks.report.audit_steps.AuditStep` and its line in ``STEPS``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AttackFamily:
    """One attack: its ``name`` (the command's and the audit step's), what it ``reads``, its
    entry point and result type (``"module:name"``), and the family's other public names
    (a second entry point, such as the rule lists' reconstruction)."""

    name: str
    reads: str
    entry: str
    result: str
    more: tuple[str, ...] = ()

    def names(self) -> dict[str, str]:
        """The family's public names, each with the module it lives in."""
        pairs = [self.entry, self.result, *self.more]
        return {name: module for module, name in (pair.split(":") for pair in pairs)}


FAMILIES: tuple[AttackFamily, ...] = (
    AttackFamily("reconstruct", "a forest's or booster's counts (exact or noisy), its draws",
                 "treeleaks.attacks.reconstruct:reconstruct", "treeleaks.result:Reconstruction"),
    AttackFamily("single-out", "any tree model: its leaves (with counts, proven)",
                 "treeleaks.attacks.singling_out:single_out",
                 "treeleaks.attacks.singling_out:SinglingOut"),
    AttackFamily("leak", "a single tree's or rule list's counts",
                 "treeleaks.attacks.probabilistic:tree_reconstruction",
                 "treeleaks.attacks.probabilistic:ProbabilisticReconstruction",
                 ("treeleaks.attacks.probabilistic:rule_list_reconstruction",)),
    AttackFamily("worst-case", "a bootstrap forest's counts and draws, with the training rows",
                 "treeleaks.attacks.worst_case:worst_case",
                 "treeleaks.attacks.worst_case:WorstCase"),
    AttackFamily("leak-test", "a reconstruction, and rows of the population",
                 "treeleaks.evaluation.leak_or_distribution:leak_test",
                 "treeleaks.evaluation.leak_or_distribution:LeakTest"),
    AttackFamily("informed", "a DP forest, and every training row but the target's",
                 "treeleaks.attacks.informed:informed_adversary",
                 "treeleaks.attacks.informed:InformedAdversary"),
)


def public_names() -> dict[str, str]:
    """Every family's public names, each with its module (for `treeleaks.__getattr__`)."""
    return {name: module for family in FAMILIES for name, module in family.names().items()}
