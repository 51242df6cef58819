"""MkDocs hook: the command reference, generated at build time from the CLI's own help.

A page holding the marker below gets, in its place, one section per ``treeleaks`` command
with the help text of ``treeleaks COMMAND --help``, formatted plain (no rich boxes). Nothing
is copied by hand, so the reference cannot drift from the commands.
"""

from __future__ import annotations

import copy

MARKER = "<!-- treeleaks-cli-reference -->"
WIDTH = 100


def _plain_help(command, ctx) -> str:
    """The help of one command as click formats it when typer's rich output is off."""
    plain = copy.copy(command)  # the app's own objects are left as they are
    plain.rich_markup_mode = None
    formatter = ctx.make_formatter()
    plain.format_help(ctx, formatter)
    return formatter.getvalue().rstrip()


def _sections(command, parent, name: str, depth: int):
    import typer

    ctx = typer.Context(command, info_name=name, parent=parent, terminal_width=WIDTH,
                        max_content_width=WIDTH)
    yield f"{'#' * depth} `{ctx.command_path}`\n\n```text\n{_plain_help(command, ctx)}\n```\n"
    list_commands = getattr(command, "list_commands", None)
    for sub_name in list_commands(ctx) if list_commands else []:
        sub = command.get_command(ctx, sub_name)
        if sub is not None and not sub.hidden:
            yield from _sections(sub, ctx, sub_name, min(depth + 1, 3))


def cli_reference() -> str:
    import typer

    from treeleaks.cli import app

    return "\n".join(_sections(typer.main.get_command(app), None, "treeleaks", 2))


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, cli_reference())
