"""One operator command in a child process of its own, so that a kill is a real ``SIGKILL``.

The child runs the embedded backend exactly as ``stepsaga`` does (``LocalBackend``, real
handlers, ledger, simulated services, engine) with three things injected through the
backend's own parameters: the harness's clock, a ledger store that kills at armed points,
and a progress listener and crash action that kill. It writes a one-line result file when
it finishes; a killed child writes none (its kill note says why).

Children are forked from the harness (``multiprocessing``'s ``fork`` context): the imports
are paid once, and the kernel still kills each child for real.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from typing import Any

from reliability.clock import ShiftedClock
from reliability.kills import KillingStore, KillSwitch
from reliability.plan import KillPoint, KillSite
from reliability.workspace import Workspace
from services import load_faults
from stepsaga import Saga, load_case
from stepsaga._handlers.deps import HandlerDeps
from stepsaga._model.case import OpenCase
from stepsaga._reconciliation import resolve
from stepsaga.backends import LocalBackend, ReconOutcome
from stepsaga.backends._local import default_handlers
from stepsaga.engine import Handler
from stepsaga.ledger import Ledger, open_ledger
from stepsaga.ledger._connect import open_store
from workflows.project import reference_project

OPERATOR = "chaos-operator@example.com"
#: Who seconds a ``not-applied`` on a dual-control step (the reference app's refund).
SECOND_OPERATOR = "chaos-second@example.com"


class Command(StrEnum):
    START = "start"
    REDRIVE = "redrive"
    RESOLVE = "resolve"
    SWEEP = "sweep"


@dataclass(frozen=True)
class Job:
    """One command for one case (``sweep``: for the whole ledger)."""

    seq: int
    command: Command
    clock_offset: float
    case_index: int = -1
    execution: str = ""
    pending: tuple[KillPoint, ...] = ()
    item_id: str = ""
    decision: ReconOutcome = ReconOutcome.APPLIED
    #: The saga a ``start`` runs (the project's default when empty).
    saga: str = ""
    revision: int = 1
    """``start``: which approved revision of the case (its own case file)."""


@dataclass(frozen=True)
class JobResult:
    job: Job
    exitcode: int
    """0 done, 1 an error (``error`` says which), -9 killed."""
    data: Mapping[str, Any]

    @property
    def killed(self) -> bool:
        return self.exitcode == -9

    @property
    def error(self) -> str | None:
        value = self.data.get("error")
        return str(value) if value is not None else None


def run_jobs(space: Workspace, jobs: Sequence[Job], parallel: int) -> list[JobResult]:
    """Run every job in its own forked child, at most ``parallel`` at a time."""
    context = multiprocessing.get_context("fork")
    queue = list(jobs)
    running: dict[int, tuple[Job, BaseProcess]] = {}
    results: list[JobResult] = []
    while queue or running:
        while queue and len(running) < parallel:
            job = queue.pop(0)
            sys.stdout.flush()
            sys.stderr.flush()
            process: BaseProcess = context.Process(target=_child, args=(space, job))
            process.start()
            running[process.sentinel] = (job, process)
        for sentinel in wait(list(running)):
            assert isinstance(sentinel, int)
            job, process = running.pop(sentinel)
            process.join()
            code = process.exitcode if process.exitcode is not None else 1
            results.append(JobResult(job, code, _read_result(space, job)))
    return sorted(results, key=lambda result: result.job.seq)


def _read_result(space: Workspace, job: Job) -> dict[str, Any]:
    path = space.result_file(job.seq)
    if not path.exists():
        return {}
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _child(space: Workspace, job: Job) -> None:
    """The child's body: stderr to the case's log, run the job, write the result."""
    name = f"{job.case_index:05d}" if job.case_index >= 0 else job.command.value
    log = os.open(space.log_file(name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(log, 2)
    started = time.monotonic()
    try:
        data = run_job(space, job)
        data["ok"] = True
        code = 0
    except Exception as exc:
        data = {"ok": False, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"}
        code = 1
    data["seconds"] = round(time.monotonic() - started, 3)
    space.result_file(job.seq).write_text(json.dumps(data, sort_keys=True))
    sys.exit(code)


def run_job(space: Workspace, job: Job) -> dict[str, Any]:
    """Run ``job`` in this process (a child: it may be killed on the way)."""
    home = space.home
    clock = ShiftedClock(job.clock_offset)
    switch = KillSwitch(job.case_index, job.pending, space.kill_notes)
    if job.command is Command.SWEEP:
        with open_ledger(home.ledger_url, clock=clock) as ledger:
            return {"swept": len(ledger.sweep())}

    def handlers(deps: HandlerDeps, saga: Saga) -> Mapping[str, Handler]:
        store = KillingStore(open_store(home.ledger_url), switch)
        ledger = Ledger(store, clock=deps.clock, policy=deps.ledger.policy)
        return default_handlers(replace(deps, ledger=ledger), saga)

    backend = LocalBackend(
        home,
        reference_project(crash=switch.crash),
        clock=clock,
        handlers=handlers,
        sleeper=lambda seconds: None,
        log_level="CRITICAL",
    )
    with backend:
        if job.command is Command.START:
            saga = backend.project.saga(job.saga or None)
            case_file = space.case_file(job.case_index, job.revision)
            case = load_case(case_file, saga.input_model or OpenCase)
            faults_path = space.faults_file(job.case_index)
            faults = load_faults(faults_path) if faults_path.exists() else None
            view = backend.start(
                case,
                saga=saga.name,
                faults=faults,
                time_scale=0,
                on_event=switch.on_progress,
            )
            return {"outcome": view.outcome.value}
        if job.command is Command.REDRIVE:
            view = backend.redrive(job.execution, time_scale=0, on_event=switch.on_progress)
            return {"outcome": view.outcome.value}
        if switch.armed(KillSite.AFTER_RESOLVE):
            _resolve_then_die(home.ledger_url, clock, switch, job)
        shown = backend.recon_show(job.item_id)  # a killed run may have approved first
        first = shown.first_approval["by"] if shown.first_approval else None
        resolution = None
        for by in (OPERATOR, SECOND_OPERATOR):
            if by == first:
                continue
            resolution = backend.recon_resolve(
                job.item_id,
                job.decision,
                by,
                "decided from the services' effects table",
                time_scale=0,
                on_event=switch.on_progress,
            )
            if not resolution.item.awaiting_second_approver:
                break
        assert resolution is not None
        execution = resolution.execution
        return {"outcome": execution.outcome.value if execution else None}


def _resolve_then_die(url: str, clock: ShiftedClock, switch: KillSwitch, job: Job) -> None:
    """``recon resolve`` dying between its ledger commit and resuming the waiting case."""
    ledger = Ledger(KillingStore(open_store(url), switch), clock=clock)
    item = ledger.get_item(job.item_id)
    first = item.first_approval.by if item is not None and item.first_approval else None
    for by in (OPERATOR, SECOND_OPERATOR):  # two people under dual control
        if by == first:
            continue
        decided = resolve(
            ledger,
            job.item_id,
            job.decision,
            by,
            "decided from the services' effects table",
            send_task_success=None,
        )
        if not decided.awaiting_second_approver:
            break
    switch.fire(KillSite.AFTER_RESOLVE.value)  # already resolved the same way: die anyway
