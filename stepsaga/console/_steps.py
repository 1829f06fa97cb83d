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

from stepsaga.console._timeline import branches, event_id, short_cause


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
    #: The action key the handler's reply names (per-item steps share a state name).
    action_key: str | None = None
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
    """Every state entry of ``events`` (in the order entered), with what its task was given
    and returned; each event counts for the state its branch entered (``branches``)."""
    run_of = branches(events)
    runs: dict[int, dict[str, Any]] = {}
    statuses: dict[int, RunStatus] = {}
    for index, event in enumerate(events):
        kind = str(event.get("type", ""))
        when = event["timestamp"]
        key = run_of.get(event_id(event, index))
        run = runs.get(key) if key is not None else None
        if kind.endswith("StateEntered") and key is not None:
            details = event.get("stateEnteredEventDetails", {})
            runs[key] = {
                "state": str(details.get("name")),
                "type": kind.removesuffix("StateEntered"),
                "entered_at": when,
                "input": _json(details.get("input")),
                "attempts": 0,
                "retries": [],
            }
        elif kind.endswith("StateExited") and run is not None and key is not None:
            failed = run.get("error") is not None
            if run.get("output") is None and not failed:
                run["output"] = _json(event.get("stateExitedEventDetails", {}).get("output"))
            run["exited_at"] = when
            statuses[key] = RunStatus.CAUGHT if failed else RunStatus.SUCCEEDED
        elif kind.startswith("Execution") and kind != "ExecutionRedriven":
            for open_key, open_run in runs.items():
                if open_key not in statuses:
                    ended = kind == "ExecutionSucceeded" or open_run["type"] == "Fail"
                    statuses[open_key] = RunStatus.SUCCEEDED if ended else RunStatus.FAILED
                    open_run["exited_at"] = when
        elif run is not None:
            _task_event(run, kind, event)
    return [
        StepRun(
            **{k: v for k, v in run.items() if k != "waiting"},
            status=statuses.get(key)
            or (RunStatus.WAITING if run.get("waiting") else RunStatus.CURRENT),
        )
        for key, run in runs.items()
    ]


def _task_event(run: dict[str, Any], kind: str, event: Mapping[str, Any]) -> None:
    """What a task event tells about its state's run (attempts, input, output, error)."""
    if kind == "TaskScheduled":
        payload = _payload(event.get("taskScheduledEventDetails", {}), "parameters")
        run["attempts"] += 1
        if isinstance(payload, dict):
            run["task_kind"] = payload.get("kind")
            run["input"] = payload.get("params", payload)
        if run.get("error"):  # a retry of an earlier failure
            run["retries"].append(f"{run['error']}: {run.get('cause', '')}")
            run["error"] = run["cause"] = None
    elif kind == "TaskSucceeded":
        reply = _payload(event.get("taskSucceededEventDetails", {}), "output")
        if isinstance(reply, dict):
            run["action_key"] = reply.get("action_key")
            run["output"] = reply.get("result", reply)
        else:
            run["output"] = reply
    elif kind in ("TaskFailed", "TaskTimedOut"):
        details = event.get(kind[0].lower() + kind[1:] + "EventDetails", {})
        run["error"] = details.get("error")
        run["cause"] = short_cause(details.get("cause"), limit=600)
    elif kind == "TaskSubmitted":
        run["waiting"] = True


def state_statuses(
    runs: Sequence[StepRun], owner: Mapping[str, str] | None = None
) -> dict[str, RunStatus]:
    """What the graph colours each entered state (or the state ``owner`` folds it into):
    a run still going (waiting, current) wins, else the latest run's status."""
    found: dict[str, RunStatus] = {}
    for run in runs:
        state = owner.get(run.state, run.state) if owner else run.state
        if found.get(state) not in _GOING:
            found[state] = run.status
    return found


_GOING = (RunStatus.WAITING, RunStatus.CURRENT)


def case_input(events: Sequence[Mapping[str, Any]]) -> Any:
    """The execution's input: the approved case as it was started."""
    for event in events:
        if event.get("type") == "ExecutionStarted":
            return _json(event.get("executionStartedEventDetails", {}).get("input"))
    return None
