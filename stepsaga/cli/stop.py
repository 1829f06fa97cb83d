"""``stepsaga stop EXECUTION | --case ID``: close a case an operator gives up on.

The execution stops (AWS ``StopExecution``; the embedded engine's own) with
``Stepsaga.Stopped`` and a cause naming who and why; the ledger is settled so nothing in
flight is silently dropped (``stepsaga.backends.lifecycle``). A stopped execution is never
redriven; a new revision of the case may start once it is stopped.
"""

from __future__ import annotations

from typing import Annotated

import typer

from stepsaga.backends import to_json
from stepsaga.cli.backend import command_errors, open_backend, print_json
from stepsaga.cli.common import cli_context, stdout, usage_error
from stepsaga.cli.output import JsonOption, OutputOption, wants_json
from stepsaga.cli.run import TenantOption
from stepsaga.cli.tables import render_execution
from stepsaga.person import check_note, check_person


def stop(
    ctx: typer.Context,
    by: Annotated[
        str, typer.Option("--by", help="Who stops it, 3 to 254 characters (kept as the cause).")
    ],
    note: Annotated[str, typer.Option("--note", help="Why (kept as the cause).")],
    ref: Annotated[
        str | None,
        typer.Argument(metavar="[EXECUTION]", help="An execution name or ARN.", show_default=False),
    ] = None,
    case_id: Annotated[
        str | None, typer.Option("--case", help="Stop this case's newest execution instead.")
    ] = None,
    tenant: TenantOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stop a running execution and close its case (outcome stopped; never redriven)."""
    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors():
        if (ref is None) == (case_id is None):
            usage_error("give either EXECUTION or --case CASE_ID")
        target = ref if ref is not None else case_id
        assert target is not None
        who, why = check_person(by, "--by"), check_note(note, "--note")
        with open_backend(cli) as backend:
            view = backend.stop(target, tenant=tenant, by=who, note=why)
        if as_json:
            print_json(to_json(view))
        else:
            render_execution(stdout, view)
