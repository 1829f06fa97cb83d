"""The simulated services behave like their real counterparts — including their hazards."""

from __future__ import annotations

from datetime import timedelta

import pytest

from services import (
    Operation,
    ReservationStatus,
    ReserveRequest,
    Services,
    ShipmentRequest,
    Simulation,
)
from services.simulated import KEY_WINDOW
from stepsaga._model.money import Money
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.errors import ActionConflictError, BusinessRejectedError, NotFoundError
from tests.app.services.conftest import (
    ADDRESS,
    CASE,
    TENANT,
    OpenServices,
    ctx_for,
    refund_request,
    reserve_request,
    shipment_request,
)


def operations(simulation: Simulation, case_id: str = CASE) -> list[str]:
    return [str(effect.operation) for effect in simulation.effects(case_id=case_id)]


# --- inventory ----------------------------------------------------------------------------


def test_reserve_takes_stock_once_per_reservation_id(
    services: Services, simulation: Simulation
) -> None:
    simulation.set_stock(TENANT, "SKU-RED-MUG", "eu-west", 5)
    first = services.inventory.reserve(ctx_for("reserve"), reserve_request(quantity=2))
    again = services.inventory.reserve(ctx_for("reserve"), reserve_request(quantity=2))
    assert first == again
    assert first.status is ReservationStatus.RESERVED
    assert simulation.stock(TENANT, "SKU-RED-MUG", "eu-west") == 3
    assert operations(simulation) == ["reserve"]
    (effect,) = simulation.effects()
    assert (effect.reference, effect.sku, effect.quantity) == (
        first.reservation_id,
        "SKU-RED-MUG",
        2,
    )


def test_unseen_stock_starts_at_the_default(
    open_services: OpenServices, simulation: Simulation
) -> None:
    services = open_services(default_stock=3)
    services.inventory.reserve(ctx_for("reserve"), reserve_request(quantity=1))
    assert simulation.stock(TENANT, "SKU-RED-MUG", "eu-west") == 2


def test_reserve_with_other_parameters_is_a_conflict(
    services: Services, simulation: Simulation
) -> None:
    services.inventory.reserve(ctx_for("reserve"), reserve_request(quantity=1))
    with pytest.raises(ActionConflictError):
        services.inventory.reserve(ctx_for("reserve"), reserve_request(quantity=2))
    assert operations(simulation) == ["reserve"]


def test_insufficient_stock_is_rejected_without_effect(
    services: Services, simulation: Simulation
) -> None:
    simulation.set_stock(TENANT, "SKU-RED-MUG", "eu-west", 1)
    with pytest.raises(BusinessRejectedError, match="insufficient stock") as caught:
        services.inventory.reserve(ctx_for("reserve"), reserve_request(quantity=2))
    assert caught.value.data["code"] == "insufficient_stock"
    assert simulation.stock(TENANT, "SKU-RED-MUG", "eu-west") == 1
    assert simulation.effects() == []


def test_zero_quantity_is_rejected(services: Services) -> None:
    with pytest.raises(BusinessRejectedError):
        services.inventory.reserve(ctx_for("reserve"), reserve_request(quantity=0))


def test_release_is_idempotent_and_returns_stock_once(
    services: Services, simulation: Simulation
) -> None:
    simulation.set_stock(TENANT, "SKU-RED-MUG", "eu-west", 5)
    reservation = services.inventory.reserve(ctx_for("reserve"), reserve_request(quantity=2))
    ctx = ctx_for("reserve:compensate:release")
    results = [services.inventory.release(ctx, reservation.reservation_id) for _ in range(3)]
    assert {r.status for r in results} == {ReservationStatus.RELEASED}
    assert simulation.stock(TENANT, "SKU-RED-MUG", "eu-west") == 5
    assert operations(simulation) == ["reserve", "release"]


