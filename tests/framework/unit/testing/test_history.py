"""History assertions read AWS-shaped histories, whatever backend wrote them."""

from __future__ import annotations

from typing import Any

import pytest

from stepsaga.testing import History, assert_caught, assert_outcome, assert_path, assert_retries
from stepsaga.testing._history import Caught, ExecutionEnd


def events(*specs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """``{"events": [...]}`` with ids, previous ids and the details key AWS uses."""
    out = []
    for i, (kind, details) in enumerate(specs, 1):
        event: dict[str, Any] = {"id": i, "previousEventId": i - 1, "type": kind}
        if kind.endswith("StateEntered"):
            event["stateEnteredEventDetails"] = details
        elif kind.endswith("StateExited"):
            event["stateExitedEventDetails"] = details
        elif details:
            event[kind[0].lower() + kind[1:] + "EventDetails"] = details
        out.append(event)
    return {"events": out}


def task(name: str, *failures: str, ok: bool = True, exit: bool = True) -> list[Any]:
    """A task visit: one attempt per failure (then one that succeeds when ``ok``)."""
    spec: list[Any] = [("TaskStateEntered", {"name": name})]
    for error in failures:
        spec += [("TaskScheduled", {}), ("TaskStarted", {})]
        spec += [("TaskFailed", {"error": error, "cause": f"{error}!"})]
    if ok:
        spec += [("TaskScheduled", {}), ("TaskStarted", {}), ("TaskSucceeded", {"output": "{}"})]
    if exit:
        spec.append(("TaskStateExited", {"name": name}))
    return spec


REJECTED = events(
    ("ExecutionStarted", {"input": "{}"}),
    ("PassStateEntered", {"name": "Prepare"}),
    ("PassStateExited", {"name": "Prepare"}),
    *task("Reserve"),
    *task("Refund", "TransientError", "TransientError"),
    *task("Ship", "TransientError", "BusinessRejectedError", ok=False),
    *task("Release", "TransientError"),
    ("FailStateEntered", {"name": "Compensated"}),
    ("ExecutionFailed", {"error": "Saga.Compensated", "cause": "rejected"}),
)


def test_path_retries_catches_and_outcome() -> None:
    h = History.of(REJECTED)
    assert h.path == ("Prepare", "Reserve", "Refund", "Ship", "Release", "Compensated")
    assert (h.retries("Refund"), h.attempts("Refund")) == (2, 3)
    assert h.retries("Ship") == 1  # the retried error, then the caught one
    assert h.retries("Reserve") == 0
    rejected = Caught("Ship", "BusinessRejectedError", "BusinessRejectedError!", "Release")
    assert h.caught() == (rejected,)
    assert h.caught("Refund") == ()
    assert h.outcome == ExecutionEnd("FAILED", "Saga.Compensated", "rejected")


def test_every_assertion_passes_on_what_happened() -> None:
    assert_path(REJECTED, ["Prepare", "Reserve", "Refund", "Ship", "Release", "Compensated"])
    assert_retries(REJECTED, "Refund", 2)
    assert_caught(REJECTED, "Ship", "BusinessRejectedError", next_state="Release")
    assert_outcome(REJECTED, "FAILED", error="Saga.Compensated", cause="reject")
    assert_outcome(REJECTED, "FAILED")  # the error is only checked when given


def test_a_state_entered_twice_counts_retries_per_visit() -> None:
    h = History.of(
        events(
            *task("Refund", "OutcomeUnknownError", ok=False),
            *task("Reconcile"),
            *task("Refund", "TransientError"),
            ("SucceedStateEntered", {"name": "Done"}),
            ("SucceedStateExited", {"name": "Done"}),
            ("ExecutionSucceeded", {"output": "{}"}),
        )
    )
    assert h.path == ("Refund", "Reconcile", "Refund", "Done")
    assert (h.attempts("Refund"), h.retries("Refund")) == (3, 1)
    assert [c.error for c in h.caught("Refund")] == ["OutcomeUnknownError"]
    assert h.outcome == ExecutionEnd("SUCCEEDED")


def test_an_uncaught_error_is_not_a_catch() -> None:
    h = History.of(
        events(
            *task("Refund", "TransientError", "TransientError", ok=False, exit=False),
            ("ExecutionFailed", {"error": "TransientError", "cause": "x"}),
        )
    )
    assert h.caught() == ()
    assert h.outcome.error == "TransientError"


def test_legacy_lambda_events_are_read_too() -> None:
    h = History.of(
        events(
            ("TaskStateEntered", {"name": "Legacy"}),
            ("LambdaFunctionScheduled", {"resource": "arn"}),
            ("LambdaFunctionFailed", {"error": "Boom", "cause": "c"}),
            ("LambdaFunctionScheduled", {"resource": "arn"}),
            ("LambdaFunctionTimedOut", {"error": "States.Timeout"}),
            ("TaskStateExited", {"name": "Legacy"}),
            ("FailStateEntered", {"name": "Failed"}),
            ("ExecutionFailed", {"error": "X"}),
        )
    )
    assert h.retries("Legacy") == 1
    assert h.caught("Legacy")[0].error == "States.Timeout"
    assert h.outcome == ExecutionEnd("FAILED", "X")


def test_running_and_redriven_executions() -> None:
    failed = [
        *task("Refund", "TransientError", ok=False, exit=False),
        ("ExecutionFailed", {"error": "TransientError"}),
    ]
    waiting = events(*task("Wait", ok=False, exit=False))
    assert History.of(waiting).outcome == ExecutionEnd("RUNNING")
    redriven = events(*failed, ("ExecutionRedriven", {"redriveCount": 1}))
    assert History.of(redriven).outcome == ExecutionEnd("RUNNING")
    done = events(
        *failed,
        ("ExecutionRedriven", {"redriveCount": 1}),
        *task("Refund"),
        ("ExecutionSucceeded", {}),
    )
    assert History.of(done).path == ("Refund", "Refund")
    assert History.of(done).outcome == ExecutionEnd("SUCCEEDED")


def test_events_in_any_order_and_any_container() -> None:
    listed = REJECTED["events"]
    assert History.of(list(reversed(listed))).path == History.of(REJECTED).path
    h = History.of(listed)
    assert History.of(h) is h


def test_path_failure_shows_where_and_the_whole_execution() -> None:
    with pytest.raises(AssertionError) as failure:
        assert_path(REJECTED, ["Prepare", "Reserve", "Refund", "Ship", "Completed"])
    message = str(failure.value)
    assert "path differs at state 5: expected Completed, got Release" in message
    assert "actual:   Prepare -> Reserve -> Refund -> Ship -> Release -> Compensated" in message
    assert "  3. Refund  [2 retries]" in message
    assert "  4. Ship  [1 retry]  caught BusinessRejectedError -> Release" in message
    assert "outcome: FAILED (Saga.Compensated)" in message


def test_a_shorter_path_fails_at_its_end() -> None:
    with pytest.raises(AssertionError, match="at state 7: expected Extra, got the end"):
        assert_path(REJECTED, [*History.of(REJECTED).path, "Extra"])


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (lambda: assert_retries(REJECTED, "Refund", 1), "Refund was retried 2 time"),
        (lambda: assert_retries(REJECTED, "Nope", 0), "Nope was never entered"),
        (lambda: assert_caught(REJECTED, "Refund", "E"), "no Catch handled an error in Refund"),
        (
            lambda: assert_caught(REJECTED, "Ship", "TransientError"),
            "the Catch in Ship handled BusinessRejectedError, expected TransientError",
        ),
        (
            lambda: assert_caught(REJECTED, "Ship", "BusinessRejectedError", next_state="X"),
            "BusinessRejectedError in Ship was routed to Release, expected X",
        ),
        (
            lambda: assert_outcome(REJECTED, "SUCCEEDED"),
            r"outcome FAILED \(Saga.Compensated\), expected SUCCEEDED",
        ),
        (
            lambda: assert_outcome(REJECTED, "FAILED", error="Saga.CompensationFailed"),
            r"expected FAILED \(Saga.CompensationFailed\)",
        ),
        (
            lambda: assert_outcome(REJECTED, "FAILED", cause="other"),
            'cause "rejected" does not contain "other"',
        ),
    ],
)
def test_failures_say_what_differs_and_show_the_path(check: Any, message: str) -> None:
    with pytest.raises(AssertionError, match=message) as failure:
        check()
    assert "the execution went:\n  1. Prepare" in str(failure.value)


