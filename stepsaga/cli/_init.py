"""``stepsaga init DIR``: scaffold a new project (``stepsaga.scaffold``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from stepsaga._util.clock import SystemClock
from stepsaga.cli._backend import command_errors


def init(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="A new or empty folder.")],
) -> None:
    """Make a new project: \\[tool.stepsaga], a sample saga, its handlers, fakes and tests."""
    from stepsaga.scaffold import create_project

    with command_errors():
        written = create_project(folder, now=SystemClock().now())
    typer.echo(f"created {folder} ({len(written)} files): a subscription-upgrade sample saga")
    typer.echo(f"next: cd {folder} && pytest && stepsaga start examples/case.json")
