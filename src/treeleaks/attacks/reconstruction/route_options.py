"""Which of `reconstruct`'s options each route takes, as data, and the refusals made from it.

`ACCEPTS` is the table (scikit-learn's ``_parameter_constraints``, per route): for each
route of `treeleaks.attacks.reconstruct.ROUTES`, by name, the options it limits, each with
the values it takes (`Takes.test`) and the words refusing the others. An option a route
does not list it takes at any value: the run's limits are checked on every route by
`treeleaks.attacks.reconstruction.options.RunOptions.check`, and a DP forest's own options by its
attack.

`refuse` raises the first refusal. The options saying how the model's counts and draws are
read (`READING`) are checked first, then the model itself (a route's own check, such as
`treeleaks.attacks.reconstruction.regression.refuse_regression`), then the others in the table's
order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from treeleaks.attacks.reconstruction.bootstrap import has_draws
from treeleaks.attacks.reconstruction.regression import READS, growth_limit
from treeleaks.ir.knowledge import KnowledgeError
from treeleaks.ir.model import ReleasedModel
from treeleaks.runtime.errors import TreeleaksError, UnsupportedModelError
from treeleaks.runtime.vocabulary import Strategy

Test = Callable[[Any, ReleasedModel, Mapping[str, Any]], bool]  # value, model, every option


@dataclass(frozen=True)
class OneOf:
    """The values in ``values`` (the words refusing others may list them)."""

    values: tuple[Any, ...]

    def __call__(self, value: Any, model: ReleasedModel, asked: Mapping[str, Any]) -> bool:
        return value in self.values


def stated_n(value: Any, model: ReleasedModel, asked: Mapping[str, Any]) -> bool:
    """N not given, or the N the model states."""
    return value is None or value == model.n_rows


def off(value: Any, model: ReleasedModel, asked: Mapping[str, Any]) -> bool:
    """A flag left off."""
    return not value


def unset(value: Any, model: ReleasedModel, asked: Mapping[str, Any]) -> bool:
    """None: the attack's default."""
    return value is None


def no_knowledge(value: Any, model: ReleasedModel, asked: Mapping[str, Any]) -> bool:
    """No side knowledge, or an empty one."""
    return value is None or value.empty


def draws_kept(value: Any, model: ReleasedModel, asked: Mapping[str, Any]) -> bool:
    """A bootstrap forest's draws not set aside (a forest without bootstrap has none)."""
    return not value or not model.bootstrap


def draws_read(value: Any, model: ReleasedModel, asked: Mapping[str, Any]) -> bool:
    """A bootstrap forest whose draws the file holds and the call keeps."""
    return has_draws(model) and not asked["ignore_draws"]


@dataclass(frozen=True)
class Takes:
    """The values of one option a route takes, and the refusal of the others: ``error``
    with ``words``, a template of ``value`` (the value refused), ``allowed`` and
    ``choices`` (a `OneOf`'s values, as ``'a' or 'b'`` and as ``a, b``) and facts of the
    model (`_facts`)."""

    test: Test
    error: type[Exception]
    words: str


EXACT_COUNTS = ("n_rows, n_unknown and shrinkage are for DP forests, whose counts are noisy; "
                "this model's counts are exact{stated}")
NOISY: dict[str, Takes] = {  # a DP forest's options, on a model whose counts are exact
    "n_rows": Takes(stated_n, TreeleaksError, EXACT_COUNTS),
    "n_unknown": Takes(off, TreeleaksError, EXACT_COUNTS),
    "shrinkage": Takes(unset, TreeleaksError, EXACT_COUNTS),
}
CLASSIFIER: dict[str, Takes] = {
    **NOISY,
    "strategy": Takes(OneOf(tuple(Strategy)), ValueError,
                      "unknown strategy {value!r}; choose one of {choices}"),
}


def _regressor(strategy: Takes) -> dict[str, Takes]:
    """A regression forest's route, which takes ``strategy``."""
    return {
        **NOISY,
        "ignore_draws": Takes(draws_kept, UnsupportedModelError,
                              "a regression forest whose draws are set aside (ignore_draws) "
                              "is {reads}"),
        "strategy": strategy,
        "knowledge": Takes(no_knowledge, UnsupportedModelError,
                           "side knowledge on a regressor is {reads}, without it"),
    }


