"""The ``stepsaga`` command line (typer): ``main`` runs it. One module per command group.

A project may add its own commands (``[tool.stepsaga.commands] name = "module:attr"``, a
``typer.Typer`` or a function). They get the same conventions through this toolkit:

- ``cli_context(ctx)`` → ``CliContext`` (``.backend``, ``.home``, ``.project()``);
- ``open_backend(cli)`` — the backend ``--backend`` chose, for the project's sagas;
- ``command_errors()`` — our errors as one line and exit 2 (bad input) or 1;
  ``usage_error(msg)``; ``print_json(data)``; ``stdout`` (a rich console);
- ``OutputOption`` + ``JsonOption`` and ``wants_json(output, as_json)`` — the one
  ``--output json|table`` convention (``--json`` its alias);
- ``live(console, title, enabled)`` — live progress of a running execution;
  ``checked_time_scale`` — the ``--time-scale`` option's check;
- ``render_items``, ``render_resolution``, ``outcome_text`` — the tables ``recon list``
  and ``recon resolve`` print; ``log_level`` — the ``--log-level`` option's check;
- ``BackendKind`` — ``--backend``'s values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.cli._app import main
    from stepsaga.cli._backend import command_errors, log_level, open_backend, print_json
    from stepsaga.cli._common import BackendKind, CliContext, cli_context, stdout, usage_error
    from stepsaga.cli._output import JsonOption, OutputOption, wants_json
    from stepsaga.cli._progress import live
    from stepsaga.cli._run import checked_time_scale
    from stepsaga.cli._tables import outcome_text, render_items, render_resolution

#: Where each public name is defined; loaded on first use (PEP 562).
_WHERE = {
    "main": "stepsaga.cli._app",
    "command_errors": "stepsaga.cli._backend",
    "log_level": "stepsaga.cli._backend",
    "open_backend": "stepsaga.cli._backend",
    "print_json": "stepsaga.cli._backend",
    "BackendKind": "stepsaga.cli._common",
    "CliContext": "stepsaga.cli._common",
    "cli_context": "stepsaga.cli._common",
    "stdout": "stepsaga.cli._common",
    "usage_error": "stepsaga.cli._common",
    "JsonOption": "stepsaga.cli._output",
    "OutputOption": "stepsaga.cli._output",
    "wants_json": "stepsaga.cli._output",
    "live": "stepsaga.cli._progress",
    "checked_time_scale": "stepsaga.cli._run",
    "outcome_text": "stepsaga.cli._tables",
    "render_items": "stepsaga.cli._tables",
    "render_resolution": "stepsaga.cli._tables",
}

#: The same names (a literal, so linters and type checkers read it; a test keeps the
#: three statements equal).
__all__ = [
    "BackendKind",
    "CliContext",
    "JsonOption",
    "OutputOption",
    "checked_time_scale",
    "cli_context",
    "command_errors",
    "live",
    "log_level",
    "main",
    "open_backend",
    "outcome_text",
    "print_json",
    "render_items",
    "render_resolution",
    "stdout",
    "usage_error",
    "wants_json",
]

if not TYPE_CHECKING:  # so mypy sees only the names imported above
    __getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return __all__
