"""``stepsaga._reconciliation.resolve``: the API behind ``stepsaga recon resolve``."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from stepsaga._reconciliation import parse_outcome, resolve, resume_waiting
from stepsaga.backends import ReconOutcome
from stepsaga.errors import (
    IllegalTransitionError,
    InvalidInputError,
    NotFoundError,
    OutcomeUnknownError,
    TransientError,
)
from stepsaga.ledger import Status, open_ledger
from stepsaga.ledger._models import ReconStatus
from stepsaga.workflow._events import OperatorDecision
from tests.framework.unit.handlers.conftest import WorldFactory
from tests.framework.unit.handlers.helpers import (
    Sent,
    World,
    await_event,
    fault,
    reconcile_event,
    step_event,
)

SHIP_KEY = "acme:CASE-1001:r1:create_shipment"


def waiting_shipment(make: WorldFactory, *, budget: int | None = None) -> tuple[World, str]:
    """A shipment whose outcome nobody can establish, its case parked on ``tok-1``."""
    world = make(
        faults={
            "faults": [
                fault("create_shipment", "lose_response", attempt=1),
                fault("find_shipment_by_reference", "throttle", times=1),
            ]
        },
        callbacks=False,
    )
    if budget is not None:
        world.ledger.set_budget("acme", budget)
    with pytest.raises(OutcomeUnknownError):
        world.run("CreateShipment", step_event("CreateShipment"))
    verdict = world.run("Reconcile", reconcile_event("CreateShipment"))
    assert verdict["outcome"] == "undecided"
    world.run("Reconcile", await_event("CreateShipment", verdict["item_id"], token="tok-1"))
    return world, verdict["item_id"]


def test_applied_completes_the_record_and_resumes_the_case(make: WorldFactory) -> None:
    world, item_id = waiting_shipment(make)
    sent = Sent()

    done = resolve(
        world.ledger,
        item_id,
        "applied",
        "ops@acme.example",
        "carrier portal shows the label",
        send_task_success=sent,
        result={"shipment_id": "SHP-PORTAL"},
    )

    assert (done.changed, done.resumed) == (True, True)
    assert done.item.status is ReconStatus.RESOLVED
    assert (done.item.resolved_by, done.item.note) == (
        "ops@acme.example",
        "carrier portal shows the label",
    )
    record = world.ledger.get(SHIP_KEY)
    assert record.status is Status.COMPLETED
    assert record.result == {"shipment_id": "SHP-PORTAL"}
    token, output = sent.calls[0]
    assert token == "tok-1"
    assert OperatorDecision.model_validate(output).outcome.value == "applied"
    assert output["item_id"] == item_id
    # The step replays what the operator recorded; nothing ships again.
    replay = world.run("CreateShipment", step_event("CreateShipment"))
    assert replay["result"] == {"shipment_id": "SHP-PORTAL"}
    assert len(world.effects("create_shipment")) == 1


def test_not_applied_refunds_the_budget_and_allows_the_same_key(make: WorldFactory) -> None:
    world, item_id = waiting_shipment(make, budget=10)
    assert world.ledger.budget("acme") == 9  # UNKNOWN keeps its debit

    done = resolve(
        world.ledger,
        item_id,
        "not-applied",
        "ops@acme.example",
        "carrier has nothing",
        send_task_success=Sent(),
    )

    assert done.item.outcome is ReconOutcome.NOT_APPLIED
    assert world.ledger.get(SHIP_KEY).status is Status.RELEASED
    assert world.ledger.budget("acme") == 10
    result = world.run("CreateShipment", step_event("CreateShipment"))
    assert result["action_key"] == SHIP_KEY
    assert world.ledger.budget("acme") == 9


def test_applied_keeps_the_debit(make: WorldFactory) -> None:
    world, item_id = waiting_shipment(make, budget=10)
    resolve(world.ledger, item_id, "applied", "ops", "seen", send_task_success=None)
    assert world.ledger.budget("acme") == 9


def test_the_same_resolution_again_is_a_no_op(make: WorldFactory) -> None:
    world, item_id = waiting_shipment(make)
    sent = Sent()
    resolve(world.ledger, item_id, "applied", "ops", "seen", send_task_success=sent)

    again = resolve(world.ledger, item_id, "applied", "ops", "seen", send_task_success=sent)

    assert (again.changed, again.resumed) == (False, False)
    assert len(sent.calls) == 1


def test_a_contradicting_resolution_is_refused(make: WorldFactory) -> None:
    world, item_id = waiting_shipment(make)
    resolve(world.ledger, item_id, "applied", "ops@acme", "seen", send_task_success=None)

    with pytest.raises(IllegalTransitionError) as caught:
        resolve(world.ledger, item_id, "not_applied", "other", "?", send_task_success=None)

    assert "already resolved as applied by ops@acme" in caught.value.message
    assert world.ledger.get(SHIP_KEY).status is Status.COMPLETED


def test_resolving_without_a_waiting_case(make: WorldFactory) -> None:
    world = make(
        faults={
            "faults": [
                fault("create_shipment", "lose_response"),
                fault("find_shipment_by_reference", "throttle"),
            ]
        }
    )
    with pytest.raises(OutcomeUnknownError):
        world.run("CreateShipment", step_event("CreateShipment"))
    item_id = world.run("Reconcile", reconcile_event("CreateShipment"))["item_id"]
    sent = Sent()

    done = resolve(world.ledger, item_id, "applied", "ops", "seen", send_task_success=sent)

    assert done.resumed is False
    assert sent.calls == []


def test_resuming_can_be_retried(make: WorldFactory) -> None:
    world, item_id = waiting_shipment(make)

    def unreachable(token: str, output: dict[str, Any]) -> None:
        raise ConnectionError("no route")

    with pytest.raises(TransientError) as caught:
        resolve(world.ledger, item_id, "applied", "ops", "seen", send_task_success=unreachable)
    assert "resume" in caught.value.message
    assert world.ledger.get_item(item_id).status is ReconStatus.RESOLVED

    sent = Sent()
    assert resume_waiting(world.ledger, item_id, sent) is True
    assert sent.calls[0][0] == "tok-1"


def test_bad_input(make: WorldFactory) -> None:
    world, item_id = waiting_shipment(make)
    with pytest.raises(NotFoundError):
        resolve(world.ledger, "rec-missing", "applied", "ops", "x", send_task_success=None)
    with pytest.raises(InvalidInputError):
        resolve(world.ledger, item_id, "maybe", "ops", "x", send_task_success=None)
    with pytest.raises(InvalidInputError):
        resolve(world.ledger, item_id, "applied", "", "x", send_task_success=None)
    with pytest.raises(IllegalTransitionError):
        resume_waiting(world.ledger, item_id, Sent())  # not resolved yet
    assert parse_outcome("Not-Applied") is ReconOutcome.NOT_APPLIED


def test_identical_resolutions_racing_in_threads_resume_the_case_once(
    make: WorldFactory,
) -> None:
    """Each thread its own ledger connection, released together: one writes and resumes,
    the other gets the same item with ``changed`` false and sends nothing."""
    world, item_id = waiting_shipment(make)
    sent = Sent()
    start = threading.Barrier(2)
    results: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        with open_ledger(world.home.ledger_url, clock=world.clock) as ledger:
            start.wait()
            try:
                results.append(
                    resolve(
                        ledger, item_id, "applied", "ops@acme.example", "n", send_task_success=sent
                    )
                )
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(r.changed for r in results) == [False, True]
    assert results[0].item.outcome is results[1].item.outcome is ReconOutcome.APPLIED
    assert len(sent.calls) == 1