REGRESSOR_STRATEGY = "strategy {value!r} on this regressor is {reads}, with strategy {allowed}"

ACCEPTS: dict[str, dict[str, Takes]] = {
    "contradicted": {},
    "regression-boosted": {
        **NOISY,
        "strategy": Takes(OneOf((Strategy.AUTO,)), UnsupportedModelError,
                          "strategy {value!r} on a boosted regressor: it lists the cells when "
                          "they are few and reads its single-row leaves otherwise; leave "
                          "strategy at 'auto'"),
        "knowledge": Takes(no_knowledge, UnsupportedModelError,
                           "side knowledge on a boosted regressor is not supported yet: "
                           "reconstruct without it"),
    },
    "regression-leaves": _regressor(Takes(
        OneOf((Strategy.AUTO,)), UnsupportedModelError,
        "strategy {value!r} on a regressor grown with {limit}: leave strategy at 'auto'")),
    "regression-exact": _regressor(Takes(OneOf((Strategy.AUTO, Strategy.ENUMERATE)),
                                         UnsupportedModelError, REGRESSOR_STRATEGY)),
    "regression-bootstrap-known": _regressor(Takes(OneOf((Strategy.AUTO, Strategy.PER_ROW)),
                                                   UnsupportedModelError, REGRESSOR_STRATEGY)),
    "dp": {},  # `treeleaks.attacks.reconstruction.dp` checks N, its knowledge and shrinkage itself
    "per-row": {
        **NOISY,
        "strategy": Takes(draws_read, TreeleaksError,
                          "strategy 'per-row' places each row by how often each tree drew "
                          "it, but {why}; use strategy 'auto'"),
        "knowledge": Takes(no_knowledge, KnowledgeError,
                           "side knowledge is not supported yet with strategy 'per-row'; use "
                           "strategy 'auto'"),
    },
    "bootstrap-unknown": {
        **CLASSIFIER,
        "knowledge": Takes(no_knowledge, KnowledgeError,
                           "side knowledge is not supported yet for a bootstrap forest whose "
                           "draws are unknown"),
    },
    "knowledge": CLASSIFIER,
    "bootstrap-known": CLASSIFIER,
    "uncounted": CLASSIFIER,
    "exact": CLASSIFIER,
}
# How the model's counts and draws are read: checked before the model itself.
READING = ("n_rows", "n_unknown", "shrinkage", "ignore_draws")


def refuse(route: str, model: ReleasedModel, asked: Mapping[str, Any],
           refuse_model: Callable[[ReleasedModel], None] | None = None) -> None:
    """Raise the refusal of the first option in ``asked`` (name → value) that ``route``
    does not take at its value, the options in `READING` before ``refuse_model``."""
    takes = ACCEPTS[route]
    _refuse_each([name for name in takes if name in READING], takes, model, asked)
    if refuse_model is not None:
        refuse_model(model)
    _refuse_each([name for name in takes if name not in READING], takes, model, asked)


def _refuse_each(names: list[str], takes: Mapping[str, Takes], model: ReleasedModel,
                 asked: Mapping[str, Any]) -> None:
    for name in names:
        rule, value = takes[name], asked[name]
        if not rule.test(value, model, asked):
            values = rule.test.values if isinstance(rule.test, OneOf) else ()
            raise rule.error(rule.words.format(
                value=value, allowed=" or ".join(map(repr, values)),
                choices=", ".join(values), **_facts(model, asked)))


def _facts(model: ReleasedModel, asked: Mapping[str, Any]) -> dict[str, str]:
    """What the words may say of the model: the N it states, its growth limit, why its
    draws cannot be read, and what the regression routes read."""
    why = ("the draws were set aside (ignore_draws)" if asked["ignore_draws"] else
           "this forest does not expose its draws" if model.bootstrap else
           "this forest's trees each saw every row once")
    return {"stated": "" if model.n_rows is None else f" and state N = {model.n_rows}",
            "limit": growth_limit(model), "why": why, "reads": READS}
