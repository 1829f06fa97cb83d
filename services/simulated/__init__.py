"""Simulated downstream services on SQLite (``$STEPSAGA_HOME/services.sqlite3``), with faults."""

from services.simulated.control import Simulation
from services.simulated.db import ServicesDb
from services.simulated.effects import Effect
from services.simulated.injector import (
    CrashAction,
    CrashSite,
    FaultInjector,
    SimulatedCrash,
    Sleeper,
    kill_process,
    raise_simulated_crash,
)
from services.simulated.inventory import DEFAULT_STOCK, SimulatedInventory
from services.simulated.payments import KEY_WINDOW, SimulatedPayments
from services.simulated.shipping import SimulatedShipping

__all__ = [
    "DEFAULT_STOCK",
    "KEY_WINDOW",
    "CrashAction",
    "CrashSite",
    "Effect",
    "FaultInjector",
    "ServicesDb",
    "SimulatedCrash",
    "SimulatedInventory",
    "SimulatedPayments",
    "SimulatedShipping",
    "Simulation",
    "Sleeper",
    "kill_process",
    "raise_simulated_crash",
]
