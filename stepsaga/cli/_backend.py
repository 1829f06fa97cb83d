"""What the run/recon/graph/demo commands share: opening the chosen backend, one-line
errors for everything (exit 1 for the unexpected, never a traceback), the JSON printer
(``stepsaga.cli._json``, re-exported here).
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

import typer

from stepsaga.backends import SagaBackend
from stepsaga.backends._local import LocalBackend
from stepsaga.cli._common import EXIT_UNEXPECTED, BackendKind, CliContext, exit_codes, usage_error
from stepsaga.cli._json import jsonable as jsonable
from stepsaga.cli._json import print_json as print_json
from stepsaga.errors import IllegalTransitionError

log = logging.getLogger(__name__)

#: The handlers' log level on the local backend (their JSON logs go to stderr).
LOG_LEVEL_ENV = "STEPSAGA_LOG_LEVEL"

#: The module that provides ``open_backend(cli: CliContext) -> SagaBackend`` for AWS.
AWS_BACKEND_MODULE = "stepsaga.backends._aws"


def open_backend(cli: CliContext, saga: str | None = None) -> SagaBackend:
    """The backend ``--backend`` chose, for the project's sagas (on AWS: the stack's saga,
    ``saga`` or the only one). Opening it writes nothing."""
    if cli.backend is BackendKind.local:
        project = cli.project()
        if saga is not None:
            project.saga(saga)  # an undeclared --saga is exit 2, on either backend
        return LocalBackend(cli.home, project, log_level=log_level())
    try:
        module = importlib.import_module(AWS_BACKEND_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != AWS_BACKEND_MODULE:
            raise
        module = None
    opener = getattr(module, "open_backend", None)
    if opener is None:
        usage_error("--backend aws is not available in this build")
    return cast(SagaBackend, opener(cli, cli.project(), saga))


def log_level() -> str:
    """``$STEPSAGA_LOG_LEVEL`` (DEBUG … CRITICAL), default ERROR: a person reading a
    table does not want every handler's warning; scripts can turn them on."""
    level = os.environ.get(LOG_LEVEL_ENV, "").strip().upper()
    return level if level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") else "ERROR"


@contextmanager
def command_errors() -> Iterator[None]:
    """``exit_codes`` plus: a refused state change (e.g. resolving an item the other way)
    is exit 2; anything unexpected is one line and exit 1."""
    try:
        with exit_codes():
            try:
                yield
            except IllegalTransitionError as exc:
                usage_error(exc.message)
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except Exception as exc:
        log.debug("unexpected error", exc_info=True)
        message = " ".join(str(exc).split()) or "no details"
        typer.echo(f"error: unexpected {type(exc).__name__}: {message}", err=True)
        raise typer.Exit(EXIT_UNEXPECTED) from None
