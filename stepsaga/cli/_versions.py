"""``stepsaga versions prune --keep N [--stack S] [--dry-run]``: old state machine versions.

AWS only (versions exist only there): the stack's state machine
(``stepsaga.backends._aws.settings``), its versions pruned by
``stepsaga.backends._aws.versions`` (never one an alias, a running or a still redrivable
execution needs). Prints one row per version (``--json``: the view); exit 0 when every
delete asked for happened, 1 when AWS refused one, 2 on bad flags or configuration.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Annotated

import typer

from stepsaga.cli._backend import command_errors, jsonable, print_json
from stepsaga.cli._common import EXIT_UNEXPECTED, cli_context, stdout
from stepsaga.cli._output import JsonOption, OutputOption, wants_json

app = typer.Typer(
    help="State machine versions on AWS (one per deployed definition change).",
    no_args_is_help=True,
)


@app.command("prune")
def prune(
    ctx: typer.Context,
    keep: Annotated[
        int, typer.Option("--keep", metavar="N", help="Keep the N newest versions (1 to 1000).")
    ],
    stack: Annotated[
        str | None,
        typer.Option(
            "--stack",
            help="The stack (default: the root --stack, else $STEPSAGA_STACK or the "
            "environment's state machine).",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be deleted; delete nothing.")
    ] = False,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete old versions no alias, running or redrivable execution needs."""
    from stepsaga.backends._aws import SessionClients, load_settings
    from stepsaga.backends._aws.versions import check_keep, prune_versions

    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors():
        check_keep(keep)
        clients = SessionClients()
        try:
            settings = load_settings(
                stack=stack or cli.stack,
                environ=dict(os.environ),
                cloudformation=clients.cloudformation,
            )
            view = prune_versions(
                clients.stepfunctions(settings.region),
                settings.state_machine_arn,
                keep=keep,
                now=datetime.now(UTC),
                dry_run=dry_run,
            )
        finally:
            clients.close()
        if as_json:
            print_json(jsonable(asdict(view)))
        else:
            for row in view.versions:
                why = f" ({row.reason})" if row.reason else ""
                stdout.print(f"version {row.version}: {row.action}{why}", markup=False)
            counts = {a: len(view.rows(a)) for a in ("kept", "deleted", "would delete")}
            stdout.print(", ".join(f"{n} {a}" for a, n in counts.items() if n) or "no versions")
        if view.refused:
            raise typer.Exit(EXIT_UNEXPECTED)
