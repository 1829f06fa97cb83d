"""A saga's parallel group and per-item step meet the partial effects AWS produces: on the
embedded backend, with the real handlers, ledger and simulated services, each seed of the
engine's :class:`SeededScheduler` is one interleaving of the branches (iterations). Across
seeds a sibling's effect lands before the rejection and after it; either way it is undone,
once, and nothing else is."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

from services import Operation, open_simulation, parse_faults
from services.dependencies import ReferenceDependencies
from stepsaga import Compensate, EffectClass, Escalate, Parallel, Project, Saga, Step
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.backends._local import LocalBackend
from stepsaga.backends._views import CaseOutcome
from stepsaga.testing import SeededScheduler
from tests.framework.unit.engine.helpers import state_of
from tests.framework.unit.handlers.helpers import NOW
from workflows import multi_warehouse
from workflows.case import Case, load_case

EXAMPLES = Path(__file__).parents[3] / "examples"
SEEDS = range(10)

#: Reserve and ship at once; a rejected shipment releases the reservation its sibling made.
RESERVE_AND_SHIP = Saga(
    name="reserve-and-ship",
    comment="Reserve stock and ship the replacement at once.",
    input_model=Case,
    steps=[
        Parallel(
            "ReserveAndShip",
            branches=[
                [
                    Step(
                        "ReserveStock",
                        operation="reserve_stock",
                        effect=EffectClass.KEYED_WRITE,
                        params="reserve",
                        on_later_failure=Compensate(
                            "ReleaseReservation",
                            operation="release_reservation",
                            effect=EffectClass.KEYED_WRITE,
                        ),
                    )
                ],
                [
                    Step(
                        "CreateShipment",
                        operation="create_shipment",
                        effect=EffectClass.PHYSICAL,
                        params="shipment",
                        on_later_failure=Escalate("replacement shipped, case not completed"),
                    )
                ],
            ],
        )
    ],
)


def run(
    tmp_path: Path, saga: Saga, case: Any, faults: dict[str, Any], seed: int
) -> tuple[Any, list[dict[str, Any]], Counter[str]]:
    home = StateHome(tmp_path / f"seed-{seed}")
    clock = ManualClock(NOW)
    project = Project.of(saga, dependencies=ReferenceDependencies())
    with LocalBackend(home, project, clock=clock, scheduler=SeededScheduler(seed)) as backend:
        done = backend.start(case, faults=parse_faults(faults), time_scale=0)
        events = list(backend.history(case.case_id)["events"])
    effects = open_simulation(home, clock=clock).effects(case_id=case.case_id)
    return done, events, Counter(f"{e.operation}:{e.reference}" for e in effects)


def position(events: list[dict[str, Any]], state: str, event_type: str) -> list[int]:
    """The ids of ``state``'s events of ``event_type``, in order."""
    names = state_of(events)
    return [e["id"] for e in events if e["type"] == event_type and names.get(e["id"]) == state]


def undone_once(effects: Counter[str], reserved: int) -> None:
    """Each reservation made was released once, naming it; no other effect happened."""
    made = {key.split(":", 1)[1] for key in effects if key.startswith("reserve:")}
    assert len(made) == reserved
    assert effects == Counter(
        {f"{kind}:{ref}": 1 for ref in made for kind in ("reserve", "release")}
    )


def test_a_parallel_siblings_reservation_is_released_whenever_it_happened(
    tmp_path: Path,
) -> None:
    case = load_case(EXAMPLES / "case-clean.json")
    faults = {
        "faults": [{"service": "shipping", "operation": "create_shipment", "fault": "reject"}]
    }
    orders: Counter[str] = Counter()
    for seed in SEEDS:
        done, events, effects = run(tmp_path, RESERVE_AND_SHIP, case, faults, seed)
        assert (done.status, done.outcome) == ("FAILED", CaseOutcome.COMPENSATED), seed
        [reserved] = position(events, "ReserveStock", "TaskSucceeded")
        [rejected] = position(events, "CreateShipment", "TaskFailed")
        orders["reserved first" if reserved < rejected else "rejected first"] += 1
        undone_once(effects, reserved=1)
        [released] = position(events, "ReleaseReservation", "TaskSucceeded")
        assert released > max(reserved, rejected)
    assert orders["reserved first"] > 0, orders
    assert orders["rejected first"] > 0, orders