def test_a_failure_listing_names_the_failed_state_its_error_and_cause() -> None:
    listing = History.of(REJECTED).describe()
    assert listing.splitlines()[-1] == "     failed in Compensated: Saga.Compensated: rejected"
    assert "failed" not in History.of(events(*task("Wait"), ("ExecutionSucceeded", {}))).describe()


def test_interleaved_map_iterations_are_read_one_thread_at_a_time() -> None:
    """Two iterations run at once: a retry and a catch in one never count in the other."""

    def ev(i: int, prev: int, kind: str, **details: Any) -> dict[str, Any]:
        event: dict[str, Any] = {"id": i, "previousEventId": prev, "type": kind}
        if kind.endswith(("StateEntered", "StateExited")):
            key = "stateEnteredEventDetails" if "Entered" in kind else "stateExitedEventDetails"
            event[key] = details
        elif details:
            event[kind[0].lower() + kind[1:] + "EventDetails"] = details
        return event

    history = [
        ev(1, 0, "ExecutionStarted"),
        ev(2, 1, "MapStateEntered", name="Items"),
        ev(3, 2, "MapStateStarted"),
        ev(4, 3, "MapIterationStarted", name="Items", index=0),
        ev(5, 4, "TaskStateEntered", name="Do"),
        ev(6, 5, "TaskScheduled"),
        ev(7, 3, "MapIterationStarted", name="Items", index=1),
        ev(8, 7, "TaskStateEntered", name="Do"),
        ev(9, 8, "TaskScheduled"),
        ev(10, 9, "TaskFailed", error="OutcomeUnknownError", cause="?"),
        ev(11, 10, "TaskStateExited", name="Do"),
        ev(12, 11, "TaskStateEntered", name="ReconcileDo"),
        ev(13, 6, "TaskFailed", error="TransientError", cause="429"),
        ev(14, 13, "TaskScheduled"),
        ev(15, 12, "TaskScheduled"),
        ev(16, 15, "TaskSucceeded"),
        ev(17, 16, "TaskStateExited", name="ReconcileDo"),
        ev(18, 14, "TaskSucceeded"),
        ev(19, 18, "TaskStateExited", name="Do"),
        ev(20, 19, "MapIterationSucceeded", name="Items", index=0),
        ev(21, 17, "MapIterationSucceeded", name="Items", index=1),
        ev(22, 21, "MapStateSucceeded"),
        ev(23, 22, "MapStateExited", name="Items"),
        ev(24, 23, "SucceedStateEntered", name="Done"),
        ev(25, 24, "ExecutionSucceeded", output="{}"),
    ]
    h = History.of(history)

    assert h.path == ("Items", "Do", "Do", "ReconcileDo", "Done")
    assert h.retries("Do") == 1
    assert h.retries("ReconcileDo") == 0
    assert h.caught() == (Caught("Do", "OutcomeUnknownError", "?", "ReconcileDo"),)
