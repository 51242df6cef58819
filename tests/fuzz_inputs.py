"""Hypothesis strategies that break valid model and schema JSON (issue 6, "Hardening").

A mutation is drawn as plain data (a tuple naming what to do and where) and applied to a
deep copy of a valid document by `apply_mutations`, which returns the text of the file to
write. Text-level mutations (deep nesting, truncation, garbage) act on that text, so the
file can hold what ``json.dumps`` would never write.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

from hypothesis import strategies as st

Path_ = tuple[Any, ...]  # keys and indices from the document's root
Mutation = tuple[Any, ...]

DEEP_DEPTH = 10_000
DEEP_SENTINEL = "__treeleaks_fuzz_deep__"
DEEP_TEXT = "[" * DEEP_DEPTH + "]" * DEEP_DEPTH

VALID_SCHEMA: dict[str, Any] = {
    "one_hot_groups": [["f0", "f1"]],
    "at_most_one_groups": [],
    "numerical": {"f2": [0, 1]},
    "ordinal": {"f3": [0, 5]},
}

# Values put in place of whatever a path holds: wrong types, wrong shapes, odd numbers.
ODD_INTS = [0, 1, -1, 2, 3, 7, 30, 10**6, 10**30, 2**31, 2**63 - 1, 2**63, -(2**63) - 1]
ODD_FLOATS = [math.nan, math.inf, -math.inf, 1.5, 0.5, -0.0, 1e-300, 1e308]
ODD_STRINGS = ["", "false", "true", "{", "[", "null", "0", "f0", "label", "nan", "\n", "é"]


def bad_values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from(ODD_INTS),
        st.integers(min_value=-5, max_value=40),
        st.sampled_from(ODD_FLOATS),
        st.sampled_from(ODD_STRINGS),
        st.text(max_size=4),
    )
    wrong_lists = st.sampled_from(
        [[], [None], ["a"], [[]], [[1]], [{}], [1.5], [True], [math.nan], [-1], [10**30]]
    )
    dicts = st.sampled_from([{}, {"a": 1}, {"0": 0}, {"kind": None}])
    nested = st.lists(st.lists(scalars, max_size=3), max_size=3)
    return st.one_of(scalars, wrong_lists, dicts, nested, st.just(DEEP_SENTINEL))


def all_paths(doc: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every path to a value inside ``doc`` (the root excluded), parents first."""
    out: list[Path_] = []
    items: list[tuple[Any, Any]] = []
    if isinstance(doc, dict):
        items = list(doc.items())
    elif isinstance(doc, list):
        items = list(enumerate(doc))
    for key, value in items:
        out.append((*prefix, key))
        out.extend(all_paths(value, (*prefix, key)))
    return out


def list_paths(doc: Any) -> list[Path_]:
    """Paths to non-empty lists, whose elements can be duplicated or dropped."""
    return [p for p in all_paths(doc) if isinstance(get(doc, p), list) and get(doc, p)]


def get(doc: Any, path: Path_) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def path_strategy(doc: Any) -> st.SearchStrategy[Path_]:
    """A path, weighted toward the top level and the trees' own fields."""
    paths = all_paths(doc)
    top = [p for p in paths if len(p) == 1]
    tree_fields = [p for p in paths if len(p) == 3 and p[0] == "trees"]
    choices = [st.sampled_from(paths)]
    if top:
        choices.append(st.sampled_from(top))
    if tree_fields:
        choices.append(st.sampled_from(tree_fields))
    return st.one_of(choices)


def value_mutations(doc: Any) -> st.SearchStrategy[Mutation]:
    """Replace, delete, nudge or duplicate something in ``doc``."""
    paths = path_strategy(doc)
    lists = list_paths(doc)
    options = [
        st.tuples(st.just("replace"), paths, bad_values()),
        st.tuples(st.just("delete"), paths),
        st.tuples(st.just("nudge"), paths, st.sampled_from([-1, 1, 0.25, 1000])),
        st.tuples(st.just("add_key"), st.sampled_from([(), *[p for p in all_paths(doc)
                                                           if isinstance(get(doc, p), dict)]]),
                  st.sampled_from(["extra", "trees", "", "f0"]), bad_values()),
    ]
    if lists:
        options.append(st.tuples(st.just("duplicate"), st.sampled_from(lists),
                                 st.integers(0, 50)))
    return st.one_of(options)


