"""`reconstruct`'s options as data: the table of options, and which route takes which."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from treeleaks import from_sklearn, reconstruct
from treeleaks.attacks.reconstruct import ROUTES
from treeleaks.attacks.reconstruction.options import OPTIONS, Request, RunOptions, split_options
from treeleaks.attacks.reconstruction.route_options import ACCEPTS, OneOf
from treeleaks.runtime.errors import UnsupportedModelError


def test_every_route_has_a_row_of_the_table_and_names_only_real_options() -> None:
    assert [route.name for route in ROUTES if route.name not in ACCEPTS] == []
    assert set(ACCEPTS) == {route.name for route in ROUTES}
    assert {name for takes in ACCEPTS.values() for name in takes} <= set(OPTIONS)


def test_the_table_is_the_two_classes_fields_and_reconstruct_documents_each() -> None:
    run, request = split_options("reconstruct", {name: option.default
                                                 for name, option in OPTIONS.items()})
    assert (run, request) == (RunOptions(), Request())
    for name in OPTIONS:
        assert f"    - ``{name}`` (" in reconstruct.__doc__


def test_an_option_outside_the_table_is_a_type_error_naming_it() -> None:
    X, y = np.random.default_rng(0).integers(0, 3, (20, 3)), np.arange(20) % 2
    model = from_sklearn(RandomForestClassifier(3, bootstrap=False, random_state=0).fit(X, y))
    with pytest.raises(TypeError, match=r"reconstruct\(\) got an unexpected keyword "
                                        "argument 'time_limt'"):
        reconstruct(model, time_limt=5)


@pytest.mark.parametrize("route", ["regression-exact", "regression-bootstrap-known"])
def test_a_regressor_refuses_a_strategy_naming_the_values_its_row_takes(route: str) -> None:
    X = np.random.default_rng(1).integers(0, 4, (30, 3)).astype(float)
    forest = RandomForestRegressor(3, bootstrap=route.endswith("known"), random_state=0)
    model = from_sklearn(forest.fit(X, X[:, 0] * 2), allow_regression=True)
    takes = ACCEPTS[route]["strategy"].test
    assert isinstance(takes, OneOf)
    with pytest.raises(UnsupportedModelError, match="strategy 'generate' on this regressor") \
            as refused:
        reconstruct(model, strategy="generate")
    assert str(refused.value).endswith(" or ".join(map(repr, takes.values)))
