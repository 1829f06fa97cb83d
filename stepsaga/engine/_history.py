"""History events in the AWS ``GetExecutionHistory`` shape.

An event is ``{"timestamp", "type", "id", "previousEventId", "<x>EventDetails": {…}}``. For
``arn:aws:states:::lambda:invoke`` AWS emits ``TaskScheduled``/``TaskStarted``/
``TaskSucceeded``/``TaskFailed`` (``resourceType: "lambda"``, ``resource: "invoke"``), not the
legacy ``LambdaFunction…`` events, and ``TaskSubmitted`` once a ``.waitForTaskToken`` task's
invocation returned.

``Parallel`` and inline ``Map`` states add ``<Type>StateStarted/Succeeded/Failed/Aborted``
(only ``MapStateStarted`` has details: ``{"length"}``) and, per Map iteration,
``MapIteration{Started,Succeeded,Failed,Aborted}`` with ``{"name", "index"}``. Inside a
branch or iteration each event's ``previousEventId`` is the previous event *of that branch*,
its first one points at ``ParallelStateStarted``/``MapIterationStarted``, so the history reads
as one chain per branch as it does on AWS.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    EXECUTION_STARTED = "ExecutionStarted"
    EXECUTION_SUCCEEDED = "ExecutionSucceeded"
    EXECUTION_FAILED = "ExecutionFailed"
    EXECUTION_ABORTED = "ExecutionAborted"
    EXECUTION_TIMED_OUT = "ExecutionTimedOut"
    EXECUTION_REDRIVEN = "ExecutionRedriven"
    TASK_STATE_ENTERED = "TaskStateEntered"
    TASK_STATE_EXITED = "TaskStateExited"
    TASK_STATE_ABORTED = "TaskStateAborted"
    TASK_SCHEDULED = "TaskScheduled"
    TASK_STARTED = "TaskStarted"
    TASK_SUBMITTED = "TaskSubmitted"
    TASK_SUCCEEDED = "TaskSucceeded"
    TASK_FAILED = "TaskFailed"
    TASK_TIMED_OUT = "TaskTimedOut"
    PASS_STATE_ENTERED = "PassStateEntered"  # noqa: S105
    PASS_STATE_EXITED = "PassStateExited"  # noqa: S105
    CHOICE_STATE_ENTERED = "ChoiceStateEntered"
    CHOICE_STATE_EXITED = "ChoiceStateExited"
    WAIT_STATE_ENTERED = "WaitStateEntered"
    WAIT_STATE_EXITED = "WaitStateExited"
    WAIT_STATE_ABORTED = "WaitStateAborted"
    SUCCEED_STATE_ENTERED = "SucceedStateEntered"
    SUCCEED_STATE_EXITED = "SucceedStateExited"
    FAIL_STATE_ENTERED = "FailStateEntered"
    PARALLEL_STATE_ENTERED = "ParallelStateEntered"
    PARALLEL_STATE_STARTED = "ParallelStateStarted"
    PARALLEL_STATE_SUCCEEDED = "ParallelStateSucceeded"
    PARALLEL_STATE_FAILED = "ParallelStateFailed"
    PARALLEL_STATE_ABORTED = "ParallelStateAborted"
    PARALLEL_STATE_EXITED = "ParallelStateExited"
    MAP_STATE_ENTERED = "MapStateEntered"
    MAP_STATE_STARTED = "MapStateStarted"
    MAP_STATE_SUCCEEDED = "MapStateSucceeded"
    MAP_STATE_FAILED = "MapStateFailed"
    MAP_STATE_ABORTED = "MapStateAborted"
    MAP_STATE_EXITED = "MapStateExited"
    MAP_ITERATION_STARTED = "MapIterationStarted"
    MAP_ITERATION_SUCCEEDED = "MapIterationSucceeded"
    MAP_ITERATION_FAILED = "MapIterationFailed"
    MAP_ITERATION_ABORTED = "MapIterationAborted"
    EVALUATION_FAILED = "EvaluationFailed"  # a JSONata expression failed (QueryEvaluationError)


#: Events the ``HistoryEvent`` API defines without a ``…EventDetails`` member.
_NO_DETAILS = {
    EventType.PARALLEL_STATE_STARTED.value,
    EventType.PARALLEL_STATE_SUCCEEDED.value,
    EventType.PARALLEL_STATE_FAILED.value,
    EventType.MAP_STATE_SUCCEEDED.value,
    EventType.MAP_STATE_FAILED.value,
}


def details_key(event_type: str) -> str | None:
    """The ``…EventDetails`` field an event of this type carries."""
    if event_type.endswith("StateEntered"):
        return "stateEnteredEventDetails"
    if event_type.endswith("StateExited"):
        return "stateExitedEventDetails"
    if event_type.endswith("StateAborted") or event_type in _NO_DETAILS:
        return None
    return event_type[0].lower() + event_type[1:] + "EventDetails"


def entered_type(state_type: str) -> EventType:
    return EventType(f"{state_type}StateEntered")


def exited_type(state_type: str) -> EventType:
    return EventType(f"{state_type}StateExited")


def to_json(value: Any) -> str:
    """JSON as AWS writes state data into history: compact."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def state_entered(name: str, data_json: str) -> dict[str, Any]:
    return {"name": name, "input": data_json, "inputDetails": {"truncated": False}}


def state_exited(name: str, data_json: str) -> dict[str, Any]:
    return {"name": name, "output": data_json, "outputDetails": {"truncated": False}}


def build(
    event_id: int,
    previous_id: int,
    event_type: str,
    timestamp: float,
    details: dict[str, Any] | None,
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "timestamp": datetime.fromtimestamp(timestamp, UTC),
        "type": event_type,
        "id": event_id,
        "previousEventId": previous_id,
    }
    key = details_key(event_type)
    if key is not None and details is not None:
        event[key] = details
    return event
