"""``stepsaga asl`` and ``stepsaga graph``: the compiled state machine, as JSON or a picture.

Both take a saga: a name the project declares, or a ``package.module:attr`` reference, as
an argument or ``--workflow`` (default: the project's only saga; for ``graph --execution``
the saga that execution runs). ``graph_text`` is the hook for highlighting a run: pass the
``Visited`` states/transitions of an execution.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated

import typer

from stepsaga.cli._common import CliContext, cli_context, exit_codes, usage_error
from stepsaga.errors import InvalidInputError
from stepsaga.workflow._graph import GraphFormat, Visited, draw
from stepsaga.workflow._loader import load_saga
from stepsaga.workflow._saga import Saga

WorkflowArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="[SAGA]",
        help="A saga the project declares, or package.module:attr (default: the project's "
        "only saga).",
        show_default=False,
    ),
]
WorkflowOption = Annotated[
    str | None,
    typer.Option("--workflow", help="Same as SAGA.", show_default=False),
]


def _workflow(argument: str | None, option: str | None) -> str | None:
    if argument and option and argument != option:
        usage_error(f"two different workflows given: {argument} and --workflow {option}")
    return argument or option


def find_saga(cli: CliContext, ref: str | None) -> Saga:
    """``package.module[:attr]`` (it has a ``:`` or a ``.``) → that saga, imported from
    the project root or else the working directory; a name (or nothing) → the project's."""
    if ref is None or not (":" in ref or "." in ref):
        return cli.project().saga(ref)
    try:
        cli.project()
    except InvalidInputError:
        cwd = os.getcwd()
        if cwd not in sys.path:
            sys.path.insert(0, cwd)
    return load_saga(ref)


def asl_json(saga: Saga) -> str:
    """The compiled ASL of ``saga`` as the JSON text ``stepsaga asl`` prints."""
    from stepsaga.workflow._compiler import compile  # ~35 ms: only the verbs that compile

    return json.dumps(compile(saga), indent=2) + "\n"


def graph_text(
    saga: Saga, fmt: GraphFormat = GraphFormat.mermaid, visited: Visited | None = None
) -> str:
    """The picture ``stepsaga graph`` prints; ``visited`` highlights an execution's path."""
    from stepsaga.workflow._compiler import compile

    return draw(compile(saga), fmt, name=saga.name, visited=visited)


def asl(
    ctx: typer.Context,
    workflow: WorkflowArgument = None,
    workflow_option: WorkflowOption = None,
) -> None:
    """Print the compiled Amazon States Language definition (JSON, with
    ${<Function>FunctionArn} placeholders)."""
    ref = _workflow(workflow, workflow_option)
    with exit_codes():
        text = asl_json(find_saga(cli_context(ctx), ref))
    typer.echo(text, nl=False)


def graph(
    ctx: typer.Context,
    workflow: WorkflowArgument = None,
    workflow_option: WorkflowOption = None,
    fmt: Annotated[
        GraphFormat, typer.Option("--format", help="mermaid or dot (Graphviz).")
    ] = GraphFormat.mermaid,
    execution: Annotated[
        str | None,
        typer.Option("--execution", help="Highlight the path this execution (or case) took."),
    ] = None,
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="The tenant of --execution's case.")
    ] = None,
    saga: Annotated[
        str | None,
        typer.Option("--saga", help="With --execution on AWS: the stack's saga (default: found)."),
    ] = None,
) -> None:
    """Draw the state machine: forward solid, compensation dotted, reconciliation thick."""
    ref = _workflow(workflow, workflow_option)
    cli = cli_context(ctx)
    with exit_codes():
        visited = None
        if execution is not None:
            ran, visited = _visited(cli, execution, tenant, saga)
            ref = ref or ran
        text = graph_text(find_saga(cli, ref), fmt, visited)
    typer.echo(text, nl=False)


def _visited(
    cli: CliContext, execution: str, tenant: str | None, saga: str | None
) -> tuple[str, Visited]:
    """The saga the execution runs, and the states and transitions it took."""
    from stepsaga.backends._progress import entered_states
    from stepsaga.cli._backend import command_errors, open_backend

    with command_errors(), open_backend(cli, saga) as backend:
        saga = backend.status(execution, tenant=tenant).saga
        events = backend.history(execution, tenant=tenant)["events"]
    return saga, Visited.from_path(entered_states(events))
