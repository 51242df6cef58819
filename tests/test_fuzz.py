"""Fuzzing the command line with broken model and schema files (issue 6, "Hardening").

Whatever the file holds, ``treeleaks reconstruct`` and ``treeleaks inspect`` must end with
exit 0 and (for reconstruct) a verified result, or exit 2/3 with one ``error:`` line on
stderr: never a traceback, never exit 1 or 4, never a changed input file. The number of
examples is bounded and the search derandomized, so CI runs the same cases in well under a
minute.
"""

from __future__ import annotations

import copy
import json
import math
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fuzz_inputs import (
    DEEP_TEXT,
    VALID_SCHEMA,
    apply_mutations,
    model_mutations,
    schema_mutations,
)
from hypothesis import HealthCheck, given, settings
from sklearn.ensemble import RandomForestClassifier
from typer.testing import CliRunner, Result

from treeleaks import from_sklearn
from treeleaks.cli import app

from conftest import binary_frame

runner = CliRunner()
FAST = ["--time-limit", "5", "--certainty-time-limit", "1", "--max-memory", "256"]
ALLOWED_EXITS = {0, 2, 3, 5}  # 5: a partial reconstruction, a result
FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.large_base_example],
)


def valid_model() -> dict[str, Any]:
    """A small no-bootstrap forest on 0/1 columns where f0, f1 are one-hot, so both the
    model alone and `VALID_SCHEMA` reconstruct it."""
    X, y = binary_frame(30, 6, seed=0)
    X["f1"] = 1 - X["f0"]
    forest = RandomForestClassifier(n_estimators=4, bootstrap=False, max_depth=3,
                                    random_state=0).fit(X, y)
    return from_sklearn(forest).to_dict()


MODEL = valid_model()


def check_run(args: list[str], inputs: list[Path], summary: Path | None = None) -> Result:
    """Run the CLI and check the outcome contract; the inputs must come out byte-identical.

    Only ``note:`` lines (the one-hot hint) may join the error line on stderr; a run that
    exits 0 prints nothing else there, and no run may emit a Python warning (the CLI would
    print it on stderr)."""
    before = {p: p.read_bytes() for p in inputs}
    with warnings.catch_warnings(record=True) as caught:  # outside pytest they reach stderr
        warnings.simplefilter("always")
        result = runner.invoke(app, args)
    context = f"{args}\nexit {result.exit_code}\nstderr: {result.stderr[-2000:]!r}"
    assert not caught, f"{context}\nwarned: {[str(w.message) for w in caught]}"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{context}\nraised {result.exception!r}")
    assert "Traceback" not in result.output, context
    assert result.exit_code in ALLOWED_EXITS, context
    lines = [line for line in result.stderr.strip().splitlines()
             if line.strip() and not line.startswith("note: ")]
    if result.exit_code in (0, 5):
        assert not lines, context
        if summary is not None:
            report = json.loads(summary.read_text())
            if result.exit_code == 0:
                assert report["verified"] is True and report["partial"] is False, context
            else:  # a partial reconstruction: rows, labelled partial
                assert report["partial"] is True and report["n_rows"] > 0, context
    else:
        assert len(lines) == 1 and lines[0].startswith("error: "), context
    assert {p: p.read_bytes() for p in inputs} == before, f"{context}\nan input file changed"
    return result


def run_both(model_bytes: bytes, schema_bytes: bytes | None = None) -> None:
    """``reconstruct`` (with a JSON summary) and ``inspect`` on the given files."""
    with tempfile.TemporaryDirectory() as folder:
        model = Path(folder) / "model.json"
        model.write_bytes(model_bytes)
        inputs, schema_args = [model], []
        if schema_bytes is not None:
            schema = Path(folder) / "schema.json"
            schema.write_bytes(schema_bytes)
            inputs.append(schema)
            schema_args = ["--schema", str(schema)]
        summary = Path(folder) / "summary.json"
        check_run(["reconstruct", str(model), *schema_args, *FAST, "--json", str(summary)],
                  inputs, summary)
        check_run(["inspect", str(model), *schema_args], inputs)


def test_the_unmutated_files_reconstruct_and_verify() -> None:
    run_both(json.dumps(MODEL).encode())
    run_both(json.dumps(MODEL).encode(), json.dumps(VALID_SCHEMA).encode())


@FUZZ
@given(model_mutations(MODEL))
def test_a_mutated_model_is_verified_or_refused_in_one_line(mutations: list[Any]) -> None:
    run_both(apply_mutations(MODEL, mutations))


@settings(FUZZ, max_examples=200)
@given(schema_mutations(VALID_SCHEMA))
def test_a_mutated_schema_is_verified_or_refused_in_one_line(mutations: list[Any]) -> None:
    run_both(json.dumps(MODEL).encode(), apply_mutations(VALID_SCHEMA, mutations))


# --- hand-listed cases ---------------------------------------------------------------------


def edit(change: Callable[[dict[str, Any]], Any]) -> bytes:
    doc = copy.deepcopy(MODEL)
    change(doc)
    return json.dumps(doc).encode()


