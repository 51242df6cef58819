"""``treeleaks inspect``: what a model file exposes to anyone who holds it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from treeleaks.cli.app import (
    EXIT_BAD_INPUT,
    Force,
    ModelArg,
    SchemaOption,
    TrustPickle,
    app,
    bound_schema,
    fail,
    guard_outputs,
    load_any_model,
    write_all,
)

if TYPE_CHECKING:
    from treeleaks.frontends.rule_list import RuleList
    from treeleaks.ir.model import ReleasedModel
    from treeleaks.ir.schema import FeatureSchema
    from treeleaks.ir.schema_hints import SuggestedGroup


PROBE_SECONDS = 1.5  # inspect lists cells at most this long to estimate the cost


@app.command()
def inspect(
    model_path: ModelArg,
    schema: SchemaOption = None,
    suggest_schema: Annotated[
        Path | None,
        typer.Option(help="Write the one-hot / at-most-one groups the column names and the "
                     "model suggest to this schema JSON, for review and --schema."),
    ] = None,
    trust_pickle: TrustPickle = False,
    force: Force = False,
) -> None:
    """Show what a model file exposes to anyone who holds it, and what rebuilding its
    training set would take."""
    from treeleaks.ir.model import ReleasedModel
    from treeleaks.ir.schema_hints import schema_json, suggest_groups

    guard_outputs(model_path, schema, [suggest_schema] if suggest_schema is not None else [],
                  force)
    model = load_any_model(model_path, trust_pickle, allow_regression=True,
                           counts_removed_ok=True)
    if not isinstance(model, ReleasedModel):  # audit reads rule lists: so does inspect
        _inspect_rule_list(model_path, model, suggest_schema)
        return
    bound = bound_schema(schema, model)
    declared = {name for group in bound.one_hot_groups + bound.at_most_one_groups
                for name in group}
    groups = [g for g in suggest_groups(model) if not declared.intersection(g.columns)]
    table = _inspect_table(model_path, model)
    if _costed(model):
        table.add_row("Estimated cost", _cost_estimate(model, bound))
    if groups:
        table.add_row("Looks one-hot encoded", _groups_text(groups, suggest_schema is None))
    Console().print(table)
    if suggest_schema is not None:
        write_all({suggest_schema: json.dumps(schema_json(groups), indent=2) + "\n"})
        Console().print(f"Wrote {len(groups)} suggested group(s) to {escape(str(suggest_schema))}"
                        "; check them before passing --schema")


def _inspect_rule_list(path: Path, rule_list: RuleList, suggest_schema: Path | None) -> None:
    """A rule list's table (--suggest-schema refused: it reads a tree model's splits)."""
    if suggest_schema is not None:
        fail("--suggest-schema reads a tree model's splits; a rule list's columns are "
             "its conditions' (pass --schema to the commands that take one)",
             EXIT_BAD_INPUT)
    Console().print(_rule_list_table(path, rule_list))


def _costed(model: ReleasedModel) -> bool:
    """Whether the cost of a reconstruction is estimated: a classifier with counts whose
    N is given (or inferred, for a DP forest)."""
    return ((model.n_rows is not None or model.noise is not None)
            and not model.is_regression and model.counts_released)


def _inspect_table(path: Path, model: ReleasedModel) -> Table:
    """What the file exposes: its shape, then what its reader says it stores."""
    table = Table(title=escape(f"What {path.name} exposes"), show_header=False,
                  title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for name, value in [*_shape_rows(model), *_stored_rows(model)]:
        table.add_row(name, value)
    return table


def _shape_rows(model: ReleasedModel) -> list[tuple[str, str]]:
    """Source, trees, leaves, depth, classes, label and the columns and features."""
    rows = [("Source", escape(model.source or "treeleaks JSON")),
            ("Trees", str(model.n_trees)),
            ("Leaves per tree", _spread([tree.n_leaves for tree in model.trees])),
            ("Depth", _spread([tree.depth for tree in model.trees]))]
    if not model.is_regression:
        rows.append(("Classes", escape(", ".join(map(str, model.classes)))))
    rows.append(("Label column", escape(model.label_name)))
    names = model.feature_names
    if model.inputs is not None:  # the table's columns, read as the features below
        rows.append(("Columns", escape(model.inputs.summary())))
    rows.append(("Features", escape(f"{len(names)}: {', '.join(names[:8])}"
                                    f"{', ...' if len(names) > 8 else ''}")))
    unsplit = sum(t.size == 0 for t in model.thresholds())
    rows.append(("Features never split on", str(unsplit)))
    return rows


def _stored_rows(model: ReleasedModel) -> list[tuple[str, str]]:
    """The reader's words, contradictions, the smallest leaf, the noise and the facts."""
    rows = [(escape(name), escape(words))  # the words every command prints
            for name, words in model.described().rows()]
    if model.contradictions:  # an edited file: reconstruct answers INFEASIBLE
        rows.append(("Contradicts itself", escape("; ".join(model.contradictions)
                                                  + " (no dataset gives this file)")))
    if model.noise is None and model.counts_released:
        rows.append(("Smallest leaf", _smallest_leaf(model)))
    noise = model.noise
    rows.append(("Noise", ("none (exact counts)" if model.counts_released else
                           "none (no counts in the file)") if noise is None else
                 f"{noise.kind}, epsilon={noise.epsilon:g}, scale={noise.scale:g}"))
    for key, value in model.facts.items():
        if key == "schema":  # the recorded domains, used unless --schema is given
            value = "recorded in the file (public domains the splits were drawn from)"
        rows.append((escape(key), escape(str(value))))
    return rows


