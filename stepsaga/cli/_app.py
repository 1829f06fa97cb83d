"""Root of the ``stepsaga`` CLI: global options, then one sub-app or command per module,
then the project's own commands (``[tool.stepsaga.commands]``).

A command line naming one verb imports only that verb's module (and mounts only a project
command of that name): start-up is most of what ``stepsaga status`` costs, and every other
command module pulls in its own libraries. Help, completion and anything unparsed get the
whole app (``app``), which tests invoke directly.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError

from stepsaga._model.refs import load_ref
from stepsaga._project.deployment import ENV_STACK
from stepsaga._project.home import StateHome
from stepsaga._project.project import ENV_PROJECT, Project
from stepsaga.cli._common import BackendKind, CliContext, exit_codes, refusal_lines
from stepsaga.cli._help import bare_flags
from stepsaga.errors import InvalidInputError

bare_flags()

#: Built-in verbs (keep alphabetical): ``module:attr``, a command function or a sub-app.
BUILTINS = {
    "asl": "stepsaga.cli._asl:asl",
    "cancel": "stepsaga.cli._stop:cancel",
    "console": "stepsaga.cli._console:console",
    "graph": "stepsaga.cli._asl:graph",
    "history": "stepsaga.cli._run:history",
    "init": "stepsaga.cli._init:init",
    "ledger": "stepsaga.cli._ledger:app",
    "list": "stepsaga.cli._executions:list_executions",
    "recon": "stepsaga.cli._recon:app",
    "redrive": "stepsaga.cli._run:redrive",
    "start": "stepsaga.cli._run:start",
    "status": "stepsaga.cli._run:status",
    "stop": "stepsaga.cli._stop:stop",
    "versions": "stepsaga.cli._versions:app",
}

#: The CLI loads no pydantic plugins unless this is set (to anything else, even empty):
#: finding them scans every installed package's entry points on each command.
PYDANTIC_PLUGINS_ENV = "PYDANTIC_DISABLE_PLUGINS"

#: Root options that take a value (how :func:`_verb` skips them).
_VALUE_OPTIONS = ("--backend", "--home", "--project", "--stack")


def _version(value: bool) -> None:
    if value:
        from stepsaga import __version__

        typer.echo(f"stepsaga {__version__}")
        raise typer.Exit(0)


def root(
    ctx: typer.Context,
    backend: Annotated[
        BackendKind, typer.Option(help="Where cases run: the embedded engine or AWS.")
    ] = BackendKind.local,
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
    _collect_again()
    with exit_codes():  # a home that is a file: one line, exit 2
        state = StateHome(home) if home else StateHome.from_env()
    ctx.obj = CliContext(backend=backend, home=state, stack=stack, project_dir=project)


def build(verbs: list[str]) -> typer.Typer:
    """The root app with the built-in ``verbs`` mounted (in :data:`BUILTINS` order)."""
    built = typer.Typer(
        name="stepsaga",
        help="Run approved cases as sagas whose side effects happen at most once.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=True,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    built.callback()(root)
    for verb in BUILTINS:
        if verb in verbs:
            module, _, attr = BUILTINS[verb].partition(":")
            command = getattr(import_module(module), attr)
            if isinstance(command, typer.Typer):
                built.add_typer(command, name=verb)
            else:
                built.command(verb)(command)
    return built


_FULL: list[typer.Typer] = []


def full_app() -> typer.Typer:
    """The app with every built-in verb (built once)."""
    if not _FULL:
        _FULL.append(build(list(BUILTINS)))
    return _FULL[0]


def __getattr__(name: str) -> Any:
    if name == "app":  # ``from stepsaga.cli._app import app``: the whole app
        return full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _mounted(target: typer.Typer) -> set[str | None]:
    return {c.name for c in target.registered_commands} | {g.name for g in target.registered_groups}


def project_commands(
    argv: list[str], target: typer.Typer | None = None, *, only: str | None = None
) -> None:
    """Mount the project's own commands (``[tool.stepsaga.commands]``) before parsing, on
    ``target`` (default: the whole app); ``only``: just the one of that name. No project,
    or a broken one, mounts nothing here: the verbs that need the project say why in one
    line."""
    target = target or full_app()
    folder = _option(argv, "--project") or os.environ.get(ENV_PROJECT)
    try:
        found = Project.load(Path(folder)) if folder else Project.find()
    except InvalidInputError:
        return
    found.importable()
    mounted = _mounted(target)
    for name, ref in found.commands.items():
        if name in mounted or only not in (None, name):
            continue
        try:
            command = load_ref(ref, f"command {name}")
        except Exception as exc:  # a broken command must not break every other verb
            message = exc.message if isinstance(exc, InvalidInputError) else repr(exc)
            target.command(name, help=f"(cannot be loaded: {ref})")(_broken(name, message))
            continue
        if isinstance(command, typer.Typer):
            target.add_typer(command, name=name)
        elif callable(command):
            target.command(name)(command)
        else:
            target.command(name)(_broken(name, f"{ref} is neither a typer.Typer nor a function"))


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


def _verb(argv: list[str]) -> str | None:
    """The verb a command line names, past the root options; ``None`` when an option
    comes first that this cannot parse (``-h``, ``--version``, a typo)."""
    args = iter(argv)
    for arg in args:
        if arg in _VALUE_OPTIONS:
            next(args, None)
        elif arg.startswith(tuple(f"{option}=" for option in _VALUE_OPTIONS)):
            continue
        elif arg.startswith("-"):
            return None
        else:
            return arg
    return None


def _app_for(argv: list[str]) -> typer.Typer:
    """The app a command line needs: only its verb (a built-in one's module, or the
    project's command of that name) when it names one and no shell completion asks for
    every command; else the whole app, the project's commands mounted."""
    verb = _verb(argv)
    if verb is not None and not any(key.endswith("_COMPLETE") for key in os.environ):
        target = build([verb])
        project_commands(argv, target, only=verb)
        if verb == "demo" and "demo" not in _mounted(target):
            target.command("demo", hidden=True)(_demo_elsewhere)
        if verb in _mounted(target):
            return target
    target = full_app()
    project_commands(argv, target)
    if "demo" not in _mounted(target):
        target.command("demo", hidden=True)(_demo_elsewhere)
    return target


def _demo_elsewhere() -> None:
    """Run the project's demo (this project declares none)."""
    typer.echo(
        "error: demo is a project command: run it in a project that declares one "
        '([tool.stepsaga.commands] demo = "module:attr"), such as stepsaga\'s own repository '
        "(make demo)",
        err=True,
    )
    raise typer.Exit(2)


#: Whether :func:`main` paused the cyclic garbage collector for start-up.
_PAUSED: list[bool] = []


def _collect_again() -> None:
    """Resume the garbage collector :func:`main` paused, once the verb's modules are
    loaded and before the verb runs (a long ``start`` or ``console`` collects as usual)."""
    if _PAUSED:
        _PAUSED.clear()
        gc.enable()


def main() -> None:
    """The ``stepsaga`` entry point. A bad flag or argument is one line and exit 2, like
    every other refusal (typer would draw a box and the usage around it).

    Loading the app and the verb's modules allocates a few hundred thousand objects that
    all stay alive, so collecting cycles among them only costs time (~10% of ``stepsaga
    status``'s CPU, #26): the collector is paused until the root callback runs."""
    os.environ.setdefault(PYDANTIC_PLUGINS_ENV, "__all__")
    if gc.isenabled():
        gc.disable()
        _PAUSED.append(True)
    try:
        code = _app_for(sys.argv[1:])(standalone_mode=False)
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
    finally:
        _collect_again()  # help, a usage error or --version never reached the callback
    sys.exit(code if isinstance(code, int) else 0)
