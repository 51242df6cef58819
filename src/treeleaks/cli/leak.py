"""``treeleaks leak``: how much a single decision tree or rule list reveals of its training
rows (the probabilistic reconstruction and its entropy metrics)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from treeleaks.cli.app import (
    EXIT_BAD_INPUT,
    Force,
    ModelArg,
    SchemaOption,
    TrustPickle,
    app,
    describe,
    fail,
    guard_outputs,
    load_any_model,
    write_all,
)
from treeleaks.ir.model import ReleasedModel
from treeleaks.runtime.errors import TreeleaksError
from treeleaks.runtime.paths import unreadable

FOREST_NOTE = ("a forest: these are per-tree figures (each tree alone, as if released by "
               "itself); the trees together reveal more, and 'treeleaks reconstruct' is the "
               "stronger attack on a forest")
BAR_WIDTH = 40


@app.command("leak")
def leak_command(
    model_path: ModelArg,
    schema: SchemaOption = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write dist, dist_g, n_rows and the per-leaf "
                                  "(per-rule) figures to this JSON file.")
    ] = None,
    rows_path: Annotated[
        Path | None, typer.Option("--rows", help="Write every training row's remaining-"
                                  "entropy ratio (grouped by leaf or rule) to this CSV file.")
    ] = None,
    domains_path: Annotated[
        Path | None, typer.Option("--domains", help="Write each leaf's (rule's) reduced "
                                  "domain of every attribute to this CSV file.")
    ] = None,
    top: Annotated[int, typer.Option(min=0, help="How many most-exposing leaves or rules "
                                     "to list.")] = 5,
    trust_pickle: TrustPickle = False,
    force: Force = False,
) -> None:
    """How much does a decision tree or rule list narrow down each training row? Prints
    dist and dist_g (1 = nothing revealed, 0 = every row recovered), the spread of the
    per-row ratio, and the leaves or rules that expose their rows most."""
    outputs = [p for p in (json_path, rows_path, domains_path) if p is not None]
    guard_outputs(model_path, schema, outputs, force)
    loaded = load_any_model(model_path, trust_pickle)
    rule_list = None if isinstance(loaded, ReleasedModel) else loaded
    parts, summaries = _reconstructions(loaded, schema)
    reports = _print_all(Console(), parts, summaries, top, rule_list)
    files: dict[Path, str] = {}
    if json_path is not None:
        files[json_path] = _json(reports)
    if rows_path is not None:
        files[rows_path] = _rows_csv(parts, summaries)
    if domains_path is not None:
        files[domains_path] = _domains_csv(parts)
    write_all(files)


def _reconstructions(loaded: Any, schema: Path | None) -> tuple[list[Any], list[Any]]:
    """The probabilistic reconstruction of the rule list, or of each tree, and their
    summaries; a bad schema or model refused in one line."""
    from treeleaks.attacks.probabilistic import rule_list_reconstruction, tree_reconstruction
    from treeleaks.evaluation.entropy import summarize
    from treeleaks.ir.schema import FeatureSchema

    if schema is not None and (problem := unreadable(schema, "schema file")):
        fail(problem, EXIT_BAD_INPUT)
    try:
        given = None if schema is None else FeatureSchema.from_json(schema)
        if not isinstance(loaded, ReleasedModel):
            parts = [rule_list_reconstruction(loaded, given)]
        else:
            parts = [tree_reconstruction(loaded, given, tree=t) for t in range(loaded.n_trees)]
        return parts, [summarize(part) for part in parts]
    except (TreeleaksError, ValueError, OSError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)


def _print_all(console: Console, parts: list[Any], summaries: list[Any], top: int,
               rule_list: Any) -> list[dict[str, Any]]:
    """Each part's figures (a forest's tree by tree, with the note) and their summaries."""
    reports = []
    for t, (part, summary) in enumerate(zip(parts, summaries)):
        if len(parts) > 1:
            console.rule(f"tree {t}")
        _print(console, part, summary, top, rule_list)
        reports.append(part.summary())
    if len(parts) > 1:
        console.print(f"[yellow]Note:[/] {FOREST_NOTE}")
    return reports


def _json(reports: list[dict[str, Any]]) -> str:
    data = reports[0] if len(reports) == 1 else {
        "model": "forest", "n_trees": len(reports), "note": FOREST_NOTE, "per_tree": reports}
    return json.dumps(data, indent=2) + "\n"


def _domains_csv(parts: list[Any]) -> str:
    import pandas as pd

    tables = [part.domain_table() for part in parts]
    if len(parts) > 1:
        tables = [table.assign(tree=t) for t, table in enumerate(tables)]
    return pd.concat(tables).to_csv(index=False)


def _print(console: Console, part: Any, summary: Any, top: int, rule_list: Any) -> None:
    table = Table(show_header=False, title_justify="left",
                  title="What the model reveals of its training rows (1 = nothing, 0 = all)")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("dist", f"{summary.dist:.4f}  (per-attribute average, Definition 2)")
    table.add_row("dist_g", f"{summary.dist_g:.4f}  (joint entropy over attribute vectors)")
    table.add_row("Training rows", str(summary.n_rows))
    table.add_row("Attributes", f"{len(part.attributes)} (entropy "
                  f"{sum(math.log2(a.size) for a in part.attributes):.1f} bits per row)")
    q = summary.quantiles
    table.add_row("Per-row ratio", "  ".join(f"{k:.0%}: {v:.3f}" for k, v in q.items()))
    console.print(table)
    counts, edges = summary.histogram()
    peak = max(counts.max(), 1)
    for count, low, high in zip(counts, edges[:-1], edges[1:]):
        bar = "█" * round(BAR_WIDTH * count / peak)
        console.print(f"  {low:.1f}-{high:.1f} {bar} {int(count)}")
    if top == 0:
        return
    plural = "leaves" if part.kind == "leaf" else "rules"
    exposed = Table(title=f"The {plural} that expose their rows most", title_justify="left")
    for column in (part.kind, "rows", "vectors admitted", "ratio", "dist"):
        exposed.add_column(column)
    if rule_list is not None:
        exposed.add_column("rule")
    for p in summary.most_exposed(top).tolist():
        cells = [part.paths[p], str(summary.support[p]), _vectors(part.admitted[p]),
                 f"{summary.path_ratio[p]:.3f}", f"{summary.path_dist[p]:.3f}"]
        if rule_list is not None:
            cells.append(escape(str(rule_list.all_rules[p])))
        exposed.add_row(*cells)
    console.print(exposed)


def _vectors(count: int) -> str:
    """An exact count, or its power of two once it is long."""
    return str(count) if count < 10**6 else f"2^{math.log2(count):.1f}"


def _rows_csv(parts: list[Any], summaries: list[Any]) -> str:
    lines = ["tree,path,row,ratio,dist"]
    for t, (part, summary) in enumerate(zip(parts, summaries)):
        row = 0
        for p, support in enumerate(summary.support.tolist()):
            for _ in range(support):
                lines.append(f"{t},{part.paths[p]},{row},{summary.path_ratio[p]:.6f},"
                             f"{summary.path_dist[p]:.6f}")
                row += 1
    return "\n".join(lines) + "\n"
