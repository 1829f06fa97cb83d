"""Faults fire as the faults file says, map to what a real client would see, and are counted
in SQLite so they mean the same thing after a restart or a redrive."""

from __future__ import annotations

import pytest

from services import (
    Operation,
    Services,
    SimulatedCrash,
    Simulation,
)
from stepsaga._project.home import StateHome
from stepsaga.errors import (
    BusinessRejectedError,
    OutcomeUnknownError,
    TransientError,
)
from tests.app.services.conftest import (
    CASE,
    TENANT,
    OpenServices,
    ctx_for,
    faults,
    refund_request,
    reserve_request,
    shipment_request,
)

REFUND = {"service": "payments", "operation": "refund"}
SHIP = {"service": "shipping", "operation": "create_shipment"}


def refund(services: Services, case_id: str = CASE) -> object:
    return services.payments.refund(
        ctx_for("refund", case_id=case_id), refund_request(key=f"acme:{case_id}:r1:refund")
    )


def refund_count(simulation: Simulation, case_id: str | None = None) -> int:
    return sum(1 for e in simulation.effects(case_id=case_id) if e.operation is Operation.REFUND)


# --- each kind ----------------------------------------------------------------------------


def test_throttle_is_transient_and_applies_nothing(
    open_services: OpenServices, simulation: Simulation
) -> None:
    services = open_services(faults({**REFUND, "fault": "throttle", "times": 1}))
    with pytest.raises(TransientError) as caught:
        refund(services)
    assert caught.value.data["fault"] == "throttle"
    assert refund_count(simulation) == 0
    refund(services)  # the fault used its one fire
    assert refund_count(simulation) == 1


def test_timeout_before_effect_is_uncertain_although_nothing_applied(
    open_services: OpenServices, simulation: Simulation
) -> None:
    services = open_services(faults({**SHIP, "fault": "timeout_before_effect", "attempt": 1}))
    with pytest.raises(OutcomeUnknownError):
        services.shipping.create_shipment(ctx_for("ship"), shipment_request())
    assert simulation.effects() == []
    reference = shipment_request().reference
    # ... and reconciliation can prove the absence by reference:
    assert services.shipping.find_shipment_by_reference(ctx_for("ship"), reference) is None


def test_lose_response_applies_the_effect_then_is_uncertain(
    open_services: OpenServices, simulation: Simulation
) -> None:
    services = open_services(faults({**REFUND, "fault": "lose_response", "attempt": 1}))
    with pytest.raises(OutcomeUnknownError):
        refund(services)
    assert refund_count(simulation) == 1
    found = services.payments.find_refund_by_key(
        ctx_for("refund"), refund_request().idempotency_key
    )
    assert found is not None
    # a keyed retry replays the same refund: still one effect
    assert refund(services) == found
    assert refund_count(simulation) == 1


def test_lose_response_on_a_blind_write_then_retry_ships_twice(
    open_services: OpenServices, simulation: Simulation
) -> None:
    """What the ledger must prevent: retrying a physical effect after an uncertain outcome."""
    services = open_services(faults({**SHIP, "fault": "lose_response", "attempt": 1}))
    with pytest.raises(OutcomeUnknownError):
        services.shipping.create_shipment(ctx_for("ship"), shipment_request())
    services.shipping.create_shipment(ctx_for("ship"), shipment_request())
    assert [e.operation for e in simulation.effects()] == [Operation.CREATE_SHIPMENT] * 2


def test_reject_is_a_business_rejection_without_effect(
    open_services: OpenServices, simulation: Simulation
) -> None:
    services = open_services(faults({**SHIP, "fault": "reject"}))
    for _ in range(3):
        with pytest.raises(BusinessRejectedError):
            services.shipping.create_shipment(ctx_for("ship"), shipment_request())
    assert simulation.effects() == []


def test_slow_sleeps_through_the_injected_sleeper_then_proceeds(
    open_services: OpenServices, simulation: Simulation, sleeps: list[float]
) -> None:
    services = open_services(
        faults(
            {**REFUND, "fault": "slow", "seconds": 1.5},
            {**REFUND, "fault": "slow", "seconds": 0.5, "attempt": 1},
        )
    )
    refund(services)
    refund(services)
    assert sleeps == [2.0, 1.5]
    assert refund_count(simulation) == 1  # the second call was a keyed replay


