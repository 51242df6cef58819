"""The input map: the custodian's columns encoded as the model's features and back."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeleaks.ir.inputs import CodedColumn, InputMap, NumberColumn, OneHotColumn


def _map() -> InputMap:
    return InputMap(
        columns=(OneHotColumn("island", (0, 1, 2), ("Biscoe", "Dream", np.nan)),
                 NumberColumn("mass", 3, gap=4),
                 CodedColumn("sex", 5, ("female", "male"))),
        feature_names=("island=Biscoe", "island=Dream", "island=gap", "mass", "mass_gap",
                       "sex", "year"))


def test_encode_gives_each_feature_and_keeps_the_label() -> None:
    frame = pd.DataFrame({"island": ["Dream", None, "Biscoe"], "mass": [3.5, np.nan, 4.0],
                          "sex": ["male", "female", "male"], "year": [2007, 2008, 2009],
                          "species": ["a", "b", "c"]})
    encoded = _map().encode(frame)
    assert list(encoded.columns[:7]) == list(_map().feature_names)
    assert encoded.iloc[:, :3].to_numpy().tolist() == [[0, 1, 0], [0, 0, 1], [1, 0, 0]]
    assert encoded["mass_gap"].tolist() == [0, 1, 0]
    assert encoded["sex"].tolist() == [1, 0, 1]
    assert encoded["species"].tolist() == ["a", "b", "c"]


def test_decode_returns_the_custodians_columns() -> None:
    rows = pd.DataFrame([[0, 1, 0, 3.5, 0, 1, 2007, "a"], [0, 0, 1, 9.0, 1, 0, 2008, "b"]],
                        columns=[*_map().feature_names, "species"])
    decoded = _map().decode(rows)
    assert list(decoded.columns) == ["island", "mass", "sex", "year", "species"]
    assert decoded["island"].iloc[0] == "Dream" and np.isnan(decoded["island"].iloc[1])
    assert decoded["mass"].iloc[0] == 3.5 and np.isnan(decoded["mass"].iloc[1])
    assert decoded["sex"].tolist() == ["male", "female"]


def test_groups_and_binary_features_feed_the_schema() -> None:
    assert _map().groups() == [(["island=Biscoe", "island=Dream", "island=gap"], True)]
    assert set(_map().binary()) == {"island=Biscoe", "island=Dream", "island=gap",
                                    "mass_gap"}


def test_a_feature_fed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="at most one column"):
        InputMap((NumberColumn("a", 0), NumberColumn("b", 0)), ("x",))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c"])), min_size=1,
                max_size=20),
       st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6)), min_size=1, max_size=20))
def test_decode_inverts_encode(categories: list, numbers: list) -> None:
    n = min(len(categories), len(numbers))
    frame = pd.DataFrame({"c": categories[:n], "x": [np.nan if v is None else v
                                                     for v in numbers[:n]]})
    inputs = InputMap((OneHotColumn("c", (0, 1, 2, 3), ("a", "b", "c", np.nan)),
                       NumberColumn("x", 4, gap=5)),
                      ("c=a", "c=b", "c=c", "c=gap", "x", "x_gap"))
    back = inputs.decode(inputs.encode(frame))
    def plain(values: pd.Series) -> list:
        return [None if isinstance(v, float) or v is None else v for v in values]

    assert plain(back["c"]) == plain(frame["c"])
    np.testing.assert_array_equal(back["x"].to_numpy(dtype=float), frame["x"].to_numpy())


@pytest.mark.parametrize(("missing", "gap"), [(np.nan, 1), (-1.0, None)])
def test_a_coded_column_keeps_its_gaps(missing: float, gap: int | None) -> None:
    """A gap is coded as the encoder codes it (NaN routed through a gap feature, or its own
    code), an unseen category as ``unknown``; decoding gives the categories and the gaps."""
    column = CodedColumn("c", 0, ("blue", "red"), unknown=-2.0, missing=missing, gap=gap)
    names = ("c", "c gap") if gap is not None else ("c",)
    inputs = InputMap((column,), names)
    frame = pd.DataFrame({"c": ["red", None, "blue", "green"]})
    encoded = inputs.encode(frame)[list(names)].to_numpy()
    if gap is None:
        assert encoded[:, 0].tolist() == [1.0, -1.0, 0.0, -2.0]
        assert column.codes == (-1.0, 1.0)
    else:
        assert encoded.tolist() == [[1, 0], [0, 1], [0, 0], [-2, 0]]
    decoded = inputs.decode(pd.DataFrame(encoded[:3], columns=list(names)))["c"]
    assert decoded[0] == "red" and pd.isna(decoded[1]) and decoded[2] == "blue"
    assert inputs.condition_text("c", ">", 0.5) == "c in {red}"
    assert inputs.condition_text("c", "<=", 0.5) == ("c in {blue}" if gap is not None
                                                      else "c in {gap, blue}")
