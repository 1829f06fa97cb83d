"""The ``stepsaga`` command line (typer). One module per command group.

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
- ``render_execution``, ``render_items``, ``render_resolution``, ``outcome_text`` — the
  tables ``stepsaga status`` and ``recon list`` print.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.cli.backend import command_errors, log_level, open_backend, print_json
    from stepsaga.cli.common import Backend, CliContext, cli_context, stdout, usage_error
    from stepsaga.cli.output import JsonOption, OutputFormat, OutputOption, wants_json
    from stepsaga.cli.progress import live
    from stepsaga.cli.run import checked_time_scale
    from stepsaga.cli.tables import (
        outcome_text,
        render_execution,
        render_items,
        render_resolution,
    )

_WHERE = {
    "command_errors": "stepsaga.cli.backend",
    "log_level": "stepsaga.cli.backend",
    "open_backend": "stepsaga.cli.backend",
    "print_json": "stepsaga.cli.backend",
    "Backend": "stepsaga.cli.common",
    "CliContext": "stepsaga.cli.common",
    "cli_context": "stepsaga.cli.common",
    "stdout": "stepsaga.cli.common",
    "usage_error": "stepsaga.cli.common",
    "JsonOption": "stepsaga.cli.output",
    "OutputFormat": "stepsaga.cli.output",
    "OutputOption": "stepsaga.cli.output",
    "wants_json": "stepsaga.cli.output",
    "live": "stepsaga.cli.progress",
    "checked_time_scale": "stepsaga.cli.run",
    "outcome_text": "stepsaga.cli.tables",
    "render_execution": "stepsaga.cli.tables",
    "render_items": "stepsaga.cli.tables",
    "render_resolution": "stepsaga.cli.tables",
}

__all__ = [
    "Backend",
    "CliContext",
    "JsonOption",
    "OutputFormat",
    "OutputOption",
    "checked_time_scale",
    "cli_context",
    "command_errors",
    "live",
    "log_level",
    "open_backend",
    "outcome_text",
    "print_json",
    "render_execution",
    "render_items",
    "render_resolution",
    "stdout",
    "usage_error",
    "wants_json",
]


__getattr__ = lazy_getattr(__name__, _WHERE)
