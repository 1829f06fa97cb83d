"""Downstream adapters: inventory, payments and shipping, over HTTP or simulated.

Read ``README.md`` in this folder for the wire contract, the fault semantics and the
effects table. Public API:
"""

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
