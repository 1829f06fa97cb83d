"""Root of the ``stepsaga`` CLI: global options, then one sub-app or command per module."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError

from stepsaga.cli import asl, demo, ledger, recon, run, sim
from stepsaga.cli.common import Backend, CliContext, exit_codes
from stepsaga.deployment import ENV_STACK
from stepsaga.home import StateHome

app = typer.Typer(
    name="stepsaga",
    help="Run approved cases as sagas whose side effects happen at most once.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def root(
    ctx: typer.Context,
    backend: Annotated[
        Backend, typer.Option(help="Where cases run: the embedded engine or AWS.")
    ] = Backend.local,
    home: Annotated[
        Path | None,
        typer.Option(
            envvar="STEPSAGA_HOME",
            help="State folder of the local backend (default ./.stepsaga).",
            show_default=False,
        ),
    ] = None,
    stack: Annotated[
        str | None,
        typer.Option(
            envvar=ENV_STACK,
            help="--backend aws: the stack whose outputs name the state machine and table "
            "(e.g. stepsaga-dev; else $STEPSAGA_STATE_MACHINE_ARN and "
            "$STEPSAGA_LEDGER_TABLE_NAME).",
            show_default=False,
        ),
    ] = None,
) -> None:
    with exit_codes():  # a home that is a file: one line, exit 2
        state = StateHome(home) if home else StateHome.from_env()
    ctx.obj = CliContext(backend=backend, home=state, stack=stack)


# Command groups register here, one line each (keep alphabetical).
app.command("asl")(asl.asl)
app.command("demo")(demo.demo)
app.command("graph")(asl.graph)
app.command("history")(run.history)
app.add_typer(ledger.app, name="ledger")
app.add_typer(recon.app, name="recon")
app.command("redrive")(run.redrive)
app.add_typer(sim.app, name="sim")
app.command("start")(run.start)
app.command("status")(run.status)


def main() -> None:
    """The ``stepsaga`` entry point. A bad flag or argument is one line and exit 2, like
    every other refusal (typer would draw a box and the usage around it)."""
    try:
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as exc:
        exc.show()
        code = exc.exit_code
    except ClickException as exc:
        typer.echo(f"error: {' '.join(exc.format_message().split())}", err=True)
        code = exc.exit_code
    except typer.Abort:
        typer.echo("aborted", err=True)
        code = 1
    sys.exit(code if isinstance(code, int) else 0)
