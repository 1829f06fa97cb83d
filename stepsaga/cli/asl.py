"""``stepsaga asl`` and ``stepsaga graph``: the compiled state machine, as JSON or a picture.

Both take a workflow reference (``package.module:attr``; default the replacement order) as
an argument or ``--workflow``. ``graph_text`` is the hook for highlighting a run: pass the
``Visited`` states/transitions of an execution.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from stepsaga.cli.common import exit_codes, usage_error
from stepsaga.workflow.compiler import compile
from stepsaga.workflow.graph import GraphFormat, Visited, draw
from stepsaga.workflow.loader import DEFAULT_WORKFLOW, load_saga

WorkflowArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="[WORKFLOW]",
        help=f"Saga as package.module:attr (default {DEFAULT_WORKFLOW}).",
        show_default=False,
    ),
]
WorkflowOption = Annotated[
    str | None,
    typer.Option("--workflow", help="Same as WORKFLOW.", show_default=False),
]


def _workflow(argument: str | None, option: str | None) -> str:
    if argument and option and argument != option:
        usage_error(f"two different workflows given: {argument} and --workflow {option}")
    return argument or option or DEFAULT_WORKFLOW


def asl_json(workflow: str = DEFAULT_WORKFLOW) -> str:
    """The compiled ASL of ``workflow`` as the JSON text ``stepsaga asl`` prints."""
    return json.dumps(compile(load_saga(workflow)), indent=2) + "\n"


def graph_text(
    workflow: str = DEFAULT_WORKFLOW,
    fmt: GraphFormat = GraphFormat.mermaid,
    visited: Visited | None = None,
) -> str:
    """The picture ``stepsaga graph`` prints; ``visited`` highlights an execution's path."""
    saga = load_saga(workflow)
    return draw(compile(saga), fmt, name=saga.name, visited=visited)


def asl(
    workflow: WorkflowArgument = None,
    workflow_option: WorkflowOption = None,
) -> None:
    """Print the compiled Amazon States Language definition (JSON, with
    ${<Function>FunctionArn} placeholders)."""
    ref = _workflow(workflow, workflow_option)
    with exit_codes():
        text = asl_json(ref)
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
) -> None:
    """Draw the state machine: forward solid, compensation dotted, reconciliation thick."""
    ref = _workflow(workflow, workflow_option)
    with exit_codes():
        visited = _visited(ctx, execution, tenant) if execution is not None else None
        text = graph_text(ref, fmt, visited)
    typer.echo(text, nl=False)


def _visited(ctx: typer.Context, execution: str, tenant: str | None) -> Visited:
    from stepsaga.backends import entered_states
    from stepsaga.cli.backend import command_errors, open_backend
    from stepsaga.cli.common import cli_context

    with command_errors(), open_backend(cli_context(ctx)) as backend:
        events = backend.history(execution, tenant=tenant)["events"]
    return Visited.from_path(entered_states(events))
