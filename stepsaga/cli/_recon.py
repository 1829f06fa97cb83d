"""``stepsaga recon list | show | resolve | verify-audit``: the questions only a person can
answer, and the check that their answers' audit records are whole.

``resolve`` records the finding (ledger record and item in one transaction) and lets a
case waiting on the item continue to its next waiting point or its end.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.markup import escape

from stepsaga._model.person import check_note, check_person
from stepsaga.backends import ReconFilter, to_json
from stepsaga.cli._backend import command_errors, open_backend, print_json
from stepsaga.cli._common import (
    EXIT_UNEXPECTED,
    BackendKind,
    CliContext,
    cli_context,
    exit_codes,
    next_page_command,
    stdout,
)
from stepsaga.cli._ledger import ledger_of
from stepsaga.cli._output import JsonOption, LimitOption, NextTokenOption, OutputOption, wants_json
from stepsaga.cli._progress import live
from stepsaga.cli._run import StackSagaOption, TimeScaleOption
from stepsaga.cli._tables import render_item, render_items, render_resolution
from stepsaga.errors import InvalidInputError
from stepsaga.ledger._audit import AuditBreak, Copies, verify
from stepsaga.ledger._models import ReconOutcome, ReconStatus

app = typer.Typer(
    help="List, inspect and resolve reconciliation items.",
    no_args_is_help=True,
)


@app.command("list")
def list_items(
    ctx: typer.Context,
    status: Annotated[
        ReconFilter, typer.Option("--status", help="open, resolved or all.")
    ] = ReconFilter.OPEN,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant.")] = None,
    case: Annotated[str | None, typer.Option("--case", help="Only this case id.")] = None,
    limit: LimitOption = None,
    next_token: NextTokenOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """List reconciliation items, oldest first, one page at a time (an index query)."""
    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors(), open_backend(cli) as backend:
        page = backend.recon_page(
            status=status, tenant=tenant, case=case, limit=limit, next_token=next_token
        )
        if as_json:
            print_json(to_json(page))
            return
        flags = {"--status": status.value, "--tenant": tenant, "--case": case}
        flags["--limit"] = None if limit is None else str(limit)
        render_items(stdout, page.items)
        command = next_page_command(["stepsaga", "recon", "list"], flags, page.next_token)
        if command is not None:
            stdout.print(f"[dim]next page: {escape(command)}[/]", highlight=False)


@app.command("show")
def show(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(metavar="ID", help="The item id.")],
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one item with its evidence."""
    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors(), open_backend(cli) as backend:
        item = backend.recon_show(item_id)
        if as_json:
            print_json(to_json(item))
        else:
            render_item(stdout, item)


def _outcome(value: str) -> ReconOutcome:
    """``applied`` / ``not-applied`` (the ledger's ``not_applied`` is accepted too)."""
    try:
        return ReconOutcome(value.strip().lower().replace("-", "_"))
    except ValueError:
        raise typer.BadParameter("must be applied or not-applied") from None


@app.command("resolve")
def resolve(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(metavar="ID", help="The item id.")],
    outcome: Annotated[
        ReconOutcome,
        typer.Option(
            "--outcome",
            parser=_outcome,
            metavar="applied|not-applied",
            help="applied: the effect happened; not-applied: it did not.",
        ),
    ],
    note: Annotated[
        str,
        typer.Option("--note", help="Why (kept on the item): one line, 1 to 1000 characters."),
    ],
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help=(
                "Who decided, 3 to 254 characters (kept on the item). Required locally; "
                "ignored on AWS, where your IAM identity is recorded."
            ),
        ),
    ] = None,
    time_scale: TimeScaleOption = None,
    saga: StackSagaOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Decide an item; a case waiting on it continues."""
    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors():
        note = check_note(note, "--note")
        if by is not None:
            by = check_person(by, "--by")
            if cli.backend is BackendKind.aws:
                typer.echo(
                    "note: --by is ignored on AWS; the decider is your IAM identity, as you sign "
                    "the request",
                    err=True,
                )
        with (
            open_backend(cli, saga) as backend,
            live(stdout, f"resolve {item_id}", not as_json) as on,
        ):
            resolution = backend.recon_resolve(
                item_id, outcome, by, note, time_scale=time_scale, on_event=on
            )
        if as_json:
            print_json(to_json(resolution))
        else:
            render_resolution(stdout, resolution)


@app.command("verify-audit")
def verify_audit(
    ctx: typer.Context,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant.")] = None,
    against_copies: Annotated[
        bool,
        typer.Option(
            "--against-copies",
            help="AWS: also hold each record to its first write-once copy in the audit bucket.",
        ),
    ] = False,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Recompute every resolved item's audit chain and name each break (exit 1 on any)."""
    as_json = wants_json(output, as_json)
    cli = cli_context(ctx)
    with exit_codes():
        copies = _write_once_copies(cli) if against_copies else None
        ledger = ledger_of(cli)
        found: list[AuditBreak] = []
        checked = 0
        if ledger is not None:
            with ledger:
                items = ledger.list_items(tenant=tenant, status=ReconStatus.RESOLVED)
                checked = len(items)
                audits = ((item, ledger.get_audit(item.item_id)) for item in items)
                found = list(verify(audits, copies))
    breaks = [b for b in found if b.is_break]
    unsealed = [b.item_id for b in found if not b.is_break]
    data = {"checked": checked, "breaks": [b.to_dict() for b in breaks], "unsealed": unsealed}
    if as_json:
        print_json(data)
    else:
        for b in breaks:
            stdout.print(f"BREAK {escape(b.item_id)} {b.kind.value}: {escape(b.detail)}")
        stdout.print(
            f"{checked} resolved items checked, {len(breaks)} breaks, {len(unsealed)} unsealed"
        )
    if breaks:
        raise typer.Exit(EXIT_UNEXPECTED)


def _write_once_copies(cli: CliContext) -> Copies:
    """The stack's audit bucket, read for ``--against-copies`` (AWS only)."""
    if cli.backend is not BackendKind.aws:
        raise InvalidInputError(
            "--against-copies: the write-once copies are on AWS (--backend aws)",
            field="against_copies",
        )
    from stepsaga._aws.audit_copy import first_copy
    from stepsaga.backends._aws import SessionClients, load_settings

    clients = SessionClients()
    settings = load_settings(
        stack=cli.stack, environ=dict(os.environ), cloudformation=clients.cloudformation
    )
    bucket = settings.audit_bucket
    if bucket is None:
        raise InvalidInputError(
            f"--against-copies: {settings.source} names no audit bucket (output "
            "AuditBucketName, or STEPSAGA_AUDIT_BUCKET)",
            field="against_copies",
        )
    import boto3

    s3 = boto3.client("s3", region_name=settings.region)
    return lambda item_id: first_copy(s3, bucket, item_id)
