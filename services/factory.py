"""Opening the services a saga talks to: simulated (embedded backend) or HTTP (real)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from services.faults import Faults
from services.protocols import Services
from services.simulated import (
    DEFAULT_STOCK,
    CrashAction,
    FaultInjector,
    ServicesDb,
    SimulatedInventory,
    SimulatedPayments,
    SimulatedShipping,
    Simulation,
    Sleeper,
    kill_process,
)
from stepsaga import Clock, StateHome, SystemClock

if TYPE_CHECKING:  # httpx costs ~40 ms to import: only the HTTP clients pay for it
    import httpx

    from services.http import HttpServicesConfig


def open_simulated_services(
    home: StateHome,
    faults: Faults | None = None,
    *,
    clock: Clock | None = None,
    sleeper: Sleeper = time.sleep,
    crash: CrashAction = kill_process,
    default_stock: int = DEFAULT_STOCK,
) -> Services:
    """Services backed by ``home.services_path``.

    ``faults`` apply to every tenant and case served by this bundle, on top of the faults
    attached to each case (``open_simulation(home).attach_faults``), which apply in every
    process. ``crash`` runs on ``crash_after_effect``: by default SIGKILL of this process;
    in-process tests pass ``raise_simulated_crash``.
    """
    db = ServicesDb(home.ensure().services_path)
    clock = clock or SystemClock()
    injector = FaultInjector(db, faults, sleeper=sleeper, crash=crash)
    return Services(
        inventory=SimulatedInventory(db, injector, clock, default_stock=default_stock),
        payments=SimulatedPayments(db, injector, clock),
        shipping=SimulatedShipping(db, injector, clock),
    )


def open_simulation(home: StateHome, *, clock: Clock | None = None) -> Simulation:
    """The control side of the simulated services: attach faults, read effects, set stock."""
    return Simulation(ServicesDb(home.ensure().services_path), clock or SystemClock())


def open_http_services(
    config: HttpServicesConfig,
    *,
    transport: httpx.BaseTransport | None = None,
    auth: Mapping[str, httpx.Auth] | None = None,
) -> Services:
    """Services over HTTP; close the bundle (or use it as a context manager) when done.
    ``auth``: per service (``inventory``, ``payments``, ``shipping``), how its requests are
    authorized (a SigV4 signer for a service behind IAM); the others go unsigned."""
    from services.http import HttpInventory, HttpPayments, HttpShipping

    auth = auth or {}
    options: dict[str, Any] = {"transport": transport}
    return Services(
        inventory=HttpInventory(
            config.inventory_url, config.timeouts, auth=auth.get("inventory"), **options
        ),
        payments=HttpPayments(
            config.payments_url, config.timeouts, auth=auth.get("payments"), **options
        ),
        shipping=HttpShipping(
            config.shipping_url, config.timeouts, auth=auth.get("shipping"), **options
        ),
    )
