"""The reference app's handlers over its simulated services, in this process: what the
handler tests and the chaos harness run (stepsaga's in-process handler runtime is private;
this harness, like the tests, may use it)."""

from __future__ import annotations

import time
from typing import Any

from services.dependencies import ReferenceDependencies
from services.faults import Faults
from services.simulated import CrashAction, Sleeper, kill_process
from stepsaga import Clock, LocalContext, StateHome, SystemClock
from stepsaga._handlers import HandlerDeps, local_deps


def simulated_deps(
    home: StateHome,
    *,
    clock: Clock | None = None,
    faults: Faults | None = None,
    crash: CrashAction = kill_process,
    sleeper: Sleeper = time.sleep,
    **options: Any,
) -> HandlerDeps:
    """``HandlerDeps`` over the simulated services under ``home`` (tests, the chaos
    harness): ``options`` are ``stepsaga._handlers.local_deps``'s."""
    clock = clock or SystemClock()
    clients = ReferenceDependencies(faults=faults, crash=crash).local(
        LocalContext(home=home.ensure(), clock=clock, sleep=sleeper)
    )
    return local_deps(home, clients, clock=clock, **options)
