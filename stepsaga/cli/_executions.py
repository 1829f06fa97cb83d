"""``stepsaga list``: executions newest first, filtered and paged like ``ListExecutions``.

The filters and the token are the backend's (``SagaBackend.list_executions``), so an
operator console reading the same method pages the same way. The table ends with the
command that prints the next page, ready to paste.
"""

from __future__ import annotations

from typing import Annotated

import typer

from stepsaga.backends import to_json
from stepsaga.cli._backend import command_errors, open_backend, print_json
from stepsaga.cli._common import cli_context, next_page_command, stdout
from stepsaga.cli._output import JsonOption, LimitOption, NextTokenOption, OutputOption, wants_json
from stepsaga.cli._tables import render_executions


def list_executions(
    ctx: typer.Context,
    saga: Annotated[
        str | None, typer.Option("--saga", help="Only this saga of the project.")
    ] = None,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant.")] = None,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            metavar="STATUS",
            help="Only this execution status: RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED "
            "or PENDING_REDRIVE.",
        ),
    ] = None,
    outcome: Annotated[
        str | None,
        typer.Option(
            "--outcome",
            metavar="OUTCOME",
            help="Only this case outcome: completed, compensated, compensation_failed, "
            "awaiting_reconciliation, running or failed.",
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="WHEN",
            help="Started at or after: 2026-11-29T09:30:00Z, 2026-11-29 (UTC) or an age "
            "(90s, 15m, 6h, 7d, 2w).",
        ),
    ] = None,
    limit: LimitOption = None,
    next_token: NextTokenOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """List executions, newest first, one page at a time."""
    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors(), open_backend(cli, saga) as backend:
        page = backend.list_executions(
            saga=saga,
            tenant=tenant,
            status=status,
            outcome=outcome,
            since=since,
            limit=limit,
            next_token=next_token,
        )
        if as_json:
            print_json(to_json(page))
            return
        flags = {
            "--saga": saga,
            "--tenant": tenant,
            "--status": status,
            "--outcome": outcome,
            "--since": since,
            "--limit": None if limit is None else str(limit),
        }
        command = next_page_command(["stepsaga", "list"], flags, page.next_token)
        render_executions(stdout, page, command)
