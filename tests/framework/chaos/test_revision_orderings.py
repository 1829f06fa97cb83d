"""Revisions supersede in any order: random deliveries of a case's revisions, interleaved
step by step, with kills (a process dying after the effect, before the ledger records it),
redrives and leases running out, never refund or ship twice.

Nothing here applies the start rule (an unordered queue, a replayed dead letter or a person
can start any revision at any time): only the ledger's own half stands between the runs
(``stepsaga.ledger._latest`` and the revision rule of ``stepsaga.ledger._revisions``). The
steps run through the real forward handlers over a SQLite ledger and the simulated
services, whose own effects table is what is counted.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from services.simulated.injector import SimulatedCrash
from stepsaga.errors import StepSagaError
from tests.framework.unit.handlers.helpers import (
    STEPS,
    action_fields,
    case_input,
    execution,
    fault,
    identity,
    make_world,
    params_of,
)

ORDER = list(STEPS)  # ReserveStock, RefundPayment, CreateShipment


@dataclass
class Run:
    """One execution of a revision: where it is, and whether it still moves."""

    revision: int
    position: int = 0
    alive: bool = True


def _event(case: dict[str, Any], step: str) -> dict[str, Any]:
    return {
        "kind": "step",
        **identity(case),
        **action_fields(step),
        "params": params_of(step, case),
        "execution": execution(step),
    }


def _case(revision: int, amount: str, city: str) -> dict[str, Any]:
    base = case_input()
    approval = {**base["approval"], "revision": revision}
    refund = {**base["refund"], "amount": amount}
    address = {**base["shipment"]["address"], "city": city}
    shipment = {**base["shipment"], "address": address}
    return case_input(approval=approval, refund=refund, shipment=shipment)


#: Each entry of a schedule: 0-6 a running execution takes its next step (which one: the
#: entry modulo how many run), 7-8 a failed one is redriven, 9 an hour passes (leases end).
WAIT, REDRIVE = 9, 7


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    deliveries=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    schedule=st.lists(st.integers(0, 9), min_size=3, max_size=40),
    amounts=st.lists(st.sampled_from(["20.00", "25.00"]), min_size=3, max_size=3),
    cities=st.lists(st.sampled_from(["Berlin", "Hamburg"]), min_size=3, max_size=3),
    kill_refund=st.booleans(),
    kill_shipment=st.booleans(),
)
# The reproduction: revision 2 runs to the end, then revision 1 arrives.
@example([2, 1], [0] * 6, ["20.00"] * 3, ["Berlin"] * 3, False, False)
@example([2, 1], [0] * 6, ["20.00", "25.00", "25.00"], ["Berlin"] * 3, False, False)
# Revision 1 dies after its refund left, revision 2 runs, revision 1 is redriven.
@example([1, 2], [0, 0, 1, 1, 1, REDRIVE, 0, 0], ["20.00"] * 3, ["Berlin"] * 3, True, False)
def test_no_ordering_refunds_or_ships_twice(
    deliveries: list[int],
    schedule: list[int],
    amounts: list[str],
    cities: list[str],
    kill_refund: bool,
    kill_shipment: bool,
) -> None:
    kills = [
        fault(operation, "crash_after_effect", attempt=1)
        for operation, killed in (("refund", kill_refund), ("create_shipment", kill_shipment))
        if killed
    ]
    with tempfile.TemporaryDirectory() as root:
        world = make_world(Path(root) / "home", faults={"faults": kills})
        cases = {r: _case(r, amounts[r - 1], cities[r - 1]) for r in (1, 2, 3)}
        runs = [Run(revision) for revision in deliveries]
        try:
            for entry in schedule:
                if entry == WAIT:
                    world.clock.advance(timedelta(hours=1))
                    continue
                moving = entry < REDRIVE
                pool = [run for run in runs if run.alive is moving and run.position < 3]
                if not pool:
                    continue
                run = pool[entry % len(pool)]
                if not moving:
                    run.alive = True  # a redrive goes on at the step that failed
                    continue
                step = ORDER[run.position]
                try:
                    world.run(step, _event(cases[run.revision], step))
                    run.position += 1
                except (StepSagaError, SimulatedCrash):
                    run.alive = False  # refused, superseded, uncertain or killed
            refunds = world.effects("refund", case_id="CASE-1001")
            shipments = world.effects("create_shipment", case_id="CASE-1001")
            assert len(refunds) <= 1, [e.action_key for e in refunds]
            assert len(shipments) <= 1, [e.action_key for e in shipments]
        finally:
            world.deps.close()
