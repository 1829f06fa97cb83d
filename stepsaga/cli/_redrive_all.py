"""``stepsaga redrive --all-failed [--error E] [--since T] [--max N]``: the bulk redrive.

The decisions are ``stepsaga.backends._bulk_redrive``'s; this prints them (a table, or
``--json``: the counts and one row per execution) and exits 0 when every redrive asked for
was accepted (nothing to do included), 1 when any was refused, 2 on bad flags.
"""

from __future__ import annotations

from datetime import datetime

import typer
from rich.console import Console
from rich.table import Table

from stepsaga._util.clock import Clock, SystemClock
from stepsaga.backends import to_json
from stepsaga.backends._base import SagaBackend
from stepsaga.backends._bulk_redrive import (
    BulkRedriveView,
    check_error,
    check_max,
    redrive_all_failed,
)
from stepsaga.backends._listing import parse_since
from stepsaga.cli._backend import print_json
from stepsaga.cli._common import EXIT_UNEXPECTED, BackendKind
from stepsaga.errors import InvalidInputError


def run_all_failed(
    backend: SagaBackend,
    console: Console,
    *,
    error: str | None,
    since: str | None,
    tenant: str | None,
    max_redrives: int | None,
    time_scale: float | None,
    as_json: bool,
) -> None:
    clock: Clock = getattr(backend, "clock", None) or SystemClock()
    view = redrive_all_failed(
        backend,
        now=clock.now(),
        error=error,
        since=since,
        tenant=tenant,
        max_redrives=max_redrives,
        time_scale=time_scale,
    )
    if as_json:
        print_json(to_json(view))
    else:
        render(console, view)
    if view.refused:
        raise typer.Exit(EXIT_UNEXPECTED)


def check_flags(
    backend: BackendKind,
    *,
    error: str | None,
    since: str | None,
    max_redrives: int | None,
    time_scale: float | None,
) -> None:
    """Every flag refused before the backend is opened (one line naming it, exit 2), even
    when there turns out to be nothing to redrive."""
    if backend is BackendKind.aws and time_scale is not None:
        raise InvalidInputError(
            "--time-scale scales the local engine's waits; AWS waits in real time",
            field="time_scale",
        )
    check_error(error)
    check_max(max_redrives)
    if since is not None:
        parse_since(since, datetime.now().astimezone())


def render(console: Console, view: BulkRedriveView) -> None:
    console.print(
        f"redriven {view.redriven}  skipped {view.skipped}  refused {view.refused}"
        + ("  (stopped at a bound: run it again for the rest)" if view.truncated else ""),
        highlight=False,
    )
    if not view.executions:
        console.print("no failed executions to redrive", highlight=False)
        return
    table = Table("execution", "error", "decision", "now", "detail")
    for row in view.executions:
        now = f"{row.status} {row.outcome.value}" if row.status and row.outcome else ""
        table.add_row(row.name, row.error or "", row.decision.value, now, row.detail)
    console.print(table)
