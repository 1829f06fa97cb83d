"""Each state entry as the execution page shows it: the step's own input (its payload's
``params``) and output (its ``result``), or the error; duration; attempts; how it ended."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from stepsaga.console._steps import RunStatus, case_input, state_statuses, step_runs

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
CASE = {"tenant_id": "acme", "refund": {"payment_id": "PAY-1", "amount": "20.00"}}
PARAMS = {"payment_id": "PAY-1", "amount": "20.00"}


def _event(ms: float, kind: str, key: str | None = None, **details: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": kind, "timestamp": T0 + timedelta(milliseconds=ms)}
    if key is not None:
        event[key] = details
    return event


def _entered(ms: float, name: str, kind: str = "TaskStateEntered") -> dict[str, Any]:
    return _event(ms, kind, "stateEnteredEventDetails", name=name, input=json.dumps(CASE))


def _exited(ms: float, name: str) -> dict[str, Any]:
    return _event(ms, "TaskStateExited", "stateExitedEventDetails", name=name, output="{}")


def _scheduled(ms: float) -> dict[str, Any]:
    payload = {"FunctionName": "f", "Payload": {"kind": "step", "params": PARAMS}}
    return _event(ms, "TaskScheduled", "taskScheduledEventDetails", parameters=json.dumps(payload))


def _succeeded(ms: float, result: dict[str, Any]) -> dict[str, Any]:
    reply = {"Payload": {"status": "COMPLETED", "result": result}}
    return _event(ms, "TaskSucceeded", "taskSucceededEventDetails", output=json.dumps(reply))


def _failed(ms: float, error: str, message: str) -> dict[str, Any]:
    cause = json.dumps({"errorMessage": message, "stackTrace": ["..."]})
    return _event(ms, "TaskFailed", "taskFailedEventDetails", error=error, cause=cause)


def test_a_retried_step_shows_its_params_result_attempts_and_duration() -> None:
    events = [
        _event(0, "ExecutionStarted", "executionStartedEventDetails", input=json.dumps(CASE)),
        _entered(1, "RefundPayment"),
        _scheduled(2),
        _failed(10, "TransientError", "HTTP 429"),
        _scheduled(3010),
        _succeeded(3020, {"refund_id": "re_1"}),
        _exited(3021.5, "RefundPayment"),
    ]
    (run,) = step_runs(events)
    assert (run.state, run.status, run.attempts) == ("RefundPayment", RunStatus.SUCCEEDED, 2)
    assert run.input == PARAMS  # the step's own input, not the whole case
    assert run.output == {"refund_id": "re_1"}
    assert run.duration_ms == 3020.5
    assert run.error is None
    assert run.retries == ["TransientError: HTTP 429"]
    assert case_input(events) == CASE


def test_caught_failed_waiting_and_current_runs() -> None:
    caught = step_runs(
        [
            _entered(0, "CreateShipment"),
            _scheduled(1),
            _failed(2, "BusinessRejectedError", "HTTP 422"),
            _exited(3, "CreateShipment"),
            _entered(4, "AwaitDecisionCreateShipment"),
            _scheduled(5),
            _event(6, "TaskSubmitted"),
        ]
    )
    assert [(r.state, r.status) for r in caught] == [
        ("CreateShipment", RunStatus.CAUGHT),
        ("AwaitDecisionCreateShipment", RunStatus.WAITING),
    ]
    assert (caught[0].error, caught[0].cause, caught[0].output) == (
        "BusinessRejectedError",
        "HTTP 422",
        None,
    )
    failed = step_runs(
        [
            _entered(0, "RefundPayment"),
            _scheduled(1),
            _failed(2, "TransientError", "HTTP 429"),
            _event(3, "ExecutionFailed", "executionFailedEventDetails", error="TransientError"),
        ]
    )
    assert [(r.status, r.duration_ms) for r in failed] == [(RunStatus.FAILED, 3.0)]
    running = step_runs([_entered(0, "ReserveStock"), _scheduled(1)])
    assert [(r.status, r.duration_ms) for r in running] == [(RunStatus.CURRENT, None)]


def test_interleaved_map_iterations_each_keep_their_own_run() -> None:
    """Two items of a Map run at once: each event belongs to the state its
    ``previousEventId`` chain entered; the map itself holds them."""
    spec = [
        (1, 0, _entered(0, "ReserveLines", "MapStateEntered")),
        (2, 1, _event(1, "MapIterationStarted")),
        (3, 2, _entered(2, "ReserveLine")),
        (4, 1, _event(3, "MapIterationStarted")),
        (5, 4, _entered(4, "ReserveLine")),
        (6, 3, _scheduled(5)),
        (7, 5, _scheduled(6)),
        (8, 6, _succeeded(10, {"line": 1})),
        (9, 7, _failed(12, "OutcomeUnknownError", "read timeout")),
        (10, 8, _exited(13, "ReserveLine")),
        (11, 9, _exited(14, "ReserveLine")),
    ]
    events = [{**event, "id": i, "previousEventId": p} for i, p, event in spec]
    runs = step_runs(events)
    assert [(r.state, r.status, r.attempts) for r in runs] == [
        ("ReserveLines", RunStatus.CURRENT, 0),
        ("ReserveLine", RunStatus.SUCCEEDED, 1),
        ("ReserveLine", RunStatus.CAUGHT, 1),
    ]
    assert (runs[1].output, runs[2].error) == ({"line": 1}, "OutcomeUnknownError")
    # the graph shows the state by its latest run unless one is still going
    assert state_statuses(runs) == {
        "ReserveLines": RunStatus.CURRENT,
        "ReserveLine": RunStatus.CAUGHT,
    }
