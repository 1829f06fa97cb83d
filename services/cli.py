"""``stepsaga sim``: look at (and reset) the simulated downstream services of the local
backend. A project command of the reference app (``[tool.stepsaga.commands] sim``).

``sim effects`` reads the ``effects`` table — what the services actually did — so "exactly
once" can be checked from outside the code that claims it.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from services.simulated import ServicesDb, Simulation
from stepsaga import Money, SystemClock
from stepsaga.cli import (
    BackendKind,
    CliContext,
    JsonOption,
    OutputOption,
    cli_context,
    command_errors,
    print_json,
    stdout,
    wants_json,
)
from stepsaga.cli import usage_error as _usage_error
from stepsaga.errors import InvalidActionError

app = typer.Typer(
    help="Inspect or reset the simulated inventory, payments and shipping (local backend).",
    no_args_is_help=True,
)


def _simulation(cli: CliContext, *, create: bool) -> Simulation | None:
    """The simulation in ``cli.home``; ``None`` if it was never used and ``create`` is off
    (reading must not create files)."""
    if cli.backend is not BackendKind.local:
        _usage_error("sim: simulated services exist only on the local backend")
    path = cli.home.services_path
    if not path.exists():
        if not create:
            return None
        cli.home.ensure()
    return Simulation(ServicesDb(path), SystemClock())


@app.command("effects")
def effects(
    ctx: typer.Context,
    case: Annotated[str | None, typer.Option("--case", help="Only this case id.")] = None,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant.")] = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the effects the simulated services applied, oldest first."""
    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors():
        simulation = _simulation(cli, create=False)
        found = simulation.effects(tenant_id=tenant, case_id=case) if simulation else []
        rows = [effect.to_json() for effect in found]
        if as_json:
            print_json(rows)
        else:
            _render(rows)


@app.command("reset")
def reset(
    ctx: typer.Context,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Forget all simulated state: stock, reservations, refunds, shipments, effects, faults."""
    cli = cli_context(ctx)
    with command_errors():
        simulation = _simulation(cli, create=False)
        if simulation is None:
            typer.echo("nothing to reset")
            return
        if not yes and not _interactive():
            _usage_error("sim reset: no terminal to confirm on; pass --yes")
        if not yes:
            typer.confirm("Forget every simulated effect, count and attached fault?", abort=True)
        simulation.reset()
        typer.echo("simulated services reset")


def _interactive() -> bool:
    """A person can answer the confirmation (stdin is a terminal)."""
    return sys.stdin.isatty()


def _detail(effect: dict[str, Any]) -> str:
    if effect["amount_minor"] is not None and effect["currency"]:
        try:
            amount = Money(effect["amount_minor"], effect["currency"]).format()
        except InvalidActionError:
            amount = str(effect["amount_minor"])
        return f"{amount} {effect['currency']} of {effect['payment_id']}"
    if effect["sku"] is not None:
        return f"{effect['quantity']} x {effect['sku']} @ {effect['warehouse']}"
    if effect["quantity"] is not None:
        return f"{effect['quantity']} item(s)"
    return ""


def _render(rows: list[dict[str, Any]]) -> None:
    if not rows:
        stdout.print("no effects")
        return
    table = Table(title=f"{len(rows)} effect(s)")
    columns = ("#", "at", "tenant", "case", "service", "operation", "reference", "id", "detail")
    for column in columns:
        table.add_column(column, overflow="fold")  # never cut an id on a narrow terminal
    for row in rows:
        table.add_row(
            str(row["id"]),
            row["at"],
            row["tenant_id"],
            row["case_id"],
            row["service"],
            row["operation"],
            row["reference"],
            row["resource_id"],
            _detail(row),
        )
    stdout.print(table)
