"""``stepsaga start | status | history | redrive``: run approved cases and look at them.

Files are validated into values (case, faults, mock config) before the backend is even
opened, so bad input writes nothing. ``--json`` prints the backend's view (``DescribeExecution``
fields plus ``tenant_id``, ``case_id``, ``outcome``, ``steps``…) or ``{"events": [...]}``
(``--output json``; ``--json`` is its alias).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from stepsaga._model.case import OpenCase, load_case
from stepsaga._model.inputs import is_stdin
from stepsaga._project.dependencies import SupportsFaults
from stepsaga.backends import to_json
from stepsaga.cli._backend import command_errors, open_backend, print_json
from stepsaga.cli._common import cli_context, stdout, usage_error
from stepsaga.cli._output import JsonOption, OutputOption, wants_json
from stepsaga.cli._tables import render_execution, render_history
from stepsaga.engine._engine import MAX_TIME_SCALE, TIME_SCALE_ENV, check_time_scale
from stepsaga.errors import InvalidInputError

if TYPE_CHECKING:
    from stepsaga.engine import MockConfig

TenantOption = Annotated[
    str | None,
    typer.Option("--tenant", help="The tenant, when a case id exists for several."),
]


def checked_time_scale(value: float | None) -> float | None:
    """``--time-scale`` by the engine's one rule (``check_time_scale``), before any command
    opens a store."""
    if value is None:
        return None
    try:
        return check_time_scale(value, "--time-scale")
    except InvalidInputError as exc:
        raise typer.BadParameter(exc.message) from None


SagaOption = Annotated[
    str | None,
    typer.Option("--saga", help="The project's saga to run (optional if it declares one)."),
]
#: ``--saga`` of the verbs that find the saga from the execution: only needed on AWS when
#: the stack's state machine is not named after a declared saga.
StackSagaOption = Annotated[
    str | None,
    typer.Option(
        "--saga",
        help="The saga (on AWS: the stack's saga; found from the execution when left out).",
    ),
]
TimeScaleOption = Annotated[
    float | None,
    typer.Option(
        "--time-scale",
        callback=checked_time_scale,
        help=f"Multiply every wait, 0 to {MAX_TIME_SCALE:g} (0 skips them, still recording "
        f"the delays chosen). Default ${TIME_SCALE_ENV} or 1.",
        show_default=False,
    ),
]


def load_mock_config(path: Path) -> MockConfig:
    """A Step Functions Local ``MockConfigFile.json``; every failure is one line."""
    from stepsaga.engine import MockConfig  # only ``start --mock-config`` reads one

    return MockConfig.from_file(path)


def start(
    ctx: typer.Context,
    case_file: Annotated[
        Path, typer.Argument(metavar="CASE.json", help="The approved case (- reads stdin).")
    ],
    saga_name: SagaOption = None,
    faults: Annotated[
        Path | None,
        typer.Option(
            "--faults", help="Faults file for the simulated services (local only; - for stdin)."
        ),
    ] = None,
    mock_config: Annotated[
        Path | None,
        typer.Option(
            "--mock-config", help="Step Functions Local MockConfigFile.json (- for stdin)."
        ),
    ] = None,
    test_case: Annotated[
        str | None, typer.Option("--test-case", help="Test case of the mock config.")
    ] = None,
    time_scale: TimeScaleOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run an approved case as a saga (again: the same input returns the same execution)."""
    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors():
        if (mock_config is None) != (test_case is None):
            usage_error("--mock-config and --test-case go together")
        piped = [path for path in (case_file, faults, mock_config) if path and is_stdin(path)]
        if len(piped) > 1:
            usage_error("only one of CASE.json, --faults and --mock-config can be - (stdin)")
        project = cli.project()
        saga = project.saga(saga_name)
        case = load_case(case_file, saga.input_model or OpenCase)
        fault_rules = None
        if faults is not None:
            dependencies = project.dependencies()
            if not isinstance(dependencies, SupportsFaults):
                usage_error("--faults: this project's dependencies simulate no faults")
            fault_rules = dependencies.load_faults(faults)
        mocks = load_mock_config(mock_config) if mock_config is not None else None
        title = f"case {case.case_id} of {case.tenant_id} (revision {case.approval.revision})"
        from stepsaga.cli._progress import live  # rich's live display: only what runs

        with (
            open_backend(cli, saga.name) as backend,
            live(stdout, title, not as_json) as on_event,
        ):
            view = backend.start(
                case,
                saga=saga.name,
                faults=fault_rules,
                mock_config=mocks,
                test_case=test_case,
                time_scale=time_scale,
                on_event=on_event,
            )
        if as_json:
            print_json(to_json(view))
        else:
            render_execution(stdout, view)