def tree0(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["trees"][0]


def unreachable_cycle(doc: dict[str, Any]) -> None:
    """Nodes 1 and 2 are each other's child and unreachable from the root: every node but
    the root is still some node's child exactly once."""
    doc["trees"][0] = {
        "feature": [0, 1, 2, -1, -1, -1, -1], "threshold": [0.5, 0.5, 0.5, None, None, None, None],
        "left": [3, 2, 1, -1, -1, -1, -1], "right": [4, 5, 6, -1, -1, -1, -1],
        "leaf_of_node": [-1, -1, -1, 0, 1, 2, 3],
        "counts": [[8, 8], [7, 7], [0, 0], [0, 0]],
    }


def set_in(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


MODEL_CASES: dict[str, bytes] = {
    "no trees": edit(set_in(("trees",), [])),
    "label_name equal to a feature name": edit(set_in(("label_name",), "f0")),
    "bootstrap the string 'false'": edit(set_in(("bootstrap",), "false")),
    "feature_names a string": edit(set_in(("feature_names",), "f0f1f2")),
    "feature_names a string of six letters": edit(set_in(("feature_names",), "abcdef")),
    "fractional feature index": edit(lambda d: tree0(d)["feature"].__setitem__(0, 0.5)),
    "NaN threshold": edit(lambda d: tree0(d)["threshold"].__setitem__(0, math.nan)),
    "infinite threshold": edit(lambda d: tree0(d)["threshold"].__setitem__(0, math.inf)),
    "duplicate classes": edit(set_in(("classes",), [0, 0])),
    "duplicate feature names": edit(set_in(("feature_names",), ["f0"] * 6)),
    "no classes": edit(set_in(("classes",), [])),
    "classes a string": edit(set_in(("classes",), "01")),
    "version true": edit(set_in(("version",), True)),
    "version 1.0": edit(set_in(("version",), 1.0)),
    "noise an empty object": edit(set_in(("noise",), {})),
    "noise with string fields": edit(set_in(("noise",), {"kind": 1, "epsilon": "a",
                                                          "scale": None})),
    "facts a list": edit(set_in(("facts",), [1, 2])),
    "label_name null": edit(set_in(("label_name",), None)),
    "source a list": edit(set_in(("source",), [])),
    "feature names null": edit(set_in(("feature_names",), [None] * 6)),
    "negative count": edit(lambda d: tree0(d)["counts"][0].__setitem__(0, -3)),
    "count 10**30": edit(lambda d: tree0(d)["counts"][0].__setitem__(0, 10**30)),
    "count 2**63": edit(lambda d: tree0(d)["counts"][0].__setitem__(0, 2**63)),
    "counts NaN": edit(lambda d: tree0(d)["counts"][0].__setitem__(0, math.nan)),
    "feature index 2**63": edit(lambda d: tree0(d)["feature"].__setitem__(0, 2**63)),
    "left child out of range": edit(lambda d: tree0(d)["left"].__setitem__(0, 10**6)),
    "multiplicities ragged": edit(lambda d: tree0(d).__setitem__("multiplicities", [1, [2]])),
    "n_samples a dict": edit(lambda d: tree0(d).__setitem__("n_samples", {})),
    "a tree that is a list": edit(lambda d: d["trees"].__setitem__(0, [])),
    "a tree with a cycle unreachable from the root": edit(unreachable_cycle),
    "trees deeply nested": json.dumps({**MODEL, "trees": "@"}).replace('"@"', DEEP_TEXT).encode(),
    "a JSON list": b"[]",
    "an empty file": b"",
    "not JSON": b"model = forest",
    "truncated": json.dumps(MODEL).encode()[:200],
    "not UTF-8": b"\xff\xfe{}",
    "deeply nested list": DEEP_TEXT.encode(),
}


@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_a_hand_broken_model_is_verified_or_refused_in_one_line(case: str) -> None:
    run_both(MODEL_CASES[case])


SCHEMA_CASES: dict[str, Any] = {
    "a list": [],
    "null": None,
    "numerical a list": {"numerical": []},
    "numerical bounds strings": {"numerical": {"f2": ["a", "b"]}},
    "numerical bounds NaN": {"numerical": {"f2": [math.nan, 1]}},
    "numerical bounds reversed": {"numerical": {"f2": [1, 0]}},
    "numerical bounds null": {"numerical": {"f2": None}},
    "numerical bounds 10**400": {"numerical": {"f2": [0, 10**400]}},
    "ordinal fractional bounds": {"ordinal": {"f3": [0.2, 0.7]}},
    "ordinal infinite bounds": {"ordinal": {"f3": [-math.inf, math.inf]}},
    "groups a string": {"one_hot_groups": "f0f1"},
    "a group a string": {"one_hot_groups": ["f0f1"]},
    "a group of one": {"one_hot_groups": [["f0"]]},
    "a group naming a column twice": {"one_hot_groups": [["f0", "f0"]]},
    "a group of numbers": {"one_hot_groups": [[0, 1]]},
    "a group holding a dict": {"at_most_one_groups": [[{}, {}]]},
    "a group of null": {"at_most_one_groups": None},
    "an unknown column": {"ordinal": {"age": [0, 9]}},
    "an unknown key": {"columns": []},
    "a column in both groups": {"one_hot_groups": [["f0", "f1"]],
                                "at_most_one_groups": [["f1", "f2"]]},
}


@pytest.mark.parametrize("case", sorted(SCHEMA_CASES))
def test_a_hand_broken_schema_is_verified_or_refused_in_one_line(case: str) -> None:
    run_both(json.dumps(MODEL).encode(), json.dumps(SCHEMA_CASES[case]).encode())


SCHEMA_TEXTS: dict[str, bytes] = {
    "empty": b"",
    "an open brace": b"{",
    "a deeply nested list": DEEP_TEXT.encode(),
    "numerical deeply nested": b'{"numerical": ' + DEEP_TEXT.encode() + b"}",
    "not UTF-8": b"\xff",
    "NaN": b"NaN",
}


@pytest.mark.parametrize("case", sorted(SCHEMA_TEXTS))
def test_a_schema_that_is_not_json_is_refused_in_one_line(case: str) -> None:
    run_both(json.dumps(MODEL).encode(), SCHEMA_TEXTS[case])