def test_reserving_a_released_id_again_does_not_reserve_again(
    services: Services, simulation: Simulation
) -> None:
    """A late duplicate of the reserve (after compensation) must not take stock back."""
    reservation = services.inventory.reserve(ctx_for("reserve"), reserve_request())
    services.inventory.release(ctx_for("release"), reservation.reservation_id)
    late = services.inventory.reserve(ctx_for("reserve"), reserve_request())
    assert late.status is ReservationStatus.RELEASED
    assert operations(simulation) == ["reserve", "release"]


def test_releasing_an_unknown_reservation_is_not_found(services: Services) -> None:
    with pytest.raises(NotFoundError):
        services.inventory.release(ctx_for("release"), "never-reserved")


def test_find_reservation(services: Services) -> None:
    ctx = ctx_for("reserve")
    assert services.inventory.find_reservation(ctx, reserve_request().reservation_id) is None
    reservation = services.inventory.reserve(ctx, reserve_request())
    assert services.inventory.find_reservation(ctx, reservation.reservation_id) == reservation


def test_reservation_ids_and_stock_are_per_tenant(
    services: Services, simulation: Simulation
) -> None:
    request = ReserveRequest("R-1", "SKU-RED-MUG", 1, "eu-west")
    mine = services.inventory.reserve(ctx_for("reserve", tenant_id="acme"), request)
    theirs = services.inventory.reserve(ctx_for("reserve", tenant_id="globex"), request)
    assert mine.reservation_id == theirs.reservation_id
    assert len(simulation.effects()) == 2
    assert services.inventory.find_reservation(ctx_for("x", tenant_id="initech"), "R-1") is None


# --- payments -----------------------------------------------------------------------------


def test_same_key_within_24h_replays_the_first_refund(
    services: Services, simulation: Simulation, clock: ManualClock
) -> None:
    first = services.payments.refund(ctx_for("refund"), refund_request())
    clock.advance(KEY_WINDOW - timedelta(seconds=1))
    again = services.payments.refund(ctx_for("refund"), refund_request())
    assert again == first
    assert operations(simulation) == ["refund"]


def test_same_key_after_24h_refunds_again(
    services: Services, simulation: Simulation, clock: ManualClock
) -> None:
    """Stripe forgets keys after 24 hours: a late blind retry refunds twice. The ledger's
    replay window has to cover this, which is why the simulation models it."""
    first = services.payments.refund(ctx_for("refund"), refund_request())
    clock.advance(KEY_WINDOW)
    second = services.payments.refund(ctx_for("refund"), refund_request())
    assert second.refund_id != first.refund_id
    assert operations(simulation) == ["refund", "refund"]
    found = services.payments.find_refund_by_key(ctx_for("refund"), first.idempotency_key)
    assert found == second  # the newest refund under the key


def test_same_key_other_amount_is_a_conflict(services: Services, simulation: Simulation) -> None:
    services.payments.refund(ctx_for("refund"), refund_request())
    with pytest.raises(ActionConflictError) as caught:
        services.payments.refund(ctx_for("refund"), refund_request(amount=Money(2100, "USD")))
    assert caught.value.data["key"] == refund_request().idempotency_key
    assert operations(simulation) == ["refund"]


def test_two_refunds_with_different_keys_both_happen(
    services: Services, simulation: Simulation
) -> None:
    """Seed 002 (docs/explanation/background.md): two separately approved 20 USD refunds on
    different
    orders both happen."""
    a = services.payments.refund(ctx_for("refund"), refund_request(key="acme:CASE-1:r1:refund"))
    b = services.payments.refund(ctx_for("refund"), refund_request(key="acme:CASE-2:r1:refund"))
    assert a.refund_id != b.refund_id
    assert operations(simulation) == ["refund", "refund"]


def test_find_refund_by_key(services: Services, clock: ManualClock) -> None:
    ctx = ctx_for("refund")
    key = refund_request().idempotency_key
    assert services.payments.find_refund_by_key(ctx, key) is None
    refund = services.payments.refund(ctx, refund_request())
    clock.advance(timedelta(days=30))  # searchable long after deduplication stopped
    assert services.payments.find_refund_by_key(ctx, key) == refund
    assert services.payments.find_refund_by_key(ctx_for("refund", tenant_id="globex"), key) is None