def test_slow_combines_with_an_outcome_fault(
    open_services: OpenServices, simulation: Simulation, sleeps: list[float]
) -> None:
    services = open_services(
        faults({**REFUND, "fault": "slow", "seconds": 3}, {**REFUND, "fault": "lose_response"})
    )
    with pytest.raises(OutcomeUnknownError):
        refund(services)
    assert sleeps == [3.0]
    assert refund_count(simulation) == 1


def test_crash_after_effect_commits_the_effect_then_crashes(
    open_services: OpenServices, simulation: Simulation
) -> None:
    services = open_services(faults({**REFUND, "fault": "crash_after_effect", "attempt": 1}))
    with pytest.raises(SimulatedCrash) as caught:
        refund(services)
    assert not isinstance(caught.value, Exception)  # no `except Exception` can swallow it
    assert caught.value.site.operation is Operation.REFUND
    assert caught.value.site.call_number == 1
    assert refund_count(simulation) == 1
    refund(services)  # after "restart": a keyed retry replays
    assert refund_count(simulation) == 1


def test_a_crash_action_that_returns_still_stops_the_call(
    open_services: OpenServices, simulation: Simulation
) -> None:
    sites: list[object] = []
    services = open_services(faults({**REFUND, "fault": "crash_after_effect"}), crash=sites.append)
    with pytest.raises(SimulatedCrash):
        refund(services)
    assert len(sites) == 1
    assert refund_count(simulation) == 1


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("throttle", TransientError), ("timeout_before_effect", TransientError),
     ("lose_response", TransientError)],
)  # fmt: skip
def test_faults_on_lookups_are_transient(
    open_services: OpenServices, kind: str, expected: type[Exception]
) -> None:
    services = open_services(
        faults({"service": "payments", "operation": "find_refund_by_key", "fault": kind})
    )
    with pytest.raises(expected):
        services.payments.find_refund_by_key(ctx_for("refund"), "k")


def test_faults_on_inventory_reserve_and_release(
    open_services: OpenServices, simulation: Simulation
) -> None:
    services = open_services(
        faults(
            {"service": "inventory", "operation": "reserve", "fault": "lose_response",
             "attempt": 1},
            {"service": "inventory", "operation": "release", "fault": "timeout_before_effect",
             "attempt": 1},
        )
    )  # fmt: skip
    with pytest.raises(OutcomeUnknownError):
        services.inventory.reserve(ctx_for("reserve"), reserve_request())
    reservation_id = reserve_request().reservation_id
    with pytest.raises(OutcomeUnknownError):
        services.inventory.release(ctx_for("release"), reservation_id)
    assert [str(e.operation) for e in simulation.effects()] == ["reserve"]
    services.inventory.release(ctx_for("release"), reservation_id)
    services.inventory.release(ctx_for("release"), reservation_id)
    assert [str(e.operation) for e in simulation.effects()] == ["reserve", "release"]


# --- narrowing ----------------------------------------------------------------------------


def test_attempt_picks_the_nth_call_of_that_action(
    open_services: OpenServices, simulation: Simulation
) -> None:
    services = open_services(faults({**REFUND, "fault": "throttle", "attempt": 2}))
    refund(services)
    with pytest.raises(TransientError):
        refund(services)
    refund(services)
    assert simulation.calls(TENANT, CASE, Operation.REFUND) == 3


def test_attempt_counts_per_tenant_case_and_operation(
    open_services: OpenServices,
) -> None:
    services = open_services(faults({**REFUND, "fault": "reject", "attempt": 1}))
    for case_id in ("C-1", "C-2"):
        with pytest.raises(BusinessRejectedError):
            refund(services, case_id)
    globex = ctx_for("refund", case_id="C-1", tenant_id="globex")
    with pytest.raises(BusinessRejectedError):
        services.payments.refund(globex, refund_request())
    services.payments.find_refund_by_key(ctx_for("refund", case_id="C-3"), "k")  # other operation
    with pytest.raises(BusinessRejectedError):
        refund(services, "C-3")  # still its first refund call


