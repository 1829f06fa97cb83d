"""``stepsaga demo`` (``make demo``): four example cases on the embedded backend, an operator
resolving the one that waits, and the simulated services' own count of what happened.
A project command of the reference app (``[tool.stepsaga.commands] demo``), written with
stepsaga's public API only.

Repeatable: it runs in its own home (``./.stepsaga-demo`` by default), emptied first, and
re-approves the example cases "now" so they sit inside the ledger's retention window
whatever the date. Waits are skipped (time scale 0) unless asked for.
"""

from __future__ import annotations

import os
import shlex
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from services import Effect, load_faults, open_simulation
from stepsaga import Clock, Project, StateHome, SystemClock
from stepsaga.backends import CaseOutcome, ExecutionView, LocalBackend, ReconOutcome, to_json
from stepsaga.cli import (
    JsonOption,
    OutputOption,
    checked_time_scale,
    cli_context,
    command_errors,
    live,
    log_level,
    outcome_text,
    print_json,
    render_items,
    render_resolution,
    stdout,
    wants_json,
)
from stepsaga.errors import InvalidInputError
from workflows.case import Case, load_case

#: Exit code when the services' own count contradicts "exactly once".
EXIT_PROBLEMS = 1

DEFAULT_HOME = Path(".stepsaga-demo")
_STORE_FILES = ("ledger.sqlite3", "executions.sqlite3", "services.sqlite3")
#: Written into every home the demo makes: only such a home is ever emptied.
MARKER = ".stepsaga-demo-home"


@dataclass(frozen=True)
class Scenario:
    title: str
    case_file: str
    faults_file: str | None
    expected: CaseOutcome


SCENARIOS = (
    Scenario("a clean case", "case-clean.json", None, CaseOutcome.COMPLETED),
    Scenario(
        "the shipment is rejected: the reservation is released, the refund escalated",
        "case-shipment-rejected.json",
        "faults-shipment-rejected.json",
        CaseOutcome.COMPENSATED,
    ),
    Scenario(
        "the refund's response is lost: called again with the same key, one refund",
        "case-lost-refund.json",
        "faults-lost-refund-response.json",
        CaseOutcome.COMPLETED,
    ),
    Scenario(
        "the shipment's outcome is uncertain and cannot be looked up: a person decides",
        "case-shipment-uncertain.json",
        "faults-shipment-unverifiable.json",
        CaseOutcome.AWAITING_RECONCILIATION,
    ),
)

#: The closing hint: commands to look around the demo's home.
EXPLORE = (
    "status CASE-1004",
    "history CASE-1002",
    "graph --execution CASE-1002",
    "sim effects",
)

#: Who resolves the waiting item in the demo, and why.
OPERATOR = "ops@acme.example"
NOTE = "carrier portal shows the replacement shipment under this case's reference"


def examples_dir(project: Project) -> Path:
    """``examples/`` of the project (the demo runs from a clone)."""
    return (project.root or Path.cwd()) / "examples"


def prepare_home(root: Path) -> StateHome:
    """Empty the demo home: only the stores stepsaga itself creates are removed, and only in
    a folder the demo made (a real home, given by mistake, is refused and left alone)."""
    if root.exists() and not root.is_dir():
        raise InvalidInputError(f"demo home {root}: not a folder", field="home")
    if root.exists() and any(root.iterdir()) and not (root / MARKER).exists():
        raise InvalidInputError(
            f"demo home {root} holds state the demo did not create; it empties only its own "
            "homes: pass --home-dir NEW_FOLDER",
            field="home",
        )
    root.mkdir(parents=True, exist_ok=True)
    (root / MARKER).write_text("made by stepsaga demo; emptied on every run\n")
    for name in _STORE_FILES:
        for suffix in ("", "-wal", "-shm", "-journal"):
            (root / f"{name}{suffix}").unlink(missing_ok=True)
    return StateHome(root)


def _chosen_home(ctx: typer.Context, home: Path) -> Path:
    """``--home``/``$STEPSAGA_HOME`` when the operator gave one, else the demo's own."""
    given = ctx.find_root().params.get("home") is not None or bool(os.environ.get("STEPSAGA_HOME"))
    return home if given else DEFAULT_HOME


def approved_now(case: Case, clock: Clock) -> Case:
    approval = case.approval.model_copy(update={"approved_at": clock.now()})
    return case.model_copy(update={"approval": approval})


