"""``stepsaga stop`` and ``stepsaga cancel``: close a case an operator gives up on.

``stop`` **freezes**: the execution stops (AWS ``StopExecution``; the embedded engine's
own) with ``Stepsaga.Stopped`` and a cause naming who and why; the ledger is settled so
nothing in flight is silently dropped (``stepsaga.backends._lifecycle``); every effect
already applied stays applied. ``cancel`` stops the same way and then **undoes** what was
applied, last step first, with the saga's own compensations (``stepsaga.backends._cancel``).
A stopped or cancelled execution is never redriven; a new revision of the case may start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

import typer
from rich.markup import escape

from stepsaga._model.person import MAX_NOTE, check_note, check_person
from stepsaga.backends import ExecutionView, SagaBackend, to_json
from stepsaga.backends._views import CancelView
from stepsaga.cli._backend import command_errors, open_backend, print_json
from stepsaga.cli._common import EXIT_UNEXPECTED, cli_context, stdout, usage_error
from stepsaga.cli._output import JsonOption, OutputFormat, OutputOption, wants_json
from stepsaga.cli._run import StackSagaOption as SagaOption
from stepsaga.cli._run import TenantOption
from stepsaga.cli._tables import render_execution

NoteOption = Annotated[
    str,
    typer.Option("--note", help=f"Why (kept as the cause): one line, 1 to {MAX_NOTE} characters."),
]
ExecutionArgument = Annotated[
    str | None,
    typer.Argument(metavar="[EXECUTION]", help="An execution name or ARN.", show_default=False),
]
ByOption = Annotated[
    str, typer.Option("--by", help="Who does it, 3 to 254 characters (kept as the cause).")
]
CaseOption = Annotated[
    str | None, typer.Option("--case", help="This case's newest execution instead.")
]
_View = TypeVar("_View", ExecutionView, CancelView)


def stop(
    ctx: typer.Context,
    by: ByOption,
    note: NoteOption,
    ref: ExecutionArgument = None,
    case_id: CaseOption = None,
    tenant: TenantOption = None,
    saga: SagaOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Freeze a running execution: it stops and its case closes (outcome stopped; never
    redriven). Effects already applied stay applied: to undo them, use cancel."""
    _close(
        ctx,
        lambda backend: backend.stop,
        lambda view: render_execution(stdout, view),
        by=by,
        note=note,
        ref=ref,
        case_id=case_id,
        tenant=tenant,
        saga=saga,
        output=output,
        as_json=as_json,
    )


def cancel(
    ctx: typer.Context,
    by: ByOption,
    note: NoteOption,
    ref: ExecutionArgument = None,
    case_id: CaseOption = None,
    tenant: TenantOption = None,
    saga: SagaOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stop a running execution and undo what it applied, last step first, with the
    saga's own compensations. Uncertain steps and irreversible ones (Escalate) become open
    reconciliation items. Exit 0 when every undo ran, 1 when one failed (run it again:
    each undo replays by key), 2 when the execution had already ended."""
    view = _close(
        ctx,
        lambda backend: backend.cancel,
        _render_cancel,
        by=by,
        note=note,
        ref=ref,
        case_id=case_id,
        tenant=tenant,
        saga=saga,
        output=output,
        as_json=as_json,
    )
    if not view.complete:
        raise typer.Exit(EXIT_UNEXPECTED)


def _close(
    ctx: typer.Context,
    verb: Callable[[SagaBackend], Callable[..., _View]],
    render: Callable[[_View], None],
    *,
    by: str,
    note: str,
    ref: str | None,
    case_id: str | None,
    tenant: str | None,
    saga: str | None,
    output: OutputFormat | None,
    as_json: bool,
) -> _View:
    """What stop and cancel share: one target, the person and note checked, the backend's
    ``verb``, and its view as JSON or through ``render``."""
    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors():
        target = _target(ref, case_id)
        who, why = check_person(by, "--by"), check_note(note, "--note")
        with open_backend(cli, saga) as backend:
            view = verb(backend)(target, tenant=tenant, by=who, note=why)
        if as_json:
            print_json(to_json(view))
        else:
            render(view)
    return view


def _render_cancel(view: CancelView) -> None:
    render_execution(stdout, view.execution)
    for undone in view.undone:
        stdout.print(
            f"undo {escape(undone.step)}: {undone.kind} {escape(undone.detail)}",
            highlight=False,
        )
    if view.superseded_by is not None:
        stdout.print(
            f"nothing undone: execution {escape(view.superseded_by)} (a later revision) "
            "owns the case's effects; cancel that execution to undo them",
            highlight=False,
        )


def _target(ref: str | None, case_id: str | None) -> str:
    if (ref is None) == (case_id is None):
        usage_error("give either EXECUTION or --case CASE_ID")
    target = ref if ref is not None else case_id
    assert target is not None
    return target
