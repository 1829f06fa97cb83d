"""``stepsaga ledger``: look at action records and sweep stale claims.

Reads never create a ledger file: listing a home that has none shows nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from stepsaga.cli.common import Backend, cli_context, emit, exit_codes, stdout
from stepsaga.cli.output import JsonOption, OutputOption, wants_json
from stepsaga.errors import NotFoundError
from stepsaga.ledger import Ledger, open_ledger, parse_url
from stepsaga.ledger.connect import SqliteUrl
from stepsaga.ledger.rules import parse_status

app = typer.Typer(
    help="Inspect the action ledger and sweep stale claims into reconciliation.",
    no_args_is_help=True,
)

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="STEPSAGA_LEDGER_URL",
        help=(
            "sqlite:///PATH or dynamodb://TABLE?region=… (default: the local home's ledger; "
            "with --backend aws, the stack's table)."
        ),
        show_default=False,
    ),
]


def _open(ctx: typer.Context, url: str | None) -> Ledger | None:
    """The ledger to use, or None when a local ledger file does not exist yet."""
    cli = cli_context(ctx)
    if url is None and cli.backend is Backend.aws:
        from stepsaga.backends.aws import ledger_url  # boto3 and the stack only when asked

        url = ledger_url(cli)
    elif url is None:
        url = cli.home.ledger_url
    target = parse_url(url)
    if isinstance(target, SqliteUrl) and not Path(target.path).exists():
        return None
    return open_ledger(url)


@app.command("list")
def list_records(
    ctx: typer.Context,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant.")] = None,
    case: Annotated[str | None, typer.Option("--case", help="Only this case id.")] = None,
    status: Annotated[
        str | None,
        typer.Option("--status", help="IN_PROGRESS, COMPLETED, FAILED, UNKNOWN or RELEASED."),
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most N records.")] = None,
    url: UrlOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """List action records, oldest first."""
    as_json = wants_json(output, as_json)
    with exit_codes():
        ledger = _open(ctx, url)
        if ledger is None:
            parse_status(status)  # nothing to read, but a bad flag is still an error
            records: list[dict[str, Any]] = []
        else:
            with ledger:
                found = ledger.list(tenant=tenant, case=case, status=status, limit=limit)
                records = [record.to_dict() for record in found]
        emit(records, as_json, _render_list)


@app.command("show")
def show(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="The action key, e.g. acme:CASE-1:r1:refund.")],
    url: UrlOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one action record."""
    as_json = wants_json(output, as_json)
    with exit_codes():
        ledger = _open(ctx, url)
        record = None
        if ledger is not None:
            with ledger:
                record = ledger.get(key)
        if record is None:
            raise NotFoundError(f"no ledger record {key!r}", key=key)
        emit(record.to_dict(), as_json, _render_one)


@app.command("sweep")
def sweep(
    ctx: typer.Context,
    url: UrlOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Turn IN_PROGRESS records whose lease expired past the grace period into UNKNOWN.

    Never refunds: an expired lease proves a lost worker, not a failed effect.
    """
    as_json = wants_json(output, as_json)
    with exit_codes():
        ledger = _open(ctx, url)
        swept: list[dict[str, Any]] = []
        if ledger is not None:
            with ledger:
                swept = [record.to_dict() for record in ledger.sweep()]
        emit(swept, as_json, _render_swept)


def _render_list(records: list[dict[str, Any]]) -> None:
    if not records:
        stdout.print("no ledger records")
        return
    table = Table("key", "status", "effect", "attempts", "updated", "reference")
    for record in records:
        table.add_row(
            record["key"],
            record["status"],
            record["effect"],
            str(record["attempts"]),
            record["updated_at"],
            record["reference"] or "",
        )
    stdout.print(table)


def _render_one(record: dict[str, Any]) -> None:
    table = Table("field", "value", show_header=False)
    for name, value in record.items():
        table.add_row(name, "" if value is None else str(value))
    stdout.print(table)


def _render_swept(records: list[dict[str, Any]]) -> None:
    if not records:
        stdout.print("no stale claims")
        return
    stdout.print(f"{len(records)} stale claim(s) are now UNKNOWN, ready for reconciliation:")
    _render_list(records)
