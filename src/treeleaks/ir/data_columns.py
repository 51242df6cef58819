"""The custodian's table in the model's column names: LightGBM writes a column "mean radius"
as "mean_radius" (whitespace and the characters its text format reserves become "_"), so the
table the model was trained on no longer matches the names its file holds."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

_RESERVED = re.compile(r'[\s",:\[\]{}]')


def file_name_of(column: str) -> str:
    """The name a model file keeps for ``column`` (LightGBM's rewriting)."""
    return _RESERVED.sub("_", column)


def as_model_columns(frame: pd.DataFrame, feature_names: list[str], label: str | None
                     ) -> pd.DataFrame:
    """``frame`` with each column that matches a missing model column only once rewritten as
    the file rewrites names renamed to it; unchanged when every name is present or a
    rewritten name is ambiguous (the mismatch is then refused downstream, naming it)."""
    present = set(map(str, frame.columns))
    missing = [name for name in feature_names if name not in present]
    if not missing:
        return frame
    spare: dict[str, list[str]] = {}
    for column in map(str, frame.columns):
        if column != label and column not in feature_names:
            spare.setdefault(file_name_of(column), []).append(column)
    renames = {spare[name][0]: name for name in missing if len(spare.get(name, [])) == 1}
    return frame.rename(columns=renames) if renames else frame
