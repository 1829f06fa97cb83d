"""Each state an execution entered, as the Step Functions console's "step details" shows it:
the step's input and output (or error), when it started and ended, how long it took and how
many attempts it made — read from ``GetExecutionHistory`` events only, so both backends show
the same.

A task's *input* is what the step's handler was given: the ``params`` of its Lambda payload
(the case fields the step uses, e.g. the refund's amount and payment id); its *output* is the
handler's ``result``. A state without a task (Choice, Pass, Fail) shows the state's own
input and output documents.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from stepsaga.console.timeline import short_cause


class RunStatus(StrEnum):
    """How one entry into a state ended (the graph and the step list share these)."""

    SUCCEEDED = "succeeded"
    #: Failed and caught: the execution went on elsewhere (a rejection, an escalation).
    CAUGHT = "caught"
    #: Failed and not caught: the execution failed here.
    FAILED = "failed"
    #: Waiting for a person (``.waitForTaskToken``).
    WAITING = "waiting"
    #: Entered and not left yet.
    CURRENT = "current"


@dataclass(frozen=True)
class StepRun:
    """One entry into ``state``."""

    state: str
    type: str
    entered_at: datetime
    status: RunStatus
    exited_at: datetime | None = None
    attempts: int = 0
    input: Any = None
    output: Any = None
    error: str | None = None
    cause: str | None = None
    #: ``kind`` of the task payload: ``step``, ``compensation``, ``escalate``, …
    task_kind: str | None = None
    retries: list[str] = field(default_factory=list)

    @property
    def duration_ms(self) -> float | None:
        if self.exited_at is None:
            return None
        return (self.exited_at - self.entered_at).total_seconds() * 1000


def _json(text: object) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _payload(details: Mapping[str, Any], key: str) -> Any:
    """A Lambda integration's ``Payload`` (the handler's event or reply), else the value."""
    value = _json(details.get(key))
    if isinstance(value, dict) and "Payload" in value:
        return value["Payload"]
    return value


def step_runs(events: Sequence[Mapping[str, Any]]) -> list[StepRun]:
    """Every state entry of ``events`` (oldest first), with what its task was given and
    returned."""
    runs: list[StepRun] = []
    open_run: dict[str, Any] | None = None

    def close(status: RunStatus, **changes: Any) -> None:
        nonlocal open_run
        if open_run is not None:
            open_run.pop("waiting", None)
            runs.append(StepRun(**{**open_run, **changes, "status": status}))
        open_run = None

    for event in events:
        kind = str(event.get("type", ""))
        when = event["timestamp"]
        if kind.endswith("StateEntered"):
            close(RunStatus.CURRENT)
            details = event.get("stateEnteredEventDetails", {})
            open_run = {
                "state": str(details.get("name")),
                "type": kind.removesuffix("StateEntered"),
                "entered_at": when,
                "input": _json(details.get("input")),
                "attempts": 0,
                "retries": [],
            }
        elif open_run is None:
            continue
        elif kind == "TaskScheduled":
            payload = _payload(event.get("taskScheduledEventDetails", {}), "parameters")
            open_run["attempts"] += 1
            if isinstance(payload, dict):
                open_run["task_kind"] = payload.get("kind")
                open_run["input"] = payload.get("params", payload)
            if open_run.get("error"):  # a retry of an earlier failure
                open_run["retries"].append(f"{open_run['error']}: {open_run.get('cause', '')}")
                open_run["error"] = open_run["cause"] = None
        elif kind == "TaskSucceeded":
            reply = _payload(event.get("taskSucceededEventDetails", {}), "output")
            open_run["output"] = reply.get("result", reply) if isinstance(reply, dict) else reply
        elif kind in ("TaskFailed", "TaskTimedOut"):
            details = event.get(kind[0].lower() + kind[1:] + "EventDetails", {})
            open_run["error"] = details.get("error")
            open_run["cause"] = short_cause(details.get("cause"), limit=600)
        elif kind == "TaskSubmitted":
            open_run["waiting"] = True
        elif kind.endswith("StateExited"):
            details = event.get("stateExitedEventDetails", {})
            failed = open_run.get("error") is not None
            if open_run.get("output") is None and not failed:
                open_run["output"] = _json(details.get("output"))
            close(RunStatus.CAUGHT if failed else RunStatus.SUCCEEDED, exited_at=when)
        elif kind.startswith("Execution") and kind != "ExecutionRedriven":
            failed = kind != "ExecutionSucceeded"
            status = RunStatus.FAILED if failed else RunStatus.SUCCEEDED
            if open_run.get("type") == "Fail":
                status = RunStatus.SUCCEEDED
            close(status, exited_at=when)
    if open_run is not None:
        waiting = bool(open_run.get("waiting"))
        close(RunStatus.WAITING if waiting else RunStatus.CURRENT)
    return runs


def state_statuses(runs: Sequence[StepRun]) -> dict[str, RunStatus]:
    """Each entered state's status in its latest run (what the graph colours)."""
    return {run.state: run.status for run in runs}


def case_input(events: Sequence[Mapping[str, Any]]) -> Any:
    """The execution's input: the approved case as it was started."""
    for event in events:
        if event.get("type") == "ExecutionStarted":
            return _json(event.get("executionStartedEventDetails", {}).get("input"))
    return None