def _rule_list_table(path: Path, rule_list: RuleList) -> Table:
    table = Table(title=escape(f"What {path.name} exposes"), show_header=False,
                  title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Rules", f"{len(rule_list.rules)} and the default")
    table.add_row("Classes", escape(", ".join(map(str, rule_list.classes))))
    table.add_row("Features", escape(f"{rule_list.n_features}: "
                                     f"{', '.join(rule_list.feature_names[:8])}"))
    for name, words in rule_list.described().rows():  # the words every command prints
        table.add_row(escape(name), escape(words))
    return table


def _cost_estimate(model: ReleasedModel, schema: FeatureSchema) -> str:
    """How far listing the cells gets within the engine's budget (and at most
    `PROBE_SECONDS`), so which strategy `reconstruct` will use."""
    import time

    from treeleaks.counts.cells import CellBudget, probe_cells

    deadline = time.perf_counter() + PROBE_SECONDS
    probe = probe_cells(model, schema, CellBudget(deadline=deadline))
    if probe.complete:
        return f"all {probe.n_trees} trees: {probe.n_cells:,} cells → cells enumerated"
    if any(not tree.counted for tree in model.trees):  # XGBoost's later trees
        return (f"stopped after {probe.trees_done} of {probe.n_trees} trees at "
                f"{probe.n_cells:,} cells → the trees without counts are read only over "
                "listed cells: within 80% of --time-limit, else the trees with counts alone")
    if model.noise is not None:  # the DP attack lists cells or stops
        return (f"stopped after {probe.trees_done} of {probe.n_trees} trees at "
                f"{probe.n_cells:,} cells → the DP attack may not finish listing them "
                "(it lists for half of --time-limit, within --max-memory)")
    if time.perf_counter() > deadline:
        return (f"listing did not finish in {PROBE_SECONDS:g} s ({probe.trees_done} of "
                f"{probe.n_trees} trees, {probe.n_cells:,} cells) → probably generated on "
                "demand (reconstruct lists for a quarter of --time-limit, at least 2 s)")
    return (f"stopped after {probe.trees_done} of {probe.n_trees} trees at {probe.n_cells:,} "
            "cells → rows pinned by single-row leaves first, then the other rows' cells "
            "listed if they fit, else generated on demand (see docs/engine.md)")


def _smallest_leaf(model: ReleasedModel) -> str:
    """The fewest distinct rows a leaf holds, and how many leaves hold a single row (each
    one singles a training row out)."""
    import numpy as np

    sizes = np.concatenate([t.n_samples if t.n_samples is not None else t.counts.sum(axis=1)
                            for t in model.trees if t.counted])
    single = int((sizes == 1).sum())
    return (f"{int(sizes.min()):,} row{'s' if sizes.min() != 1 else ''}; "
            + (f"{single:,} leaves hold a single row (treeleaks single-out lists what they "
               "reveal)" if single else "no leaf holds a single row"))


def _groups_text(groups: list[SuggestedGroup], how_to_use: bool) -> Text:
    """Each suggested group: its prefix, kind and columns (the first few); with
    ``how_to_use``, how to turn them into a schema."""
    lines = []
    for g in groups:
        kind = "one-hot" if g.exactly_one else "at most one"
        shown = ", ".join(g.columns[:4]) + (f", ... ({len(g.columns)})" if len(g.columns) > 4
                                             else "")
        lines.append(f"{g.prefix} ({kind}): {shown}")
    if how_to_use:
        lines.append("not assumed; --suggest-schema FILE writes them for --schema")
    return Text("\n".join(lines))


def _spread(values: list[Any]) -> str:
    import numpy as np

    if not values:
        return "-"
    return f"min {min(values)}, median {np.median(values):g}, max {max(values)}"
