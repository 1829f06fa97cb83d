"""Shared fixtures: a private state home, a manual clock, requests for one case."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from services import (
    Faults,
    RefundRequest,
    ReserveRequest,
    Services,
    ShipmentLine,
    ShipmentRequest,
    ShippingAddress,
    Simulation,
    open_simulated_services,
    open_simulation,
    parse_faults,
    raise_simulated_crash,
)
from stepsaga import CallContext
from stepsaga._model.money import Money
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock

TENANT = "acme"
CASE = "CASE-1001"


def ctx_for(operation: str, case_id: str = CASE, tenant_id: str = TENANT) -> CallContext:
    return CallContext(tenant_id, case_id, f"{tenant_id}:{case_id}:r1:{operation}")


def reserve_request(case_id: str = CASE, quantity: int = 1) -> ReserveRequest:
    return ReserveRequest(f"{TENANT}:{case_id}:r1:reserve", "SKU-RED-MUG", quantity, "eu-west")


def refund_request(key: str | None = None, amount: Money | None = None) -> RefundRequest:
    return RefundRequest(
        "PAY-991", amount or Money(2000, "USD"), key or f"{TENANT}:{CASE}:r1:refund"
    )


ADDRESS = ShippingAddress("A. Buyer", "1 Main St", "Berlin", "10115", "DE")


def shipment_request(reference: str = f"{TENANT}:{CASE}:r1:ship") -> ShipmentRequest:
    return ShipmentRequest(reference, ADDRESS, (ShipmentLine("SKU-RED-MUG", 1),))


def faults(*rules: dict[str, object]) -> Faults:
    return parse_faults({"faults": list(rules)})


@pytest.fixture
def home(tmp_path: Path) -> StateHome:
    return StateHome(tmp_path / "home")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sleeps() -> list[float]:
    return []


OpenServices = Callable[..., Services]


@pytest.fixture
def open_services(home: StateHome, clock: ManualClock, sleeps: list[float]) -> OpenServices:
    """Open simulated services on the shared home; crashes raise ``SimulatedCrash``."""

    def _open(faults: Faults | None = None, **options: object) -> Services:
        settings: dict[str, object] = {
            "clock": clock,
            "sleeper": sleeps.append,
            "crash": raise_simulated_crash,
        }
        settings.update(options)
        return open_simulated_services(home, faults, **settings)  # type: ignore[arg-type]

    return _open


@pytest.fixture
def services(open_services: OpenServices) -> Services:
    return open_services()


@pytest.fixture
def simulation(home: StateHome, clock: ManualClock) -> Simulation:
    return open_simulation(home, clock=clock)
