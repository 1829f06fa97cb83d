"""``stepsaga ledger``: look at action records and sweep stale claims.

Reads never create a ledger file: listing a home that has none shows nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from stepsaga._util.paging import check_limit
from stepsaga.cli._common import (
    BackendKind,
    CliContext,
    cli_context,
    emit,
    exit_codes,
    next_page_command,
    stdout,
)
from stepsaga.cli._output import (
    JsonOption,
    LimitOption,
    NextTokenOption,
    OutputOption,
    wants_json,
)
from stepsaga.errors import NotFoundError
from stepsaga.ledger import Ledger, open_ledger
from stepsaga.ledger._connect import SqliteUrl, parse_url
from stepsaga.ledger._models import Record
from stepsaga.ledger._paging import LedgerPage, decode_token
from stepsaga.ledger._rules import parse_status

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
    return ledger_of(cli_context(ctx), url)


def ledger_of(cli: CliContext, url: str | None = None) -> Ledger | None:
    """The ledger ``--backend`` (or ``url``) names, or None when a local ledger file does
    not exist yet (reads never create one). The console reads records through it too."""
    if url is None and cli.backend is BackendKind.aws:
        from stepsaga.backends._aws import ledger_url  # boto3 and the stack only when asked

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
    limit: LimitOption = None,
    next_token: NextTokenOption = None,
    url: UrlOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """List action records, oldest first, one page at a time (an index query, never a scan)."""
    as_json = wants_json(output, as_json)
    with exit_codes():
        ledger = _open(ctx, url)
        if ledger is None:
            check_limit(limit)
            wanted = parse_status(status)  # nothing to read, but a bad flag is still an error
            decode_token("records", (tenant, case, wanted.value if wanted else None), next_token)
            page: LedgerPage[Record] = LedgerPage(())
        else:
            with ledger:
                page = ledger.page(
                    tenant=tenant, case=case, status=status, limit=limit, next_token=next_token
                )
        data = {"records": [r.to_dict() for r in page.items], "next_token": page.next_token}
        flags = {"--tenant": tenant, "--case": case, "--status": status, "--url": url}
        flags["--limit"] = None if limit is None else str(limit)
        command = next_page_command(["stepsaga", "ledger", "list"], flags, page.next_token)
        emit(data, as_json, lambda d: _render_list(d["records"], command))


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
    limit: LimitOption = None,
    next_token: NextTokenOption = None,
    url: UrlOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Turn IN_PROGRESS records whose lease expired past the grace period into UNKNOWN,
    at most --limit per run (read from an index of the claims in flight).

    Never refunds: an expired lease proves a lost worker, not a failed effect.
    """
    as_json = wants_json(output, as_json)
    with exit_codes():
        ledger = _open(ctx, url)
        page: LedgerPage[Record] = LedgerPage(())
        if ledger is None:
            check_limit(limit)
            decode_token("sweep", (), next_token)
        else:
            with ledger:
                page = ledger.sweep_page(limit=limit, next_token=next_token)
        data = {"swept": [r.to_dict() for r in page.items], "next_token": page.next_token}
        flags = {"--url": url, "--limit": None if limit is None else str(limit)}
        command = next_page_command(["stepsaga", "ledger", "sweep"], flags, page.next_token)
        emit(data, as_json, lambda d: _render_swept(d["swept"], command))


@app.command("reindex")
def reindex(
    ctx: typer.Context,
    url: UrlOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Give every record and item of a DynamoDB ledger the index attributes of this
    version (run once after an upgrade: items written before an index existed are
    otherwise missing from listings and case lookups). Scans the table; repeatable.

    A SQLite ledger needs none: it builds its indexes when it is opened.
    """
    as_json = wants_json(output, as_json)
    with exit_codes():
        cli = cli_context(ctx)
        if url is None and cli.backend is BackendKind.aws:
            from stepsaga.backends._aws import ledger_url

            url = ledger_url(cli)
        target = url or cli.home.ledger_url
        data = {"scanned": 0, "updated": 0}
        if not isinstance(parse_url(target), SqliteUrl):
            from stepsaga.ledger._connect import open_store
            from stepsaga.ledger._dynamodb import DynamoDBStore

            store = open_store(target)
            if isinstance(store, DynamoDBStore):
                done = store.reindex()
                data = {"scanned": done.scanned, "updated": done.updated}
            store.close()
        emit(data, as_json, _render_reindexed)


def _render_reindexed(data: dict[str, int]) -> None:
    read, fixed = data["scanned"], data["updated"]
    stdout.print(f"{read} item(s) read, {fixed} given this version's index attributes")


def _render_list(records: list[dict[str, Any]], next_command: str | None = None) -> None:
    if not records:
        stdout.print("no ledger records")
    else:
        _render_table(records)
    _render_next(next_command)


def _render_next(next_command: str | None) -> None:
    if next_command is not None:
        stdout.print(f"[dim]next page: {escape(next_command)}[/]", highlight=False)


def _render_table(records: list[dict[str, Any]]) -> None:
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


def _render_swept(records: list[dict[str, Any]], next_command: str | None = None) -> None:
    if not records:
        stdout.print("no stale claims")
    else:
        stdout.print(f"{len(records)} stale claim(s) are now UNKNOWN, ready for reconciliation:")
        _render_table(records)
    _render_next(next_command)
