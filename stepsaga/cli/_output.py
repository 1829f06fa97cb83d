"""One output convention for every command: ``--output json|table`` (``-o``), and
``--json`` as its alias (kept: scripts use it). Tables are the default."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from stepsaga.cli._common import usage_error


class OutputFormat(StrEnum):
    json = "json"
    table = "table"


OutputOption = Annotated[
    OutputFormat | None,
    typer.Option(
        "--output",
        "-o",
        help="json for scripts, table for people (the default).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Same as --output json.")]
#: Paging, the same on every command that lists.
LimitOption = Annotated[
    int | None,
    typer.Option("--limit", metavar="N", help="At most N per page, 1 to 1000 (default 100)."),
]
NextTokenOption = Annotated[
    str | None,
    typer.Option("--next-token", metavar="TOKEN", help="The previous page's token (same filters)."),
]


def wants_json(output: OutputFormat | None, as_json: bool) -> bool:
    """Whether to print JSON; ``--json --output table`` is a usage error (exit 2)."""
    if as_json and output is OutputFormat.table:
        usage_error("--json and --output table disagree: give one of them")
    return as_json or output is OutputFormat.json
