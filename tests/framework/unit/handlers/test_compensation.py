"""ReleaseReservation: its own key, its own recorded outcome, any number of runs → one release."""

from __future__ import annotations

from typing import Any

import pytest

from stepsaga.errors import InvalidInputError, NotFoundError, OutcomeUnknownError, StepSagaError
from stepsaga.ledger import Status
from tests.framework.unit.handlers.conftest import WorldFactory
from tests.framework.unit.handlers.helpers import (
    World,
    case_input,
    compensation_event,
    fault,
    step_event,
)

RESERVE_KEY = "acme:CASE-1001:r1:reserve_stock"
RELEASE_KEY = f"{RESERVE_KEY}:compensate:release_reservation"


def reserved(world: World) -> dict[str, Any]:
    return world.run("ReserveStock", step_event("ReserveStock"))


def test_three_runs_make_one_release(world: World) -> None:
    original = reserved(world)

    results = [world.run("ReleaseReservation", compensation_event(original)) for _ in range(3)]

    assert [r["replayed"] for r in results] == [False, True, True]
    assert {r["action_key"] for r in results} == {RELEASE_KEY}
    assert results[0]["result"]["status"] == "released"
    # Counted from the services' effects table, not from our ledger.
    assert len(world.effects("release")) == 1
    assert len(world.effects("reserve")) == 1
    stock = world.simulation.stock("acme", "SKU-RED-MUG", "eu-west")
    assert stock == 1000  # reserved one, released one


def test_release_whose_reply_is_lost_is_retried_with_the_same_key(make: WorldFactory) -> None:
    world = make(faults={"faults": [fault("release", "lose_response", attempt=1)]})
    original = reserved(world)

    result = world.run("ReleaseReservation", compensation_event(original))

    assert result["replayed"] is False
    assert len(world.effects("release")) == 1


def test_release_uncertain_every_time_is_unknown_with_one_release(
    make: WorldFactory,
) -> None:
    world = make(faults={"faults": [fault("release", "lose_response", times=2)]})
    original = reserved(world)

    with pytest.raises(OutcomeUnknownError):
        world.run("ReleaseReservation", compensation_event(original))
    record = world.ledger.get(RELEASE_KEY)
    assert record is not None
    assert record.status is Status.UNKNOWN
    assert len(world.effects("release")) == 1


def test_an_original_of_another_case_is_refused(world: World) -> None:
    original = reserved(world)
    other = dict(original, action_key="acme:CASE-2002:r1:reserve_stock")

    with pytest.raises(InvalidInputError) as caught:
        world.run("ReleaseReservation", compensation_event(other))

    assert caught.value.data["field"] == "original.action_key"
    assert world.effects("release") == []


def test_an_original_of_another_tenant_is_refused(world: World) -> None:
    original = reserved(world)
    other = dict(original, action_key="globex:CASE-1001:r1:reserve_stock")
    with pytest.raises(InvalidInputError) as caught:
        world.run("ReleaseReservation", compensation_event(other))
    assert caught.value.data["field"] == "original.action_key"


def test_an_event_for_another_tenant_cannot_release_ours(world: World) -> None:
    original = reserved(world)  # acme's reservation
    globex = case_input(tenant_id="globex")
    with pytest.raises(InvalidInputError) as caught:
        world.run("ReleaseReservation", compensation_event(original, globex))
    assert caught.value.data["field"] == "original.action_key"
    assert world.effects("release") == []


def test_only_a_completed_original_is_compensated(world: World) -> None:
    never = {
        "action_key": RESERVE_KEY,
        "status": "COMPLETED",
        "result": {},
        "replayed": False,
    }
    with pytest.raises(InvalidInputError) as caught:
        world.run("ReleaseReservation", compensation_event(never))
    assert caught.value.data["field"] == "original.action_key"


def test_other_params_than_the_original_are_refused(world: World) -> None:
    original = reserved(world)
    event = compensation_event(original)
    event["params"]["quantity"] = 2
    with pytest.raises(InvalidInputError) as caught:
        world.run("ReleaseReservation", event)
    assert caught.value.data["field"] == "params"


def test_wrong_compensates_is_refused(world: World) -> None:
    original = reserved(world)
    event = compensation_event(original)
    event["compensates"] = {
        "step": "RefundPayment",
        "operation": "refund_payment",
        "effect": "keyed_write",
    }
    with pytest.raises(InvalidInputError) as caught:
        world.run("ReleaseReservation", event)
    assert caught.value.data["field"] == "compensates"


def test_a_vanished_reservation_is_a_recorded_failure(world: World) -> None:
    original = reserved(world)
    world.simulation.reset()  # the service forgot it

    with pytest.raises(NotFoundError) as first:
        world.run("ReleaseReservation", compensation_event(original))
    with pytest.raises(StepSagaError) as again:
        world.run("ReleaseReservation", compensation_event(original))

    assert type(again.value) is type(first.value)
    record = world.ledger.get(RELEASE_KEY)
    assert record is not None
    assert record.status is Status.FAILED


def test_compensation_is_never_refused_for_budget(world: World) -> None:
    original = reserved(world)
    world.ledger.set_budget("acme", 0)
    result = world.run("ReleaseReservation", compensation_event(original))
    assert result["replayed"] is False
