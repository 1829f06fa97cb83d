"""What every command shares: backend selection, JSON/table output and exit codes.

Exit codes are a contract: 0 done (whatever the business outcome), 2 bad input or usage
(one line on stderr naming the problem, nothing written), 1 unexpected error.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

from stepsaga._project.home import StateHome
from stepsaga._project.project import Project
from stepsaga.cli._json import print_json
from stepsaga.errors import InvalidInputError, NotFoundError, StepSagaError

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2


class BackendKind(StrEnum):
    local = "local"
    aws = "aws"


@dataclass(frozen=True)
class CliContext:
    backend: BackendKind
    home: StateHome
    #: ``--stack``: the CloudFormation stack whose outputs configure ``--backend aws``.
    stack: str | None = None
    #: ``--project``: the folder whose ``pyproject.toml`` declares the sagas (else found
    #: from the working directory upward).
    project_dir: Path | None = None
    _project: list[Project] = field(default_factory=list, compare=False, repr=False)

    def project(self) -> Project:
        """The project (found once; ``InvalidInputError`` in one line if there is none)."""
        if not self._project:
            found = Project.load(self.project_dir) if self.project_dir else Project.find()
            self._project.append(found.importable())
        return self._project[0]


def cli_context(ctx: typer.Context) -> CliContext:
    obj = ctx.find_root().obj
    if not isinstance(obj, CliContext):  # a sub-app invoked on its own (tests)
        return CliContext(BackendKind.local, StateHome.from_env())
    return obj


#: Piped output keeps every id on one line (a table cell never wraps a key into two
#: lines a script or a person would have to paste back together).
stdout = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 4096)


def usage_error(message: str) -> NoReturn:
    """Bad input or usage: one line on stderr, exit 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def refusal_lines(exc: StepSagaError) -> list[str]:
    """What a refusal prints: one line per problem (a file with three bad fields says all
    three), else its one-line message."""
    problems = exc.data.get("problems")
    if isinstance(problems, list | tuple) and len(problems) > 1:
        return [" ".join(str(line).split()) for line in problems]
    return [exc.message]


def refuse(exc: StepSagaError) -> NoReturn:
    """Bad input: every problem on its own ``error:`` line on stderr, exit 2."""
    for line in refusal_lines(exc):
        typer.echo(f"error: {line}", err=True)
    raise typer.Exit(EXIT_USAGE)


def next_page_command(
    words: list[str], flags: dict[str, str | None], token: str | None
) -> str | None:
    """The command line that prints the next page (the same flags, the page's token), or
    None when there is no next page."""
    if token is None:
        return None
    given = [part for flag, value in flags.items() if value is not None for part in (flag, value)]
    return shlex.join([*words, *given, "--next-token", token])


def emit(data: Any, as_json: bool, render: Callable[[Any], None]) -> None:
    """Print ``data`` as JSON for scripts or through ``render`` for people."""
    if as_json:
        print_json(data)
    else:
        render(data)


@contextmanager
def exit_codes() -> Iterator[None]:
    """Map our errors to the CLI's exit codes with a one-line message."""
    try:
        yield
    except (InvalidInputError, NotFoundError) as exc:
        refuse(exc)
    except StepSagaError as exc:
        typer.echo(f"error: {type(exc).__name__}: {exc.message}", err=True)
        raise typer.Exit(EXIT_UNEXPECTED) from None
