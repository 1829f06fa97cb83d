"""What every command shares: backend selection, JSON/table output and exit codes.

Exit codes are a contract: 0 done (whatever the business outcome), 2 bad input or usage
(one line on stderr naming the problem, nothing written), 1 unexpected error.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NoReturn

import typer
from rich.console import Console

from stepsaga.errors import InvalidInputError, NotFoundError, StepSagaError
from stepsaga.home import StateHome

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2


class Backend(StrEnum):
    local = "local"
    aws = "aws"


@dataclass(frozen=True)
class CliContext:
    backend: Backend
    home: StateHome
    #: ``--stack``: the CloudFormation stack whose outputs configure ``--backend aws``.
    stack: str | None = None


def cli_context(ctx: typer.Context) -> CliContext:
    obj = ctx.find_root().obj
    if not isinstance(obj, CliContext):  # a sub-app invoked on its own (tests)
        return CliContext(Backend.local, StateHome.from_env())
    return obj


stdout = Console(soft_wrap=True)


def usage_error(message: str) -> NoReturn:
    """Bad input or usage: one line on stderr, exit 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


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
        usage_error(exc.message)
    except StepSagaError as exc:
        typer.echo(f"error: {exc.error_name()}: {exc.message}", err=True)
        raise typer.Exit(EXIT_UNEXPECTED) from None