def demo(
    ctx: typer.Context,
    home_dir: Annotated[
        Path | None,
        typer.Option(
            "--home-dir",
            help="Where the demo keeps its state, emptied first (default: --home or "
            "$STEPSAGA_HOME if given, else ./.stepsaga-demo). Only a home the demo made is "
            "ever emptied.",
            show_default=False,
        ),
    ] = None,
    time_scale: Annotated[
        float,
        typer.Option(
            "--time-scale", callback=checked_time_scale, help="1 waits for real retry delays."
        ),
    ] = 0.0,
    examples: Annotated[
        Path | None,
        typer.Option("--examples", help="Folder of the example case and faults files."),
    ] = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run the example cases on the embedded backend and show what became of them."""
    cli = cli_context(ctx)
    as_json = wants_json(output, as_json)
    with command_errors():
        project = cli.project()
        folder = examples or examples_dir(project)
        clock = SystemClock()
        plan = [
            (
                scenario,
                approved_now(load_case(folder / scenario.case_file), clock),
                load_faults(folder / scenario.faults_file) if scenario.faults_file else None,
            )
            for scenario in SCENARIOS
        ]
        home = prepare_home(home_dir or _chosen_home(ctx, cli.home.root))
        say = not as_json
        views: dict[str, ExecutionView] = {}
        with LocalBackend(home, project, clock=clock, log_level=log_level()) as backend:
            for number, (scenario, case, faults) in enumerate(plan, 1):
                title = f"{number}. {case.case_id}: {scenario.title}"
                with live(stdout, title, say) as on_event:
                    view = backend.start(
                        case, faults=faults, time_scale=time_scale, on_event=on_event
                    )
                views[case.case_id] = view
                if say:
                    stdout.print(f"   outcome {outcome_text(view.outcome)}\n", highlight=False)
            items = backend.recon_list()
            if say:
                stdout.print("[bold]5. recon list[/] (what waits for a person)")
                render_items(stdout, items)
            waiting = [item for item in items if item.waiting]
            resolutions = []
            for item in waiting:
                with live(stdout, f"6. recon resolve {item.id} --outcome applied", say) as on:
                    resolution = backend.recon_resolve(
                        item.id,
                        ReconOutcome.APPLIED,
                        OPERATOR,
                        NOTE,
                        time_scale=time_scale,
                        on_event=on,
                    )
                resolutions.append(resolution)
                if resolution.execution is not None:
                    views[resolution.execution.case_id] = resolution.execution
                if say:
                    render_resolution(stdout, resolution)
            final = {case_id: backend.status(view.execution_arn) for case_id, view in views.items()}
        effects = open_simulation(home, clock=clock).effects()
        counts = effect_counts(effects)
        problems = exactly_once_problems(final, counts)
        if as_json:
            print_json(
                {
                    "home": str(home.root),
                    "cases": [to_json(view) for view in final.values()],
                    "resolutions": [to_json(r) for r in resolutions],
                    "effects": [effect.to_json() for effect in effects],
                    "problems": problems,
                }
            )
        else:
            _render_summary(final, counts, problems, home)
        if problems:
            raise typer.Exit(EXIT_PROBLEMS)


def effect_counts(effects: list[Effect]) -> dict[str, Counter[str]]:
    """Per case: how many effects of each operation the simulated services applied."""
    counts: dict[str, Counter[str]] = {}
    for effect in effects:
        data: dict[str, Any] = effect.to_json()
        counts.setdefault(data["case_id"], Counter())[data["operation"]] += 1
    return counts


def exactly_once_problems(
    views: dict[str, ExecutionView], counts: dict[str, Counter[str]]
) -> list[str]:
    """What breaks "at most one refund and one shipment per case, exactly one each for a
    completed case, a released reservation iff compensated" — from the services' count."""
    problems = []
    for case_id, view in views.items():
        done = counts.get(case_id, Counter())
        for operation in ("refund", "create_shipment"):
            if done[operation] > 1:
                problems.append(f"{case_id}: {done[operation]} x {operation}")
            if view.outcome is CaseOutcome.COMPLETED and done[operation] != 1:
                problems.append(f"{case_id}: completed with {done[operation]} x {operation}")
        released = done["release"] > 0
        if released != (view.outcome is CaseOutcome.COMPENSATED):
            problems.append(f"{case_id}: release x {done['release']} but {view.outcome.value}")
    return problems


def _render_summary(
    views: dict[str, ExecutionView],
    counts: dict[str, Counter[str]],
    problems: list[str],
    home: StateHome,
) -> None:
    stdout.print("[bold]7. where every case ended, and what the services did[/] (sim effects)")
    table = Table("case", "outcome", "reserve", "refund", "shipment", "release")
    for case_id, view in views.items():
        done = counts.get(case_id, Counter())
        table.add_row(
            case_id,
            outcome_text(view.outcome),
            str(done["reserve"]),
            str(done["refund"]),
            str(done["create_shipment"]),
            str(done["release"]),
        )
    stdout.print(table)
    if problems:
        for problem in problems:
            stdout.print(f"[red]✗ {problem}[/]", highlight=False)
        return
    stdout.print(
        "[green]✓ at most one refund and one shipment per case; exactly one each for every "
        "completed case; a reservation released only for the compensated case[/]"
    )
    prefix = f"STEPSAGA_HOME={shlex.quote(str(home.root))} stepsaga"
    stdout.print("[dim]explore (each line pastes as printed):[/]")
    for command in EXPLORE:
        stdout.print(f"  {prefix} {command}", highlight=False, markup=False)