def test_case_id_narrows_to_one_case(open_services: OpenServices, simulation: Simulation) -> None:
    services = open_services(faults({**REFUND, "fault": "reject", "case_id": "C-2"}))
    refund(services, "C-1")
    with pytest.raises(BusinessRejectedError):
        refund(services, "C-2")
    assert refund_count(simulation) == 1


def test_times_caps_fires_per_case(open_services: OpenServices, simulation: Simulation) -> None:
    services = open_services(faults({**REFUND, "fault": "throttle", "times": 2}))
    for case_id in ("C-1", "C-2"):
        for _ in range(2):
            with pytest.raises(TransientError):
                refund(services, case_id)
        refund(services, case_id)
    assert refund_count(simulation) == 2


def test_an_exhausted_rule_lets_the_next_one_fire(open_services: OpenServices) -> None:
    services = open_services(
        faults({**REFUND, "fault": "throttle", "times": 1}, {**REFUND, "fault": "reject"})
    )
    with pytest.raises(TransientError):
        refund(services)
    with pytest.raises(BusinessRejectedError):
        refund(services)


# --- persistence across processes ---------------------------------------------------------


def test_counts_survive_a_new_process(open_services: OpenServices, simulation: Simulation) -> None:
    rules = faults({**REFUND, "fault": "throttle", "times": 1}, {**REFUND, "fault": "lose_response",
                   "attempt": 2})  # fmt: skip
    with pytest.raises(TransientError):
        refund(open_services(rules))
    # "restart": a fresh bundle on the same home, same faults
    with pytest.raises(OutcomeUnknownError):
        refund(open_services(rules))
    refund(open_services(rules))
    assert simulation.calls(TENANT, CASE, Operation.REFUND) == 3
    assert refund_count(simulation) == 1


def test_attached_faults_apply_to_that_case_in_any_process(
    open_services: OpenServices, simulation: Simulation
) -> None:
    simulation.attach_faults(
        TENANT, "C-1", faults({**REFUND, "fault": "lose_response", "attempt": 1})
    )
    assert simulation.attached_faults(TENANT, "C-1") is not None
    assert simulation.attached_faults(TENANT, "C-2") is None
    services = open_services()  # no faults given to this process
    with pytest.raises(OutcomeUnknownError):
        refund(services, "C-1")
    refund(services, "C-2")
    assert refund_count(simulation) == 2


def test_attaching_again_does_not_reset_counts(
    open_services: OpenServices, simulation: Simulation
) -> None:
    once = faults({**REFUND, "fault": "throttle", "times": 1})
    simulation.attach_faults(TENANT, CASE, once)
    with pytest.raises(TransientError):
        refund(open_services())
    simulation.attach_faults(TENANT, CASE, once)  # e.g. `start` again, or a redrive
    refund(open_services())


def test_a_rule_attached_and_given_to_the_process_fires_as_one_rule(
    open_services: OpenServices, simulation: Simulation
) -> None:
    once = faults({**REFUND, "fault": "throttle", "times": 1})
    simulation.attach_faults(TENANT, CASE, once)
    services = open_services(once)
    with pytest.raises(TransientError):
        refund(services)
    refund(services)


def test_detach_faults(open_services: OpenServices, simulation: Simulation) -> None:
    simulation.attach_faults(TENANT, CASE, faults({**REFUND, "fault": "reject"}))
    simulation.detach_faults(TENANT, CASE)
    refund(open_services())


def test_the_effect_row_tells_which_call_applied_it(
    open_services: OpenServices, simulation: Simulation
) -> None:
    services = open_services(faults({**REFUND, "fault": "throttle", "times": 2}))
    for _ in range(2):
        with pytest.raises(TransientError):
            refund(services)
    refund(services)
    (effect,) = simulation.effects()
    assert effect.call_number == 3


def test_a_corrupt_store_is_transient(home: StateHome) -> None:
    from services import open_simulated_services

    home.ensure().services_path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(TransientError, match="simulated services store unavailable"):
        open_simulated_services(home)
