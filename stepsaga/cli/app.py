"""Root of the ``stepsaga`` CLI: global options, then one sub-app or command per module,
then the project's own commands (``[tool.stepsaga.commands]``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError

from stepsaga.cli import asl, console, executions, init, ledger, recon, run, stop, versions
from stepsaga.cli.common import Backend, CliContext, exit_codes, refusal_lines
from stepsaga.cli.help import bare_flags
from stepsaga.deployment import ENV_STACK
from stepsaga.errors import InvalidInputError
from stepsaga.home import StateHome
from stepsaga.project import ENV_PROJECT, Project
from stepsaga.refs import load_ref

bare_flags()

app = typer.Typer(
    name="stepsaga",
    help="Run approved cases as sagas whose side effects happen at most once.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from stepsaga import __version__

        typer.echo(f"stepsaga {__version__}")
        raise typer.Exit(0)


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
    project: Annotated[
        Path | None,
        typer.Option(
            "--project",
            envvar=ENV_PROJECT,
            help="Folder whose pyproject.toml declares the sagas (its \\[tool.stepsaga] table); "
            "default: found from the working directory upward.",
            show_default=False,
        ),
    ] = None,
    stack: Annotated[
        str | None,
        typer.Option(
            envvar=ENV_STACK,
            help="--backend aws: the stack whose outputs name the state machine and table "
            "(e.g. stepsaga-dev-my-saga; else $STEPSAGA_STATE_MACHINE_ARN and "
            "$STEPSAGA_LEDGER_TABLE_NAME).",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    with exit_codes():  # a home that is a file: one line, exit 2
        state = StateHome(home) if home else StateHome.from_env()
    ctx.obj = CliContext(backend=backend, home=state, stack=stack, project_dir=project)


# Command groups register here, one line each (keep alphabetical).
app.command("asl")(asl.asl)
app.command("console")(console.console)
app.command("graph")(asl.graph)
app.command("history")(run.history)
app.command("init")(init.init)
app.add_typer(ledger.app, name="ledger")
app.command("list")(executions.list_executions)
app.add_typer(recon.app, name="recon")
app.command("redrive")(run.redrive)
app.command("start")(run.start)
app.command("status")(run.status)
app.command("stop")(stop.stop)
app.add_typer(versions.app, name="versions")


_mounted: set[str] = set()


def project_commands(argv: list[str]) -> None:
    """Mount the project's own commands (``[tool.stepsaga.commands]``) before parsing.
    No project, or a broken one, mounts nothing here: the verbs that need the project say
    why in one line."""
    folder = _option(argv, "--project") or os.environ.get(ENV_PROJECT)
    try:
        found = Project.load(Path(folder)) if folder else Project.find()
    except InvalidInputError:
        return
    found.importable()
    for name, ref in found.commands.items():
        if name in _mounted:
            continue
        _mounted.add(name)
        try:
            command = load_ref(ref, f"command {name}")
        except Exception as exc:  # a broken command must not break every other verb
            message = exc.message if isinstance(exc, InvalidInputError) else repr(exc)
            app.command(name, help=f"(cannot be loaded: {ref})")(_broken(name, message))
            continue
        if isinstance(command, typer.Typer):
            app.add_typer(command, name=name)
        elif callable(command):
            app.command(name)(command)
        else:
            app.command(name)(_broken(name, f"{ref} is neither a typer.Typer nor a function"))


def _broken(name: str, message: str) -> Callable[[], None]:
    """A project command that could not be loaded: says why, in one line, when invoked."""

    def command() -> None:
        typer.echo(f"error: command {name}: {' '.join(message.split())}", err=True)
        raise typer.Exit(2)

    return command


def _option(argv: list[str], flag: str) -> str | None:
    for index, arg in enumerate(argv):
        if arg == flag and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def _demo_elsewhere() -> None:
    """Run the project's demo (this project declares none)."""
    typer.echo(
        "error: demo is a project command: run it in a project that declares one "
        '([tool.stepsaga.commands] demo = "module:attr"), such as stepsaga\'s own repository '
        "(make demo)",
        err=True,
    )
    raise typer.Exit(2)


def main() -> None:
    """The ``stepsaga`` entry point. A bad flag or argument is one line and exit 2, like
    every other refusal (typer would draw a box and the usage around it)."""
    try:
        project_commands(sys.argv[1:])
        if "demo" not in _mounted:
            _mounted.add("demo")
            app.command("demo", hidden=True)(_demo_elsewhere)
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as exc:
        exc.show()
        code = exc.exit_code
    except ClickException as exc:
        typer.echo(f"error: {' '.join(exc.format_message().split())}", err=True)
        code = exc.exit_code
    except InvalidInputError as exc:
        for line in refusal_lines(exc):
            typer.echo(f"error: {line}", err=True)
        code = 2
    except typer.Abort:
        typer.echo("aborted", err=True)
        code = 1
    sys.exit(code if isinstance(code, int) else 0)
