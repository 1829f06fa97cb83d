"""Downstream adapters: inventory, payments and shipping, over HTTP or simulated.

Read ``README.md`` in this folder for the wire contract, the fault semantics and the
effects table. Public API:
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from services.factory import open_http_services, open_simulated_services, open_simulation
    from services.faults import FaultKind, FaultRule, Faults, load_faults, parse_faults
    from services.http import HttpServicesConfig, HttpTimeouts
    from services.protocols import (
        InventoryService,
        PaymentsService,
        Services,
        ShippingService,
    )
    from services.simulated import (
        CrashSite,
        Effect,
        SimulatedCrash,
        Simulation,
        kill_process,
        raise_simulated_crash,
    )
    from services.values import (
        Operation,
        RefundRecord,
        RefundRequest,
        Reservation,
        ReservationStatus,
        ReserveRequest,
        Service,
        ShipmentLine,
        ShipmentRecord,
        ShipmentRequest,
        ShippingAddress,
    )

# Names load on first use: the HTTP clients (httpx) only when HTTP is used.
_WHERE = {
    "open_http_services": "services.factory",
    "open_simulated_services": "services.factory",
    "open_simulation": "services.factory",
    "FaultKind": "services.faults",
    "FaultRule": "services.faults",
    "Faults": "services.faults",
    "load_faults": "services.faults",
    "parse_faults": "services.faults",
    "HttpServicesConfig": "services.http",
    "HttpTimeouts": "services.http",
    "InventoryService": "services.protocols",
    "PaymentsService": "services.protocols",
    "Services": "services.protocols",
    "ShippingService": "services.protocols",
    "CrashSite": "services.simulated",
    "Effect": "services.simulated",
    "SimulatedCrash": "services.simulated",
    "Simulation": "services.simulated",
    "kill_process": "services.simulated",
    "raise_simulated_crash": "services.simulated",
    "Operation": "services.values",
    "RefundRecord": "services.values",
    "RefundRequest": "services.values",
    "Reservation": "services.values",
    "ReservationStatus": "services.values",
    "ReserveRequest": "services.values",
    "Service": "services.values",
    "ShipmentLine": "services.values",
    "ShipmentRecord": "services.values",
    "ShipmentRequest": "services.values",
    "ShippingAddress": "services.values",
}

__all__ = [
    "CrashSite",
    "Effect",
    "FaultKind",
    "FaultRule",
    "Faults",
    "HttpServicesConfig",
    "HttpTimeouts",
    "InventoryService",
    "Operation",
    "PaymentsService",
    "RefundRecord",
    "RefundRequest",
    "Reservation",
    "ReservationStatus",
    "ReserveRequest",
    "Service",
    "Services",
    "ShipmentLine",
    "ShipmentRecord",
    "ShipmentRequest",
    "ShippingAddress",
    "ShippingService",
    "SimulatedCrash",
    "Simulation",
    "kill_process",
    "load_faults",
    "open_http_services",
    "open_simulated_services",
    "open_simulation",
    "parse_faults",
    "raise_simulated_crash",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