def node_swaps(doc: dict[str, Any]) -> st.SearchStrategy[Mutation]:
    """Swap two nodes of a tree, renumbering the children (a valid tree when the root stays
    node 0) or not (a broken one)."""
    n_trees = len(doc.get("trees", []))
    return st.tuples(st.just("swap_nodes"), st.integers(0, max(n_trees - 1, 0)),
                     st.integers(0, 40), st.integers(0, 40), st.booleans())


def text_mutations() -> st.SearchStrategy[Mutation]:
    return st.one_of(
        st.tuples(st.just("truncate"), st.floats(0, 1, allow_nan=False)),
        st.tuples(st.just("garbage"), st.sampled_from(
            ["", " ", "{", "}", "[]", "null", "0", '"x"', "\x00", "\ufeff{}", "{}{}", "NaN",
             DEEP_TEXT, "{" * DEEP_DEPTH])),
        st.tuples(st.just("append"), st.sampled_from(["x", "}", "]", "\x00", " {}", ","])),
        st.tuples(st.just("bytes"), st.sampled_from([b"\xff\xfe", b"\x80", b"\xc3("])),
    )


def model_mutations(doc: dict[str, Any]) -> st.SearchStrategy[list[Mutation]]:
    one = st.one_of(value_mutations(doc), node_swaps(doc))
    return st.one_of(st.lists(one, min_size=1, max_size=3), st.tuples(text_mutations()).map(list))


def schema_mutations(doc: dict[str, Any]) -> st.SearchStrategy[list[Mutation]]:
    one = value_mutations(doc)
    return st.one_of(st.lists(one, min_size=1, max_size=3), st.tuples(text_mutations()).map(list))


# --- applying ------------------------------------------------------------------------------


def apply_mutations(doc: Any, mutations: list[Mutation]) -> bytes:
    """The file content after ``mutations``; paths no longer present are skipped."""
    doc = copy.deepcopy(doc)
    text_ops = []
    for mutation in mutations:
        if mutation[0] in ("truncate", "garbage", "append", "bytes"):
            text_ops.append(mutation)
        else:
            doc = _apply_value(doc, mutation)
    text = json.dumps(doc).replace(json.dumps(DEEP_SENTINEL), DEEP_TEXT)
    data = text.encode()
    for op, arg in text_ops:
        if op == "truncate":
            data = data[: int(len(data) * arg)]
        elif op == "garbage":
            data = arg.encode()
        elif op == "append":
            data += arg.encode()
        else:
            data = arg + data
    return data


def _parent(doc: Any, path: Path_) -> tuple[Any, Any] | None:
    try:
        parent = get(doc, path[:-1])
        key = path[-1]
        if isinstance(parent, dict) and key in parent:
            return parent, key
        if isinstance(parent, list) and isinstance(key, int) and key < len(parent):
            return parent, key
    except (KeyError, IndexError, TypeError):
        pass
    return None


def _apply_value(doc: Any, mutation: Mutation) -> Any:
    op = mutation[0]
    if op == "swap_nodes":
        _swap_nodes(doc, *mutation[1:])
        return doc
    if op == "add_key":
        _, path, key, value = mutation
        try:
            target = get(doc, path)
        except (KeyError, IndexError, TypeError):
            return doc
        if isinstance(target, dict):
            target[key] = copy.deepcopy(value)
        return doc
    found = _parent(doc, mutation[1])
    if found is None:
        return doc
    parent, key = found
    if op == "replace":
        parent[key] = copy.deepcopy(mutation[2])
    elif op == "delete":
        del parent[key]
    elif op == "nudge":
        value = parent[key]
        if isinstance(value, int | float) and not isinstance(value, bool):
            parent[key] = value + mutation[2]
    elif op == "duplicate":
        items = parent[key]
        if isinstance(items, list) and items:
            i = mutation[2] % len(items)
            items.insert(i + 1, copy.deepcopy(items[i]))
    return doc


NODE_FIELDS = ("feature", "threshold", "left", "right", "leaf_of_node")


def _swap_nodes(doc: Any, tree_index: int, a: int, b: int, renumber: bool) -> None:
    try:
        tree = doc["trees"][tree_index]
        n = len(tree["feature"])
        if not all(isinstance(tree[f], list) and len(tree[f]) == n for f in NODE_FIELDS):
            return
    except (KeyError, IndexError, TypeError):
        return
    if n == 0:
        return
    a, b = a % n, b % n
    for name in NODE_FIELDS:
        tree[name][a], tree[name][b] = tree[name][b], tree[name][a]
    if renumber:
        swap = {a: b, b: a}
        for name in ("left", "right"):
            tree[name] = [swap.get(c, c) if isinstance(c, int) else c for c in tree[name]]
