"""The history timeline: retries with the time waited, errors caught and where they went,
uncaught failures, waits, redrives and the end, from GetExecutionHistory events."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from stepsaga.console._timeline import EntryKind, short_cause, timeline

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _events(*spec: tuple[float, str, dict[str, Any] | None]) -> list[dict[str, Any]]:
    events = []
    for n, (seconds, kind, details) in enumerate(spec, start=1):
        event: dict[str, Any] = {
            "id": n,
            "type": kind,
            "timestamp": T0 + timedelta(seconds=seconds),
        }
        if details is not None:
            key = (
                "stateEnteredEventDetails"
                if kind.endswith("StateEntered")
                else kind[0].lower() + kind[1:] + "EventDetails"
            )
            event[key] = details
        events.append(event)
    return events


def _failed(error: str, message: str) -> dict[str, Any]:
    return {"error": error, "cause": json.dumps({"errorMessage": message})}


def test_a_retry_shows_its_number_and_the_time_waited() -> None:
    events = _events(
        (0, "ExecutionStarted", {}),
        (0, "TaskStateEntered", {"name": "RefundPayment"}),
        (0, "TaskScheduled", {}),
        (1, "TaskFailed", _failed("Transient.Throttled", "HTTP 429")),
        (3.5, "TaskScheduled", {}),
        (4, "TaskFailed", _failed("Transient.Throttled", "HTTP 429")),
        (8, "TaskScheduled", {}),
        (9, "TaskSucceeded", {}),
    )
    retries = [e for e in timeline(events) if e.kind is EntryKind.RETRIED]
    assert [(e.state, e.attempt, e.seconds, e.error, e.text) for e in retries] == [
        ("RefundPayment", 1, 2.5, "Transient.Throttled", "HTTP 429"),
        ("RefundPayment", 2, 4.0, "Transient.Throttled", "HTTP 429"),
    ]


def test_a_caught_error_names_the_state_it_went_to() -> None:
    events = _events(
        (0, "TaskStateEntered", {"name": "CreateShipment"}),
        (0, "TaskScheduled", {}),
        (1, "TaskFailed", _failed("Business.Rejected", "HTTP 422")),
        (1, "TaskStateExited", {"name": "CreateShipment"}),
        (1, "TaskStateEntered", {"name": "EscalateRefundPayment"}),
        (2, "ExecutionFailed", {"error": "Saga.Compensated", "cause": "compensated"}),
    )
    entries = timeline(events)
    caught = [e for e in entries if e.kind is EntryKind.CAUGHT]
    assert [(e.state, e.error, e.next_state) for e in caught] == [
        ("CreateShipment", "Business.Rejected", "EscalateRefundPayment")
    ]
    assert entries[-1].kind is EntryKind.ENDED
    assert (entries[-1].error, entries[-1].text) == (
        "Saga.Compensated",
        "execution failed: compensated",
    )


def test_an_uncaught_failure_then_a_redrive() -> None:
    events = _events(
        (0, "TaskStateEntered", {"name": "RefundPayment"}),
        (0, "TaskScheduled", {}),
        (1, "TaskFailed", _failed("Transient.Timeout", "timed out")),
        (1, "ExecutionFailed", {"error": "Transient.Timeout"}),
        (60, "ExecutionRedriven", {"redriveCount": 1}),
        (60, "TaskStateEntered", {"name": "RefundPayment"}),
        (60, "TaskScheduled", {}),
        (61, "TaskSubmitted", {}),
    )
    kinds = [(e.kind, e.state) for e in timeline(events)]
    assert kinds == [
        (EntryKind.ENTERED, "RefundPayment"),
        (EntryKind.FAILED, "RefundPayment"),
        (EntryKind.ENDED, None),
        (EntryKind.REDRIVEN, None),
        (EntryKind.ENTERED, "RefundPayment"),
        (EntryKind.WAITING, "RefundPayment"),
    ]
    assert timeline(events)[3].text == "redrive 1"


def test_a_failure_at_the_end_of_a_running_history_is_a_pending_retry() -> None:
    """While the engine waits out a retry delay nothing follows the failure yet: it has not
    failed the execution (the page must not say "not caught")."""
    events = _events(
        (0, "TaskStateEntered", {"name": "RefundPayment"}),
        (0, "TaskScheduled", {}),
        (1, "TaskFailed", _failed("Transient.Throttled", "HTTP 429")),
    )
    assert [(e.kind, e.error) for e in timeline(events)][-1] == (
        EntryKind.PENDING,
        "Transient.Throttled",
    )


def test_a_cause_is_one_short_line() -> None:
    assert short_cause('{"errorMessage": "a\\nb"}') == "a b"
    assert short_cause("plain <b>text</b>") == "plain <b>text</b>"  # escaping is the page's job
    assert short_cause(None) == ""
    assert len(short_cause("x" * 500)) == 200


def test_a_delay_the_backend_chose_wins_over_the_time_waited() -> None:
    events = _events(
        (0, "TaskStateEntered", {"name": "RefundPayment"}),
        (0, "TaskScheduled", {}),
        (1, "TaskFailed", _failed("Transient.Throttled", "HTTP 429")),
        (1, "TaskScheduled", {}),  # time scale 0: no time passed
    )
    retry = next(e for e in timeline(events, {3: 1.75}) if e.kind is EntryKind.RETRIED)
    assert (retry.seconds, retry.chosen) == (1.75, True)
    waited = next(e for e in timeline(events) if e.kind is EntryKind.RETRIED)
    assert (waited.seconds, waited.chosen) == (0.0, False)


def test_interleaved_map_iterations_put_a_failure_on_its_own_state() -> None:
    """Two items of a Map: the second item's failure comes after the first item's next
    state was entered; ``previousEventId`` says whose it is and where it was caught."""
    events = _events(
        (0, "MapStateEntered", {"name": "ReserveLines"}),
        (0, "MapIterationStarted", None),
        (0, "TaskStateEntered", {"name": "ReserveLine"}),
        (0, "MapIterationStarted", None),
        (0, "TaskStateEntered", {"name": "ReserveLine"}),
        (1, "TaskScheduled", {}),
        (1, "TaskScheduled", {}),
        (2, "TaskStateExited", {"name": "ReserveLine"}),
        (2, "PassStateEntered", {"name": "ReserveLineItemDone"}),
        (3, "TaskFailed", _failed("OutcomeUnknownError", "reply lost")),
        (3, "TaskStateExited", {"name": "ReserveLine"}),
        (3, "TaskStateEntered", {"name": "ReconcileReserveLine"}),
    )
    chains = {1: 0, 2: 1, 3: 2, 4: 1, 5: 4, 6: 3, 7: 5, 8: 6, 9: 8, 10: 7, 11: 10, 12: 11}
    for event in events:
        event["previousEventId"] = chains[event["id"]]
    caught = [e for e in timeline(events) if e.kind is EntryKind.CAUGHT]
    assert [(e.state, e.error, e.next_state) for e in caught] == [
        ("ReserveLine", "OutcomeUnknownError", "ReconcileReserveLine")
    ]
