"""Datasets a sweep point trains on: a directory described by ``datasets.json`` (binarized
CSVs with their label and one-hot / at-most-one groups), or the built-in example.

``datasets.json`` maps each name to ``{"file", "label", "rows", "one_hot_groups",
"at_most_one_groups"}``; keys starting with ``_`` are notes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from treeleaks.runtime.errors import TreeleaksError

BUILT_IN = ("breast-cancer", "diabetes")  # shipped with scikit-learn: nothing downloaded


class DatasetError(TreeleaksError):
    """A dataset cannot be found or read; the message says where treeleaks looked."""


@dataclass
class Dataset:
    """A training population: features, label column and the adversary's groups."""

    name: str
    frame: pd.DataFrame
    label: str
    one_hot_groups: list[list[str]] = field(default_factory=list)
    at_most_one_groups: list[list[str]] = field(default_factory=list)
    regression: bool = False  # a numerical target, for regression trees

    @property
    def features(self) -> pd.DataFrame:
        return self.frame.drop(columns=[self.label])

    def categorical(self) -> pd.DataFrame:
        """The frame with each one-hot or at-most-one group as one categorical column, named
        by the group's common prefix (``education_Assoc``, ... -> ``education``); a row with
        no column of an at-most-one group set gets the value ``none``."""
        frame = self.frame.copy()
        for group in self.one_hot_groups + self.at_most_one_groups:
            name = os.path.commonprefix(group).rstrip("_:")  # noqa: RUF071 (names, not paths)
            values = frame[group].to_numpy()
            labels = np.array([c[len(name):].lstrip("_:") for c in group] + ["none"])
            chosen = np.where(values.any(axis=1), values.argmax(axis=1), len(group))
            frame = frame.drop(columns=group).assign(**{name: labels[chosen]})
        return frame

    def sample(self, n: int, seed: int) -> pd.DataFrame:
        """``n`` distinct rows drawn uniformly without replacement (seeded), index reset."""
        if n > len(self.frame):
            raise DatasetError(f"{self.name} has {len(self.frame)} rows, cannot sample {n}")
        picked = np.random.default_rng(seed).choice(len(self.frame), size=n, replace=False)
        return self.frame.iloc[np.sort(picked)].reset_index(drop=True)


def dataset_info(data_dir: Path) -> dict[str, dict[str, Any]]:
    """``datasets.json`` of ``data_dir`` without its notes."""
    path = Path(data_dir) / "datasets.json"
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DatasetError(f"cannot read {str(path)!r} ({exc}); point data_dir (or the "
                           "TREELEAKS_DATA environment variable) at a folder holding "
                           "datasets.json") from exc
    return {k: v for k, v in info.items() if not k.startswith("_")}


def load_dataset(name: str, data_dir: Path | None) -> Dataset:
    """A built-in dataset, or ``name`` as ``<data_dir>/datasets.json`` describes it.

    Built in: ``breast-cancer`` (the demo's 569 patients, 15 measurements binarized at
    their medians) and ``diabetes`` (442 patients, 10 numerical columns, a numerical
    target: for regression trees).
    """
    if name == "breast-cancer":
        from treeleaks.demos.demo_data import demo_data

        X, y = demo_data()
        return Dataset(name, X.assign(**{str(y.name): y.to_numpy()}), str(y.name))
    if name == "diabetes":
        from sklearn.datasets import load_diabetes

        data = load_diabetes(as_frame=True)
        return Dataset(name, data.data.assign(target=data.target.to_numpy()), "target",
                       regression=True)
    if data_dir is None:
        raise DatasetError(f"dataset {name!r} is not built in ({', '.join(BUILT_IN)} are); "
                           "give data_dir in the grid or set TREELEAKS_DATA")
    info = dataset_info(data_dir)
    if name not in info:
        raise DatasetError(f"unknown dataset {name!r}; {data_dir}/datasets.json has "
                           f"{', '.join(sorted(info))} (and {', '.join(BUILT_IN)} are built in)")
    meta = info[name]
    return Dataset(
        name=name,
        frame=pd.read_csv(Path(data_dir) / meta["file"]),
        label=meta["label"],
        one_hot_groups=[list(g) for g in meta.get("one_hot_groups", [])],
        at_most_one_groups=[list(g) for g in meta.get("at_most_one_groups", [])],
    )
