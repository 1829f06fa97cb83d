"""Branches and iterations start together and interleave; a seeded scheduler replays one
interleaving per seed, so a test can ask what a sibling had done when a branch failed."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from stepsaga.engine import LocalEngine
from stepsaga.errors import BusinessRejectedError
from stepsaga.testing import SeededScheduler
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import machine, state_of, task

SEEDS = range(24)


def events_of(engine: LocalEngine, arn: str) -> list[dict[str, Any]]:
    return list(engine.get_execution_history(arn)["events"])


class Effects:
    """Handlers that record each call (the side effect) and reject one function's calls."""

    def __init__(self, reject: str) -> None:
        self.calls: list[str] = []
        self.reject = reject

    def handler(self, name: str) -> Any:
        def call(event: Any, context: Any) -> Any:
            self.calls.append(name)
            if name == self.reject:
                raise BusinessRejectedError(f"{name} refused")
            return {"done": name}

        return call


PARALLEL = machine(
    {
        "Both": {
            "Type": "Parallel",
            "Branches": [
                machine({"Reserve": task("reserve")}),
                machine({"Ship": task("ship", Next="Notify"), "Notify": task("notify")}),
            ],
            "End": True,
        }
    }
)


def run_parallel(make_engine: MakeEngine, seed: int) -> tuple[list[dict[str, Any]], Effects]:
    effects = Effects(reject="reserve")
    registry = {name: effects.handler(name) for name in ("reserve", "ship", "notify")}
    engine = make_engine(registry, scheduler=SeededScheduler(seed))
    arn = engine.create_state_machine(f"fan{seed}", PARALLEL)
    done = engine.start_execution(arn, "e", {})
    assert (done["status"], done["error"]) == ("FAILED", "BusinessRejectedError")
    return events_of(engine, done["executionArn"]), effects


def test_a_seed_replays_the_same_interleaving(make_engine: MakeEngine) -> None:
    def trace(seed: int) -> list[tuple[str, str | None]]:
        events, _ = run_parallel(make_engine, seed)
        names = state_of(events)
        return [(e["type"], names.get(e["id"])) for e in events]

    for seed in (3, 11):
        assert trace(seed) == trace(seed)
    assert len({tuple(trace(seed)) for seed in SEEDS}) > 1  # seeds do interleave differently


def test_a_sibling_started_before_the_failure_runs_its_function_and_is_aborted(
    make_engine: MakeEngine,
) -> None:
    """AWS: a failing branch stops the others; a Lambda function already invoked runs to its
    end, its result discarded (``TaskStateAborted``); a state not yet entered never is."""
    outcomes: Counter[str] = Counter()
    for seed in SEEDS:
        events, effects = run_parallel(make_engine, seed)
        names = state_of(events)
        failed_at = next(e["id"] for e in events if e["type"] == "TaskFailed")
        ship_started = [
            e["id"] for e in events if e["type"] == "TaskStarted" and names[e["id"]] == "Ship"
        ]
        kinds = [e["type"] for e in events]
        assert kinds.count("ParallelStateFailed") == 1
        assert kinds[-2:] == ["ParallelStateFailed", "ExecutionFailed"]
        # every branch started with the state: both first states were entered before any
        # function ran
        first_task = kinds.index("TaskScheduled")
        entered_first = [
            names[e["id"]] for e in events[:first_task] if e["type"] == "TaskStateEntered"
        ]
        assert sorted(entered_first) == ["Reserve", "Ship"]
        assert ("ship" in effects.calls) == bool(ship_started)  # started ⇔ the function ran
        if not ship_started:
            outcomes["ship never started"] += 1
            assert "TaskStateAborted" in kinds  # stopped in Ship before scheduling it
        elif ship_started[0] < failed_at and "notify" not in effects.calls:
            shipped = [e for e in events if names.get(e["id"]) == "Ship" and "Task" in e["type"]]
            if any(e["type"] == "TaskSucceeded" for e in shipped):
                outcomes["ship finished before the failure"] += 1
            else:
                outcomes["ship running when the branch failed"] += 1
                assert shipped[-1]["type"] == "TaskStateAborted"
        else:
            outcomes["notify ran too"] += 1
        entered_after = [
            names[e["id"]]
            for e in events
            if e["id"] > failed_at and e["type"] == "TaskStateEntered"
        ]
        assert entered_after == []  # the failure stops the sibling before its next state
    assert outcomes["ship running when the branch failed"] > 0, outcomes
    assert outcomes["ship never started"] > 0, outcomes


@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_every_map_iteration_starts_at_once_and_the_rest_are_aborted(
    make_engine: MakeEngine, seed: int
) -> None:
    effects = Effects(reject="c")

    def work(event: Any, context: Any) -> Any:
        return effects.handler(event)(event, context)

    engine = make_engine({"work": work}, scheduler=SeededScheduler(seed))
    definition = machine(
        {"Each": {"Type": "Map", "ItemProcessor": machine({"W": task("work")}), "End": True}}
    )
    arn = engine.create_state_machine("each", definition)
    done = engine.start_execution(arn, "e", ["a", "b", "c", "d", "e"])
    assert done["error"] == "BusinessRejectedError"
    events = events_of(engine, done["executionArn"])
    kinds = [e["type"] for e in events]
    first_task = kinds.index("TaskScheduled")
    assert kinds[:first_task].count("MapIterationStarted") == 5  # MaxConcurrency unset
    ends = {
        e[f"{e['type'][0].lower()}{e['type'][1:]}EventDetails"]["index"]: e["type"]
        for e in events
        if e["type"] in ("MapIterationSucceeded", "MapIterationFailed", "MapIterationAborted")
    }
    assert ends[2] == "MapIterationFailed"
    assert set(ends) == {0, 1, 2, 3, 4}
    for index, item in enumerate("abcde"):
        if ends[index] == "MapIterationSucceeded":
            assert item in effects.calls
    assert kinds.count("MapStateFailed") == 1
    assert kinds[-2:] == ["MapStateFailed", "ExecutionFailed"]


@pytest.mark.parametrize("seed", range(6))
def test_nested_groups_and_queued_iterations_run_under_a_seed(
    make_engine: MakeEngine, seed: int
) -> None:
    """A Parallel that starts its branch (fans out before any checkpoint), inside a Map whose
    iterations queue behind MaxConcurrency: every seed finishes with the outputs in order."""
    calls: list[str] = []

    def work(event: Any, context: Any) -> Any:
        calls.append(str(event))
        return event

    engine = make_engine({"work": work}, scheduler=SeededScheduler(seed))
    inner = {
        "Type": "Parallel",
        "Branches": [
            machine({"Left": task("work", OutputPath="$.Payload")}),
            machine({"Right": task("work", OutputPath="$.Payload")}),
        ],
        "End": True,
    }
    definition = machine(
        {
            "Each": {
                "Type": "Map",
                "MaxConcurrency": 2,
                "ItemProcessor": machine({"Fork": inner}),
                "End": True,
            }
        }
    )
    done = engine.start_execution(engine.create_state_machine("nested", definition), "e", [1, 2, 3])
    assert done["status"] == "SUCCEEDED", done
    assert done["output"] == "[[1,1],[2,2],[3,3]]"
    assert sorted(calls) == ["1", "1", "2", "2", "3", "3"]