def status(
    ctx: typer.Context,
    ref: Annotated[
        str, typer.Argument(metavar="CASE_ID|EXECUTION", help="A case id, execution name or ARN.")
    ],
    tenant: TenantOption = None,
    saga: StackSagaOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Where a case stands: execution status, outcome, and each step in the ledger."""
    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors(), open_backend(cli, saga) as backend:
        view = backend.status(ref, tenant=tenant)
        if as_json:
            print_json(to_json(view))
        else:
            render_execution(stdout, view)


def history(
    ctx: typer.Context,
    ref: Annotated[
        str, typer.Argument(metavar="EXECUTION", help="An execution name or ARN (or a case id).")
    ],
    tenant: TenantOption = None,
    saga: StackSagaOption = None,
    reverse: Annotated[
        bool,
        typer.Option("--reverse", help="Newest first (GetExecutionHistory's reverseOrder)."),
    ] = False,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """The execution's events, as GetExecutionHistory returns them."""
    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors(), open_backend(cli, saga) as backend:
        events = backend.history(ref, tenant=tenant)
        if reverse:
            events = {**events, "events": list(reversed(events["events"]))}
        if as_json:
            print_json(events)
        else:
            render_history(stdout, events)


def redrive(
    ctx: typer.Context,
    ref: Annotated[
        str | None,
        typer.Argument(metavar="[EXECUTION]", help="An execution name or ARN.", show_default=False),
    ] = None,
    case_id: Annotated[
        str | None, typer.Option("--case", help="Redrive this case's execution instead.")
    ] = None,
    tenant: TenantOption = None,
    saga: StackSagaOption = None,
    time_scale: TimeScaleOption = None,
    all_failed: Annotated[
        bool,
        typer.Option(
            "--all-failed",
            help="Redrive every technical failure (never a Saga.* outcome) inside the 14-day "
            "redrive window, at most --max.",
        ),
    ] = False,
    error: Annotated[
        str | None,
        typer.Option("--error", metavar="ERROR", help="With --all-failed: only this error."),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="WHEN",
            help="With --all-failed: started at or after (ISO-8601, a date, or 90s/15m/6h/7d).",
        ),
    ] = None,
    max_redrives: Annotated[
        int | None,
        typer.Option("--max", metavar="N", help="With --all-failed: at most N redrives (50)."),
    ] = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Continue a failed, aborted or interrupted execution from the state it stopped in
    (or, with --all-failed, every technical failure)."""
    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors():
        from stepsaga.cli._progress import live
        from stepsaga.cli._redrive_all import check_flags, run_all_failed

        if all_failed:
            if ref is not None or case_id is not None:
                usage_error("--all-failed redrives many executions: give no EXECUTION or --case")
            check_flags(
                cli.backend,
                error=error,
                since=since,
                max_redrives=max_redrives,
                time_scale=time_scale,
            )
            with open_backend(cli, saga) as backend:
                run_all_failed(
                    backend,
                    stdout,
                    error=error,
                    since=since,
                    tenant=tenant,
                    max_redrives=max_redrives,
                    time_scale=time_scale,
                    as_json=as_json,
                )
            return
        for flag, value in (("--error", error), ("--since", since), ("--max", max_redrives)):
            if value is not None:
                usage_error(f"{flag} goes with --all-failed")
        if (ref is None) == (case_id is None):
            usage_error("give either EXECUTION or --case CASE_ID (or --all-failed)")
        target = ref if ref is not None else case_id
        assert target is not None
        with (
            open_backend(cli, saga) as backend,
            live(stdout, f"redrive {target}", not as_json) as on,
        ):
            view = backend.redrive(target, tenant=tenant, time_scale=time_scale, on_event=on)
        if as_json:
            print_json(to_json(view))
        else:
            render_execution(stdout, view)