def test_non_positive_refund_is_rejected(services: Services, simulation: Simulation) -> None:
    with pytest.raises(BusinessRejectedError):
        services.payments.refund(ctx_for("refund"), refund_request(amount=Money(0, "USD")))
    assert simulation.effects() == []


def test_refund_effect_row_carries_the_money(services: Services, simulation: Simulation) -> None:
    refund = services.payments.refund(ctx_for("refund"), refund_request())
    (effect,) = simulation.effects()
    assert effect.to_json() | {"at": None} == {
        "id": 1,
        "service": "payments",
        "operation": "refund",
        "tenant_id": TENANT,
        "case_id": CASE,
        "reference": refund.idempotency_key,
        "resource_id": refund.refund_id,
        "action_key": "acme:CASE-1001:r1:refund",
        "call_number": 1,
        "at": None,
        "payment_id": "PAY-991",
        "amount_minor": 2000,
        "currency": "USD",
        "sku": None,
        "warehouse": None,
        "quantity": None,
    }


# --- shipping -----------------------------------------------------------------------------


def test_a_blind_repeat_ships_twice(services: Services, simulation: Simulation) -> None:
    first = services.shipping.create_shipment(ctx_for("ship"), shipment_request())
    second = services.shipping.create_shipment(ctx_for("ship"), shipment_request())
    assert first.shipment_id != second.shipment_id
    assert operations(simulation) == ["create_shipment", "create_shipment"]
    found = services.shipping.find_shipment_by_reference(ctx_for("ship"), first.reference)
    assert found == first


def test_find_shipment_by_reference_absent(services: Services) -> None:
    assert services.shipping.find_shipment_by_reference(ctx_for("ship"), "nope") is None


def test_a_shipment_without_items_is_rejected(services: Services, simulation: Simulation) -> None:
    with pytest.raises(BusinessRejectedError):
        services.shipping.create_shipment(ctx_for("ship"), ShipmentRequest("R", ADDRESS, ()))
    assert simulation.effects() == []


def test_no_personal_data_is_kept_or_shown(services: Services, home: StateHome) -> None:
    services.shipping.create_shipment(ctx_for("ship"), shipment_request())
    assert "Buyer" not in repr(ADDRESS)
    assert "Main St" not in repr(shipment_request())
    files = home.root.glob("services.sqlite3*")  # the database and its WAL
    raw = b"".join(path.read_bytes() for path in files)
    assert b"SKU-RED-MUG" in raw
    assert b"A. Buyer" not in raw
    assert b"1 Main St" not in raw


def test_effects_filter_by_tenant_and_case(services: Services, simulation: Simulation) -> None:
    services.payments.refund(ctx_for("refund", case_id="C-1"), refund_request(key="k1"))
    services.payments.refund(ctx_for("refund", case_id="C-2"), refund_request(key="k2"))
    services.payments.refund(
        ctx_for("refund", case_id="C-1", tenant_id="globex"), refund_request(key="k1")
    )
    assert len(simulation.effects()) == 3
    assert [e.reference for e in simulation.effects(case_id="C-1")] == ["k1", "k1"]
    assert [e.tenant_id for e in simulation.effects(tenant_id="globex")] == ["globex"]
    assert len(simulation.effects(tenant_id="acme", case_id="C-1")) == 1


def test_call_counts_and_reset(services: Services, simulation: Simulation) -> None:
    services.payments.refund(ctx_for("refund"), refund_request())
    services.payments.refund(ctx_for("refund"), refund_request())
    assert simulation.calls(TENANT, CASE, Operation.REFUND) == 2
    simulation.reset()
    assert simulation.calls(TENANT, CASE, Operation.REFUND) == 0
    assert simulation.effects() == []
