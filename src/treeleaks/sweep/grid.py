"""A sweep grid from TOML: the attack, its axes (a list of values each, or one value), and
what every point may use (wall time, memory, where the datasets are).

    attack = "forest"               # see treeleaks.sweep.attacks
    point_time_limit = 900          # s of wall time before a point is killed (default: 3x
                                    # time_limit + 120)
    point_memory_mb = 8000          # resident memory before a point is killed (default none)
    data_dir = "../data"            # datasets.json folder, relative to this file
                                    # (default: the TREELEAKS_DATA environment variable)
    isolate = true                  # each point in a process of its own (default); false
                                    # runs points in the worker itself: no start-up cost,
                                    # but no time or memory limit (for points of seconds)
    [axes]
    dataset = ["compas", "adult"]
    depth = ["none", 10, 5]         # "none": unlimited depth
    seed = [0, 1, 2]
    trees = 100                     # one value: the same for every point

An axis renamed since keeps its former name as an alias (`RENAMED_AXES`): grid files may
use either, and sweeps recorded under the former name resume.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeleaks.runtime.errors import TreeleaksError
from treeleaks.sweep.attacks import ATTACKS, Axis

TOP_KEYS = ("attack", "axes", "point_time_limit", "point_memory_mb", "data_dir", "isolate")
NONE_WORDS = ("none", "null", "unlimited")
RENAMED_AXES = {"ignore_multiplicities": "ignore_draws"}  # former name: current name
FORMER_NAMES = {new: old for old, new in RENAMED_AXES.items()}


class GridError(TreeleaksError):
    """A grid file is malformed; the message names the key at fault."""


@dataclass(frozen=True)
class Grid:
    """An attack and the values of each of its axes; `points` is their Cartesian product."""

    attack: str
    axes: dict[str, list[Any]]
    point_time_limit: float | None = None
    point_memory_mb: float | None = None
    data_dir: Path | None = None
    isolate: bool = True

    def points(self) -> list[dict[str, Any]]:
        """Every combination of the axes' values, defaults filled in, in file order."""
        spec = ATTACKS[self.attack].axes
        names = list(self.axes)
        fixed = {name: axis.default for name, axis in spec.items() if name not in self.axes}
        return [{**fixed, **dict(zip(names, values))}
                for values in itertools.product(*(self.axes[n] for n in names))]

    def time_limit_for(self, point: dict[str, Any]) -> float:
        """Wall time a point may take before it is killed."""
        if self.point_time_limit is not None:
            return self.point_time_limit
        return 3 * float(point["time_limit"]) + 120


def point_key(attack: str, point: dict[str, Any]) -> str:
    """A stable name for a point, for resuming: its attack and the axis values that differ
    from their defaults (so a new axis, added with a default, keeps earlier results)."""
    spec = ATTACKS[attack].axes
    chosen = {FORMER_NAMES.get(k, k): v for k, v in point.items()
              if k not in spec or v != spec[k].default}  # former names keep earlier keys
    text = json.dumps({"attack": attack, **chosen}, sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def current_names(record: dict[str, Any]) -> dict[str, Any]:
    """A point or record with its renamed axes under their current names."""
    return {RENAMED_AXES.get(k, k): v for k, v in record.items()}


def load_grid(path: str | Path) -> Grid:
    """Read and check a grid file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise GridError(f"cannot read the grid {str(path)!r}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise GridError(f"{path}: not valid TOML ({exc})") from exc
    return grid_from_dict(data, base=path.parent)


def grid_from_dict(data: dict[str, Any], base: Path = Path()) -> Grid:
    """A grid from its parsed TOML; relative ``data_dir`` is taken from ``base``."""
    unknown = sorted(set(data) - set(TOP_KEYS))
    if unknown:
        raise GridError(f"unknown key {unknown[0]!r} in the grid; keys: {', '.join(TOP_KEYS)}")
    attack = data.get("attack")
    if attack not in ATTACKS:
        raise GridError(f"unknown attack {attack!r}; attacks: {', '.join(ATTACKS)}")
    axes = _axes(data.get("axes"), attack)
    isolate = data.get("isolate", True)
    if not isinstance(isolate, bool):
        raise GridError(f"isolate must be true or false, not {isolate!r}")
    return Grid(attack, axes, _positive(data, "point_time_limit"),
                _positive(data, "point_memory_mb"), _data_dir(data.get("data_dir"), base),
                isolate)


def _axes(raw_axes: Any, attack: str) -> dict[str, list[Any]]:
    """The grid's [axes] table checked against ``attack``'s axes, under their current
    names, each a list of values."""
    spec = ATTACKS[attack].axes
    if not isinstance(raw_axes, dict) or not raw_axes:
        raise GridError("the grid has no [axes] table; give at least dataset = [...]")
    axes: dict[str, list[Any]] = {}
    for given, raw in raw_axes.items():
        name = RENAMED_AXES.get(given, given)
        if name in axes:
            raise GridError(f"axis {name!r} is given twice (once as {given!r}); keep one")
        if name not in spec:
            raise GridError(f"unknown axis {name!r} for attack {attack!r}; its axes: "
                            f"{', '.join(spec)}")
        axes[name] = _axis_values(name, raw, spec[name])
    if spec["dataset"].default is None and "dataset" not in axes:
        raise GridError("the grid names no dataset; add dataset = [...] under [axes]")
    return axes


def _axis_values(name: str, raw: Any, axis: Axis) -> list[Any]:
    """One axis's values (a list, or one value), each checked against ``axis``."""
    values = [_none(v) for v in (raw if isinstance(raw, list) else [raw])]
    if not values:
        raise GridError(f"axis {name!r} has no values, so the grid has no points; give it "
                        "at least one value or leave it out for its default")
    for value in values:
        if not axis.check(value):
            raise GridError(f"axis {name!r}: {value!r} is not {axis.expects}")
    return values


def _none(value: Any) -> Any:
    """TOML has no null: the words "none", "null" and "unlimited" stand for it."""
    return None if isinstance(value, str) and value.lower() in NONE_WORDS else value


def _positive(data: dict[str, Any], key: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise GridError(f"{key} must be a positive number, not {value!r}")
    return float(value)


def _data_dir(value: Any, base: Path) -> Path | None:
    if value is None:
        env = os.environ.get("TREELEAKS_DATA")
        return Path(env) if env else None
    if not isinstance(value, str):
        raise GridError(f"data_dir must be a path, not {value!r}")
    return (base / value).resolve()
