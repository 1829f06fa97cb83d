"""Progress notices while a case runs, the same from both backends.

The local backend turns the engine's notices into these as they happen; the AWS backend
can turn polled ``GetExecutionHistory`` events into the same values with
:func:`from_history_event`. The CLI's live display reads only these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class ProgressKind(StrEnum):
    STATE_ENTERED = "state_entered"
    TASK_FAILED = "task_failed"
    RETRY = "retry"
    WAITING = "waiting"
    REDRIVEN = "redriven"
    ENDED = "ended"


@dataclass(frozen=True)
class Progress:
    """One notice. ``state`` for state/task/retry notices; ``attempt`` (1-based retry
    number), ``seconds`` (the delay chosen, what AWS would wait) and ``error`` for retries;
    ``status``/``error`` for the end of the execution."""

    kind: ProgressKind
    execution_arn: str
    timestamp: datetime
    state: str | None = None
    error: str | None = None
    attempt: int | None = None
    seconds: float | None = None
    status: str | None = None


ProgressListener = Callable[[Progress], None]

_ENDINGS = {
    "ExecutionSucceeded": "SUCCEEDED",
    "ExecutionFailed": "FAILED",
    "ExecutionAborted": "ABORTED",
    "ExecutionTimedOut": "TIMED_OUT",
}


def from_history_event(execution_arn: str, event: Mapping[str, Any]) -> Progress | None:
    """The notice a ``GetExecutionHistory`` event means for a person, or ``None``.

    Retry delays are not in AWS histories; the local backend reports them separately.
    """
    kind = str(event.get("type", ""))
    when = event["timestamp"]
    if kind.endswith("StateEntered"):
        name = event.get("stateEnteredEventDetails", {}).get("name")
        return Progress(ProgressKind.STATE_ENTERED, execution_arn, when, state=name)
    if kind in ("TaskFailed", "TaskTimedOut"):
        key = "taskFailedEventDetails" if kind == "TaskFailed" else "taskTimedOutEventDetails"
        details = event.get(key, {})
        return Progress(ProgressKind.TASK_FAILED, execution_arn, when, error=details.get("error"))
    if kind == "TaskSubmitted":
        return Progress(ProgressKind.WAITING, execution_arn, when)
    if kind == "ExecutionRedriven":
        return Progress(ProgressKind.REDRIVEN, execution_arn, when)
    if kind in _ENDINGS:
        details_key = kind[0].lower() + kind[1:] + "EventDetails"
        error = event.get(details_key, {}).get("error")
        return Progress(ProgressKind.ENDED, execution_arn, when, status=_ENDINGS[kind], error=error)
    return None


def entered_states(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """The states an execution entered, in order (for ``graph --execution``)."""
    return [
        str(event["stateEnteredEventDetails"]["name"])
        for event in events
        if str(event.get("type", "")).endswith("StateEntered")
        and "stateEnteredEventDetails" in event
    ]
