"""Simulated downstream services on SQLite (``$STEPSAGA_HOME/services.sqlite3``), with faults."""

from stepsaga.services.simulated.control import Simulation
from stepsaga.services.simulated.db import ServicesDb
from stepsaga.services.simulated.effects import Effect
from stepsaga.services.simulated.injector import (
    CrashAction,
    CrashSite,
    FaultInjector,
    SimulatedCrash,
    Sleeper,
    kill_process,
    raise_simulated_crash,
)
from stepsaga.services.simulated.inventory import DEFAULT_STOCK, SimulatedInventory
from stepsaga.services.simulated.payments import KEY_WINDOW, SimulatedPayments
from stepsaga.services.simulated.shipping import SimulatedShipping

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