def test_per_item_siblings_reservations_are_released_whenever_they_happened(
    tmp_path: Path,
) -> None:
    """Two lines at a time (the saga's ``max_concurrency``); line L2 is refused."""
    case = multi_warehouse.load_case(EXAMPLES / "case-multi-warehouse.json")
    faults = {
        "faults": [
            {"service": "inventory", "operation": "reserve", "item": "L2", "fault": "reject"}
        ]
    }
    before: Counter[int] = Counter()
    for seed in SEEDS:
        done, events, effects = run(tmp_path, multi_warehouse.saga, case, faults, seed)
        assert (done.status, done.outcome) == ("FAILED", CaseOutcome.COMPENSATED), seed
        [rejected] = position(events, "ReserveLine", "TaskFailed")
        reserved = position(events, "ReserveLine", "TaskSucceeded")
        before[sum(r < rejected for r in reserved)] += 1
        undone_once(effects, reserved=2)  # L1 and L3
        released = position(events, "ReleaseLine", "TaskSucceeded")
        assert len(released) == 2
        assert min(released) > max(reserved)
    assert before[0] > 0, before  # no sibling had reserved when L2 was refused
    assert before[1] + before[2] > 0, before  # one or both had


def test_a_reservation_whose_task_was_aborted_is_replayed_on_redrive_and_released(
    tmp_path: Path,
) -> None:
    """The shipment fails the whole group once (no retry, nothing catches a throttle): AWS
    stops the reservation branch, whose function may already have run — its effect made,
    its result discarded (``TaskStateAborted``). The redrive re-runs that branch: the ledger
    replays the recorded reservation instead of reserving again; then the shipment is
    rejected and the one reservation is released once."""
    no_retry = Step(
        "CreateShipment",
        operation="create_shipment",
        effect=EffectClass.PHYSICAL,
        params="shipment",
        on_later_failure=Escalate("replacement shipped, case not completed"),
        retry=(),
    )
    group = RESERVE_AND_SHIP.steps[0]
    assert isinstance(group, Parallel)
    saga = dataclasses.replace(
        RESERVE_AND_SHIP,
        steps=[dataclasses.replace(group, branches=[group.branches[0], [no_retry]])],
    )
    case = load_case(EXAMPLES / "case-clean.json")
    faults = parse_faults(
        {
            "faults": [
                {
                    "service": "shipping",
                    "operation": "create_shipment",
                    "fault": "throttle",
                    "times": 1,
                },
                {"service": "shipping", "operation": "create_shipment", "fault": "reject"},
            ]
        }
    )
    seen: Counter[str] = Counter()
    for seed in SEEDS:
        home = StateHome(tmp_path / f"redrive-{seed}")
        clock = ManualClock(NOW)
        project = Project.of(saga, dependencies=ReferenceDependencies())
        simulation = open_simulation(home, clock=clock)
        with LocalBackend(home, project, clock=clock, scheduler=SeededScheduler(seed)) as backend:
            failed = backend.start(case, faults=faults, time_scale=0)
            assert (failed.status, failed.error) == ("FAILED", "TransientError"), seed
            first = list(backend.history(case.case_id)["events"])
            reserved_then = simulation.calls("acme", case.case_id, Operation.RESERVE)
            aborted = position(first, "ReserveStock", "TaskStateAborted")
            if aborted and reserved_then:
                seen["function ran, task aborted"] += 1
            elif aborted:
                seen["stopped before its function ran"] += 1
            else:
                seen["reservation completed"] += 1
            done = backend.redrive(case.case_id, time_scale=0)
        assert (done.status, done.outcome) == ("FAILED", CaseOutcome.COMPENSATED), seed
        assert simulation.calls("acme", case.case_id, Operation.RESERVE) == 1, seed
        undone_once(
            Counter(
                f"{e.operation}:{e.reference}" for e in simulation.effects(case_id=case.case_id)
            ),
            reserved=1,
        )
    assert seen["function ran, task aborted"] > 0, seen
