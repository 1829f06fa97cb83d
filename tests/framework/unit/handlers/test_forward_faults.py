"""Every fault kind of the simulated services, through each forward handler.

Effects are counted from the services' own effects table (what ``stepsaga sim effects``
shows), never from the ledger the handlers write.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from services import Operation, SimulatedCrash
from stepsaga._aws import metric_names
from stepsaga.errors import (
    ActionInProgressError,
    BusinessRejectedError,
    OutcomeUnknownError,
    StepSagaError,
    TransientError,
)
from stepsaga.ledger import Status
from tests.framework.unit.handlers.conftest import WorldFactory
from tests.framework.unit.handlers.helpers import (
    World,
    context,
    fault,
    reconcile_event,
    step_event,
)

#: step → (service write operation, action key)
WRITE = {
    "ReserveStock": ("reserve", "acme:CASE-1001:r1:reserve_stock"),
    "RefundPayment": ("refund", "acme:CASE-1001:r1:refund_payment"),
    "CreateShipment": ("create_shipment", "acme:CASE-1001:r1:create_shipment"),
}
KEYED = ["ReserveStock", "RefundPayment"]
ALL = [*KEYED, "CreateShipment"]


def status(world: World, step: str) -> Status | None:
    record = world.ledger.get(WRITE[step][1])
    return record.status if record else None


def calls(world: World, step: str) -> int:
    return world.simulation.calls("acme", "CASE-1001", Operation(WRITE[step][0]))


def applied(world: World, step: str) -> int:
    return len(world.effects(WRITE[step][0]))


@pytest.mark.parametrize("step", ALL)
def test_no_fault_performs_once_and_replays(make: WorldFactory, step: str) -> None:
    world = make()
    first = world.run(step, step_event(step))
    again = world.run(step, step_event(step))

    assert first["replayed"] is False
    assert again["replayed"] is True
    assert again["result"] == first["result"]
    assert applied(world, step) == 1
    assert calls(world, step) == 1
    assert world.metrics.total(metric_names.DUPLICATE_REPLAYED) == 1


@pytest.mark.parametrize("step", ALL)
def test_throttle_releases_and_the_retry_performs_once(make: WorldFactory, step: str) -> None:
    world = make(faults={"faults": [fault(WRITE[step][0], "throttle", attempt=1)]})

    with pytest.raises(TransientError):
        world.run(step, step_event(step))
    assert status(world, step) is Status.RELEASED
    assert applied(world, step) == 0

    result = world.run(step, step_event(step))
    assert result["replayed"] is False
    assert applied(world, step) == 1
    record = world.ledger.get(WRITE[step][1])
    assert record is not None
    assert record.attempts == 2


@pytest.mark.parametrize("step", KEYED)
def test_keyed_uncertain_outcome_calls_again_with_the_same_key(
    make: WorldFactory, step: str
) -> None:
    for kind in ("timeout_before_effect", "lose_response"):
        world = make(faults={"faults": [fault(WRITE[step][0], kind, attempt=1)]})
        result = world.run(step, step_event(step))

        assert result["replayed"] is False
        assert calls(world, step) == 2, kind  # the same key went down twice
        assert applied(world, step) == 1, kind  # …and the service applied it once
        assert status(world, step) is Status.COMPLETED


@pytest.mark.parametrize("step", KEYED)
@pytest.mark.parametrize(("kind", "effects"), [("timeout_before_effect", 0), ("lose_response", 1)])
def test_keyed_still_uncertain_goes_to_reconciliation(
    make: WorldFactory, step: str, kind: str, effects: int
) -> None:
    world = make(faults={"faults": [fault(WRITE[step][0], kind)]})

    with pytest.raises(OutcomeUnknownError) as caught:
        world.run(step, step_event(step))

    assert caught.value.data["key"] == WRITE[step][1]
    assert status(world, step) is Status.UNKNOWN
    assert calls(world, step) == 2
    assert applied(world, step) == effects
    assert world.metrics.total(metric_names.OUTCOME_UNKNOWN) == 1
    # A redelivery does not call again: UNKNOWN waits for reconciliation.
    with pytest.raises(OutcomeUnknownError):
        world.run(step, step_event(step))
    assert calls(world, step) == 2


@pytest.mark.parametrize(("kind", "effects"), [("timeout_before_effect", 0), ("lose_response", 1)])
def test_physical_uncertain_outcome_is_never_repeated(
    make: WorldFactory, kind: str, effects: int
) -> None:
    world = make(faults={"faults": [fault("create_shipment", kind, attempt=1)]})

    with pytest.raises(OutcomeUnknownError):
        world.run("CreateShipment", step_event("CreateShipment"))
    with pytest.raises(OutcomeUnknownError):
        world.run("CreateShipment", step_event("CreateShipment"))

    assert calls(world, "CreateShipment") == 1
    assert applied(world, "CreateShipment") == effects
    assert status(world, "CreateShipment") is Status.UNKNOWN

    # Reconciliation by business reference decides; the step then replays or ships once.
    verdict = world.run("Reconcile", reconcile_event("CreateShipment"))
    assert verdict["outcome"] == ("applied" if effects else "not_applied")
    world.run("CreateShipment", step_event("CreateShipment"))
    world.run("CreateShipment", step_event("CreateShipment"))
    assert applied(world, "CreateShipment") == 1


@pytest.mark.parametrize("step", ALL)
def test_reject_is_recorded_failed_and_replayed(make: WorldFactory, step: str) -> None:
    world = make(faults={"faults": [fault(WRITE[step][0], "reject")]})

    with pytest.raises(BusinessRejectedError) as first:
        world.run(step, step_event(step))
    with pytest.raises(BusinessRejectedError) as replay:
        world.run(step, step_event(step))

    assert status(world, step) is Status.FAILED
    assert replay.value.message == first.value.message
    assert calls(world, step) == 1
    assert applied(world, step) == 0


@pytest.mark.parametrize("step", ALL)
def test_slow_call_completes(make: WorldFactory, step: str) -> None:
    world = make(faults={"faults": [fault(WRITE[step][0], "slow", seconds=5)]})
    before = world.clock.now()

    result = world.run(step, step_event(step))

    assert result["replayed"] is False
    assert (world.clock.now() - before).total_seconds() == 5
    assert applied(world, step) == 1


@pytest.mark.parametrize("step", KEYED)
def test_keyed_crash_then_takeover_finds_the_effect(make: WorldFactory, step: str) -> None:
    world = make(faults={"faults": [fault(WRITE[step][0], "crash_after_effect", attempt=1)]})

    with pytest.raises(SimulatedCrash):
        world.run(step, step_event(step))
    assert status(world, step) is Status.IN_PROGRESS
    assert applied(world, step) == 1

    world.clock.advance(61)  # the dead worker's lease expires
    result = world.run(step, step_event(step))

    assert result["replayed"] is False
    assert calls(world, step) == 1  # found by lookup: not sent again
    assert applied(world, step) == 1
    assert status(world, step) is Status.COMPLETED
    assert any(line.get("decision") == "found_downstream" for line in world.logs.lines())


def test_physical_crash_goes_to_reconciliation_by_reference(make: WorldFactory) -> None:
    world = make(faults={"faults": [fault("create_shipment", "crash_after_effect")]})

    with pytest.raises(SimulatedCrash):
        world.run("CreateShipment", step_event("CreateShipment"))
    world.clock.advance(61)
    with pytest.raises(OutcomeUnknownError):
        world.run("CreateShipment", step_event("CreateShipment"))
    assert status(world, "CreateShipment") is Status.UNKNOWN

    verdict = world.run("Reconcile", reconcile_event("CreateShipment"))
    result = world.run("CreateShipment", step_event("CreateShipment"))

    assert verdict["outcome"] == "applied"
    assert result["replayed"] is True
    assert result["result"]["shipment_id"] == world.effects("create_shipment")[0].resource_id
    assert calls(world, "CreateShipment") == 1
    assert applied(world, "CreateShipment") == 1


@pytest.mark.parametrize("step", ALL)
def test_a_failing_lookup_before_acting_releases_and_retries(make: WorldFactory, step: str) -> None:
    lookup = {
        "ReserveStock": "find_reservation",
        "RefundPayment": "find_refund_by_key",
        "CreateShipment": "find_shipment_by_reference",
    }[step]
    world = make(
        faults={
            "faults": [
                fault(WRITE[step][0], "throttle", attempt=1),
                fault(lookup, "throttle", attempt=1),
            ]
        }
    )
    with pytest.raises(TransientError):
        world.run(step, step_event(step))  # attempt 1: throttled write
    with pytest.raises(TransientError):
        world.run(step, step_event(step))  # attempt 2: the lookup before acting fails
    world.run(step, step_event(step))

    assert applied(world, step) == 1
    assert status(world, step) is Status.COMPLETED


@pytest.mark.parametrize("step", ALL)
def test_only_stepsaga_errors_leave_a_handler(make: WorldFactory, step: str) -> None:
    for kind in ("throttle", "timeout_before_effect", "lose_response", "reject"):
        world = make(faults={"faults": [fault(WRITE[step][0], kind)]})
        with pytest.raises(StepSagaError):
            world.run(step, step_event(step))


@pytest.mark.parametrize("step", KEYED)
def test_a_rejected_same_key_call_after_a_lost_reply_is_still_uncertain(
    make: WorldFactory, step: str
) -> None:
    """The first call applied the effect and its reply was lost; the call again with the same
    key is refused (a service that checks stock before the key would say so). The refusal
    says nothing about the first call: recording FAILED ("known not applied") would leave
    the effect standing while the saga compensates around it — a reservation nobody releases
    (found by the chaos harness). It is uncertain, and reconciliation finds the effect."""
    operation = WRITE[step][0]
    world = make(
        faults={"faults": [fault(operation, "lose_response", times=1), fault(operation, "reject")]}
    )

    with pytest.raises(OutcomeUnknownError):
        world.run(step, step_event(step))

    assert applied(world, step) == 1
    assert status(world, step) is Status.UNKNOWN
    verdict = world.run("Reconcile", reconcile_event(step))
    assert verdict["outcome"] == "applied"
    assert world.run(step, step_event(step))["replayed"] is True
    assert applied(world, step) == 1


@pytest.mark.parametrize("remaining_millis", [5_000, 300_000])
def test_a_crashed_invocations_lease_ends_at_its_deadline(
    make: WorldFactory, remaining_millis: int
) -> None:
    """The wrapper registers the Lambda context: the claim lasts exactly the time the
    invocation had left, so the next attempt waits no longer (and no shorter) than that."""
    world = make(faults={"faults": [fault("refund", "crash_after_effect", attempt=1)]})
    ctx = context("RefundPayment")
    ctx.remaining_millis = remaining_millis
    start = world.clock.now()

    with pytest.raises(SimulatedCrash):
        world.handlers["RefundPayment"](step_event("RefundPayment"), ctx)

    record = world.ledger.get(WRITE["RefundPayment"][1])
    assert record is not None
    assert record.status is Status.IN_PROGRESS
    assert record.lease_expires_at == start + timedelta(milliseconds=remaining_millis)
    world.clock.advance(remaining_millis / 1000 - 1)
    with pytest.raises(ActionInProgressError):
        world.run("RefundPayment", step_event("RefundPayment"))
    world.clock.advance(1)
    assert world.run("RefundPayment", step_event("RefundPayment"))["status"] == "COMPLETED"
    assert applied(world, "RefundPayment") == 1
