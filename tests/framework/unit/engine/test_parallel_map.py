"""Parallel and inline Map: data flow, concurrency, error propagation, history, mock configs."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import pytest

from stepsaga.engine import LocalEngine, MockConfig
from stepsaga.errors import BusinessRejectedError, InvalidExecutionInput, TransientError
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script, entered, machine, task, types


def history(engine: LocalEngine, arn: str) -> list[dict[str, Any]]:
    return list(engine.get_execution_history(arn)["events"])


def branch(states: dict[str, Any], start: str | None = None) -> dict[str, Any]:
    return machine(states, start)


def payload_task(function: str, **fields: Any) -> dict[str, Any]:
    return task(function, ResultSelector={"v.$": "$.Payload"}, **fields)


def mapped(processor: dict[str, Any], **fields: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "Type": "Map",
        "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, **processor},
        **fields,
    }
    if "Next" not in state:
        state["End"] = True
    return state


class PerItem:
    """A thread-safe handler: ``outcomes[item]`` lists what each call for that item does
    (the last repeats; missing items echo); records calls per item."""

    def __init__(self, key: str = "id", **outcomes: list[Any]) -> None:
        self.key = key
        self.outcomes = {k: list(v) for k, v in outcomes.items()}
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, event: Any, context: Any) -> Any:
        item = str(event[self.key])
        with self.lock:
            self.calls[item] += 1
            queue = self.outcomes.get(item, [{"done": item}])
            outcome = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


# --- Parallel --------------------------------------------------------------------------


def test_parallel_outputs_in_branch_order_with_parameters_selector_and_path(
    make_engine: MakeEngine,
) -> None:
    engine = make_engine({"a": Script({"a": 1}), "b": Script({"b": 2})})
    definition = machine(
        {
            "Both": {
                "Type": "Parallel",
                "InputPath": "$.order",
                "Parameters": {"id.$": "$.id", "state.$": "$$.State.Name"},
                "Branches": [
                    branch({"A": payload_task("a")}),
                    branch(
                        {"B": payload_task("b", Next="B2"), "B2": {"Type": "Pass", "End": True}}
                    ),
                    branch({"Echo": {"Type": "Pass", "End": True}}),
                ],
                "ResultSelector": {"first.$": "$[0].v", "all.$": "$"},
                "ResultPath": "$.results",
                "Next": "Done",
            },
            "Done": {"Type": "Succeed"},
        }
    )
    arn = engine.create_state_machine("fan", definition)
    done = engine.start_execution(arn, "e", {"order": {"id": "O-1"}, "keep": True})
    assert done["status"] == "SUCCEEDED", done
    output = json.loads(done["output"])
    branch_input = {"id": "O-1", "state": "Both"}
    assert output == {
        "order": {"id": "O-1"},
        "keep": True,
        "results": {"first": {"a": 1}, "all": [{"v": {"a": 1}}, {"v": {"b": 2}}, branch_input]},
    }
    event_types = types(engine, done["executionArn"])
    assert event_types[:3] == ["ExecutionStarted", "ParallelStateEntered", "ParallelStateStarted"]
    assert event_types[-5:] == [
        "ParallelStateSucceeded",
        "ParallelStateExited",
        "SucceedStateEntered",
        "SucceedStateExited",
        "ExecutionSucceeded",
    ]


def test_branch_events_chain_to_parallel_state_started(make_engine: MakeEngine) -> None:
    engine = make_engine({"a": Script({}), "b": Script({})})
    definition = machine(
        {
            "Both": {
                "Type": "Parallel",
                "Branches": [branch({"A": task("a")}), branch({"B": task("b")})],
                "End": True,
            }
        }
    )
    done = engine.start_execution(engine.create_state_machine("fan", definition), "e", {})
    events = history(engine, done["executionArn"])
    by_id = {e["id"]: e for e in events}
    started = next(e["id"] for e in events if e["type"] == "ParallelStateStarted")
    firsts = [e for e in events if e["type"] == "TaskStateEntered"]
    assert [e["previousEventId"] for e in firsts] == [started, started]
    for first in firsts:  # each branch reads as its own chain: Entered → … → Exited
        name = first["stateEnteredEventDetails"]["name"]
        chain = [e for e in events if e["previousEventId"] == first["id"]]
        assert [e["type"] for e in chain] == ["TaskScheduled"]
        exited = next(
            e
            for e in events
            if e["type"] == "TaskStateExited" and e["stateExitedEventDetails"]["name"] == name
        )
        walk = exited
        while walk["id"] != first["id"]:
            walk = by_id[walk["previousEventId"]]
    assert all("parallelStateStartedEventDetails" not in e for e in events)


def test_a_failed_branch_fails_the_state_with_its_error_and_cancels_the_others(
    make_engine: MakeEngine,
) -> None:
    failed = threading.Event()

    def slow(event: Any, context: Any) -> Any:
        assert failed.wait(5)
        time.sleep(0.2)  # the failure is recorded while this handler still runs
        return {"slow": True}

    def reject(event: Any, context: Any) -> Any:
        failed.set()
        raise BusinessRejectedError("no stock")

    after = Script({})
    engine = make_engine({"slow": slow, "reject": reject, "after": after})
    definition = machine(
        {
            "Both": {
                "Type": "Parallel",
                "Branches": [
                    branch({"Slow": task("slow", Next="After"), "After": task("after")}),
                    branch({"Reject": task("reject")}),
                ],
                "End": True,
            }
        }
    )
    done = engine.start_execution(engine.create_state_machine("fan", definition), "e", {})
    assert (done["status"], done["error"]) == ("FAILED", "BusinessRejectedError")
    assert json.loads(done["cause"])["errorMessage"] == "no stock"
    assert after.events == []  # the other branch stopped before its next state
    assert "After" not in entered(engine, done["executionArn"])
    assert types(engine, done["executionArn"])[-2:] == ["ParallelStateFailed", "ExecutionFailed"]


def test_parallel_catch_and_retry_apply_to_the_whole_state(make_engine: MakeEngine) -> None:
    steady = Script({"ok": 1})
    flaky = Script(TransientError("1"), {"ok": 2})
    engine = make_engine({"steady": steady, "flaky": flaky}, time_scale=0)
    retried = machine(
        {
            "Both": {
                "Type": "Parallel",
                "Branches": [branch({"S": task("steady")}), branch({"F": task("flaky")})],
                "Retry": [{"ErrorEquals": ["TransientError"], "MaxAttempts": 1}],
                "End": True,
            }
        }
    )
    done = engine.start_execution(engine.create_state_machine("retried", retried), "e", {})
    assert done["status"] == "SUCCEEDED"
    assert len(steady.events) == 2  # a retry re-runs every branch
    event_types = types(engine, done["executionArn"])
    assert event_types.count("ParallelStateStarted") == 2
    assert event_types.count("ParallelStateFailed") == 0  # only when no retry follows
    assert event_types.count("ParallelStateEntered") == 1
    assert [d.attempt for d in engine.list_delays(done["executionArn"])] == [1]

    caught = machine(
        {
            "Both": {
                "Type": "Parallel",
                "Branches": [branch({"R": task("reject")})],
                "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Undo"}],
                "End": True,
            },
            "Undo": {"Type": "Pass", "End": True},
        }
    )
    engine2 = make_engine({"reject": Script(BusinessRejectedError("no"))})
    done = engine2.start_execution(engine2.create_state_machine("caught", caught), "e", {"x": 1})
    assert done["status"] == "SUCCEEDED"
    output = json.loads(done["output"])
    assert output["x"] == 1
    assert output["error"]["Error"] == "BusinessRejectedError"
    assert types(engine2, done["executionArn"])[-5:-2] == [
        "ParallelStateFailed",
        "ParallelStateExited",
        "PassStateEntered",
    ]


def test_a_fail_state_in_a_branch_fails_the_parallel_state(make_engine: MakeEngine) -> None:
    engine = make_engine()
    definition = machine(
        {
            "Both": {
                "Type": "Parallel",
                "Branches": [
                    branch({"Ok": {"Type": "Pass", "End": True}}),
                    branch({"No": {"Type": "Fail", "Error": "Saga.Rejected", "Cause": "why"}}),
                ],
                "End": True,
            }
        }
    )
    done = engine.start_execution(engine.create_state_machine("fan", definition), "e", {})
    assert (done["status"], done["error"], done["cause"]) == ("FAILED", "Saga.Rejected", "why")


def test_states_runtime_in_a_branch_is_neither_retried_nor_caught(
    make_engine: MakeEngine,
) -> None:
    engine = make_engine()
    definition = machine(
        {
            "Both": {
                "Type": "Parallel",
                "Branches": [
                    branch({"Bad": {"Type": "Pass", "InputPath": "$.missing", "End": True}})
                ],
                "Retry": [{"ErrorEquals": ["States.ALL"]}],
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Succeed"},
        }
    )
    done = engine.start_execution(engine.create_state_machine("fan", definition), "e", {})
    assert (done["status"], done["error"]) == ("FAILED", "States.Runtime")
    assert "'Bad'" in done["cause"]
    assert "$.missing" in done["cause"]
    assert "Caught" not in entered(engine, done["executionArn"])


# --- Map -------------------------------------------------------------------------------


def test_map_items_path_item_selector_and_context(make_engine: MakeEngine) -> None:
    handler = PerItem(key="sku")
    engine = make_engine({"reserve": handler})
    definition = machine(
        {
            "Each": mapped(
                {"StartAt": "Reserve", "States": {"Reserve": payload_task("reserve")}},
                ItemsPath="$.lines",
                ItemSelector={
                    "sku.$": "$$.Map.Item.Value.sku",
                    "index.$": "$$.Map.Item.Index",
                    "order.$": "$.order",
                },
                ResultPath="$.reserved",
            )
        }
    )
    arn = engine.create_state_machine("each", definition)
    lines = [{"sku": "A"}, {"sku": "B"}, {"sku": "C"}]
    done = engine.start_execution(arn, "e", {"order": "O-1", "lines": lines})
    assert done["status"] == "SUCCEEDED", done
    assert json.loads(done["output"])["reserved"] == [
        {"v": {"done": "A"}},
        {"v": {"done": "B"}},
        {"v": {"done": "C"}},
    ]
    events = history(engine, done["executionArn"])
    inputs = sorted(
        json.loads(e["stateEnteredEventDetails"]["input"])["index"]
        for e in events
        if e["type"] == "TaskStateEntered"
    )
    assert inputs == [0, 1, 2]
    started = next(e for e in events if e["type"] == "MapStateStarted")
    assert started["mapStateStartedEventDetails"] == {"length": 3}
    iterations = [e for e in events if e["type"] == "MapIterationStarted"]
    assert sorted(e["mapIterationStartedEventDetails"]["index"] for e in iterations) == [0, 1, 2]
    assert {e["mapIterationStartedEventDetails"]["name"] for e in iterations} == {"Each"}
    assert all(e["previousEventId"] == started["id"] for e in iterations)
    succeeded = [e for e in events if e["type"] == "MapIterationSucceeded"]
    assert sorted(e["mapIterationSucceededEventDetails"]["index"] for e in succeeded) == [0, 1, 2]
    assert [e["type"] for e in events][-3:] == [
        "MapStateSucceeded",
        "MapStateExited",
        "ExecutionSucceeded",
    ]


def test_legacy_iterator_and_parameters(make_engine: MakeEngine) -> None:
    engine = make_engine()
    definition = machine(
        {
            "Each": {
                "Type": "Map",
                "Iterator": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}},
                "Parameters": {"n.$": "$$.Map.Item.Value", "i.$": "$$.Map.Item.Index"},
                "End": True,
            }
        }
    )
    done = engine.start_execution(engine.create_state_machine("each", definition), "e", [5, 6])
    assert json.loads(done["output"]) == [{"n": 5, "i": 0}, {"n": 6, "i": 1}]


def test_an_empty_array_gives_an_empty_result(make_engine: MakeEngine) -> None:
    engine = make_engine()
    definition = machine(
        {"Each": mapped({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})}
    )
    done = engine.start_execution(engine.create_state_machine("each", definition), "e", [])
    assert (done["status"], json.loads(done["output"])) == ("SUCCEEDED", [])
    assert "MapIterationStarted" not in types(engine, done["executionArn"])


def test_items_path_must_be_an_array(make_engine: MakeEngine) -> None:
    engine = make_engine()
    definition = machine(
        {
            "Each": mapped(
                {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}},
                ItemsPath="$.items",
            )
        }
    )
    done = engine.start_execution(
        engine.create_state_machine("each", definition), "e", {"items": 3}
    )
    assert (done["status"], done["error"]) == ("FAILED", "States.Runtime")
    assert "ItemsPath" in done["cause"]
    assert "array" in done["cause"]


class Gauge:
    """Counts handlers running at once; each call holds its slot for a moment."""

    def __init__(self, hold: float = 0.05, barrier: threading.Barrier | None = None) -> None:
        self.active = 0
        self.peak = 0
        self.hold = hold
        self.barrier = barrier
        self.lock = threading.Lock()

    def __call__(self, event: Any, context: Any) -> Any:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            if self.barrier is not None:
                self.barrier.wait(5)  # raises BrokenBarrierError unless all run at once
            time.sleep(self.hold)
        finally:
            with self.lock:
                self.active -= 1
        return event


@pytest.mark.parametrize("limit", [1, 2])
def test_max_concurrency_bounds_running_iterations(make_engine: MakeEngine, limit: int) -> None:
    gauge = Gauge()
    engine = make_engine({"work": gauge})
    definition = machine(
        {
            "Each": mapped(
                {"StartAt": "W", "States": {"W": task("work")}},
                MaxConcurrency=limit,
            )
        }
    )
    done = engine.start_execution(engine.create_state_machine("each", definition), "e", [1] * 6)
    assert done["status"] == "SUCCEEDED"
    assert gauge.peak == limit


def test_max_concurrency_zero_runs_all_iterations_at_once(make_engine: MakeEngine) -> None:
    gauge = Gauge(hold=0, barrier=threading.Barrier(5))
    engine = make_engine({"work": gauge})
    definition = machine(
        {
            "Each": mapped(
                {"StartAt": "W", "States": {"W": task("work")}},
                MaxConcurrencyPath="$.limit",
                ItemsPath="$.items",
            )
        }
    )
    arn = engine.create_state_machine("each", definition)
    done = engine.start_execution(arn, "e", {"limit": 0, "items": [1, 2, 3, 4, 5]})
    assert done["status"] == "SUCCEEDED", done
    assert gauge.peak == 5


def test_unbounded_means_40_iterations_at_once_and_the_41st_waits_for_a_slot(
    make_engine: MakeEngine,
) -> None:
    """AWS: an inline Map runs at most 40 iterations concurrently, whatever MaxConcurrency
    says (0 or unset included); the 41st starts when one of them has finished."""
    first_forty = threading.Barrier(40)
    lock = threading.Lock()
    finished = 0
    finished_when_started: dict[int, int] = {}

    def work(event: Any, context: Any) -> Any:
        nonlocal finished
        with lock:
            finished_when_started[event] = finished
        if event < 40:
            first_forty.wait(10)  # raises BrokenBarrierError unless 40 run at once
        with lock:
            finished += 1
        return event

    engine = make_engine({"work": work})
    definition = machine(
        {"Each": mapped({"StartAt": "W", "States": {"W": task("work")}}, ItemsPath="$.items")}
    )
    arn = engine.create_state_machine("each", definition)
    done = engine.start_execution(arn, "e", {"items": list(range(41))})
    assert done["status"] == "SUCCEEDED", done
    assert len(json.loads(done["output"])) == 41
    assert set(finished_when_started[i] for i in range(40)) == {0}
    assert finished_when_started[40] >= 1


def test_a_failed_iteration_fails_the_map_and_later_ones_never_start(
    make_engine: MakeEngine,
) -> None:
    handler = PerItem(b=[BusinessRejectedError("item b refused")])
    engine = make_engine({"work": handler})
    definition = machine(
        {
            "Each": mapped(
                {"StartAt": "W", "States": {"W": task("work")}},
                MaxConcurrency=1,
                ItemSelector={"id.$": "$$.Map.Item.Value"},
            )
        }
    )
    arn = engine.create_state_machine("each", definition)
    done = engine.start_execution(arn, "e", ["a", "b", "c", "d"])
    assert (done["status"], done["error"]) == ("FAILED", "BusinessRejectedError")
    assert json.loads(done["cause"])["errorMessage"] == "item b refused"
    assert handler.calls == Counter({"a": 1, "b": 1})
    events = history(engine, done["executionArn"])
    started = [
        e["mapIterationStartedEventDetails"]["index"]
        for e in events
        if e["type"] == "MapIterationStarted"
    ]
    assert started == [0, 1]
    failed = [e for e in events if e["type"] == "MapIterationFailed"]
    assert [e["mapIterationFailedEventDetails"] for e in failed] == [{"name": "Each", "index": 1}]
    assert [e["type"] for e in events][-2:] == ["MapStateFailed", "ExecutionFailed"]


def test_map_catch_routes_the_iteration_error(make_engine: MakeEngine) -> None:
    engine = make_engine({"work": PerItem(key="id", b=[BusinessRejectedError("no")])})
    definition = machine(
        {
            "Each": mapped(
                {"StartAt": "W", "States": {"W": task("work")}},
                ItemSelector={"id.$": "$$.Map.Item.Value"},
                Catch=[{"ErrorEquals": ["BusinessRejectedError"], "Next": "Compensate"}],
            ),
            "Compensate": {"Type": "Pass", "End": True},
        }
    )
    done = engine.start_execution(engine.create_state_machine("each", definition), "e", ["a", "b"])
    assert done["status"] == "SUCCEEDED"
    assert json.loads(done["output"])["Error"] == "BusinessRejectedError"


def test_nested_map_inside_parallel_inside_map(make_engine: MakeEngine) -> None:
    engine = make_engine()
    inner = mapped(
        {"StartAt": "Leaf", "States": {"Leaf": {"Type": "Pass", "End": True}}},
        ItemsPath="$.xs",
        ItemSelector={"x.$": "$$.Map.Item.Value", "outer.$": "$.n"},
    )
    definition = machine(
        {
            "Outer": mapped(
                {
                    "StartAt": "Fork",
                    "States": {
                        "Fork": {
                            "Type": "Parallel",
                            "Branches": [
                                branch({"Inner": inner}),
                                branch({"Name": {"Type": "Pass", "Result": "side", "End": True}}),
                            ],
                            "End": True,
                        }
                    },
                },
                ItemsPath="$.groups",
            )
        }
    )
    arn = engine.create_state_machine("nested", definition)
    done = engine.start_execution(
        arn, "e", {"groups": [{"n": 1, "xs": ["a", "b"]}, {"n": 2, "xs": ["c"]}]}
    )
    assert done["status"] == "SUCCEEDED", done
    assert json.loads(done["output"]) == [
        [[{"x": "a", "outer": 1}, {"x": "b", "outer": 1}], "side"],
        [[{"x": "c", "outer": 2}], "side"],
    ]
    event_types = Counter(types(engine, done["executionArn"]))
    assert event_types["MapIterationStarted"] == 2 + 3
    assert event_types["ParallelStateStarted"] == 2


def test_mock_config_mocks_tasks_inside_branches_and_iterations(make_engine: MakeEngine) -> None:
    config = MockConfig.from_dict(
        {
            "StateMachines": {"fan": {"TestCases": {"Mocked": {"Each": "Ok", "Side": "Boom"}}}},
            "MockedResponses": {
                "Ok": {"0-2": {"Return": {"StatusCode": 200, "Payload": "mocked"}}},
                "Boom": {"0": {"Throw": {"Error": "Saga.Rejected", "Cause": "mocked"}}},
            },
        }
    )
    real = Script({"real": True})
    engine = make_engine({"each": real, "side": real}, mock_config=config)
    definition = machine(
        {
            "Fork": {
                "Type": "Parallel",
                "Branches": [
                    branch(
                        {
                            "Items": mapped(
                                {"StartAt": "Each", "States": {"Each": payload_task("each")}},
                                ItemsPath="$.items",
                            )
                        }
                    ),
                    branch({"Side": task("side")}),
                ],
                "Catch": [{"ErrorEquals": ["Saga.Rejected"], "ResultPath": "$.e", "Next": "X"}],
                "End": True,
            },
            "X": {"Type": "Pass", "End": True},
        }
    )
    arn = engine.create_state_machine("fan", definition)
    done = engine.start_execution(f"{arn}#Mocked", "e", {"items": [1, 2, 3]})
    assert done["status"] == "SUCCEEDED", done
    assert json.loads(done["output"])["e"] == {"Error": "Saga.Rejected", "Cause": "mocked"}
    assert real.events == []


def test_stop_execution_inside_a_map_aborts_the_iteration_and_the_state(
    make_engine: MakeEngine,
) -> None:
    stopper: list[Any] = []

    def first(event: Any, context: Any) -> Any:
        if event == 0:
            stopper[0]()
        return event

    second = Script({})
    engine = make_engine({"first": first, "second": second})
    definition = machine(
        {
            "Each": mapped(
                {"StartAt": "T1", "States": {"T1": task("first", Next="T2"), "T2": task("second")}},
                MaxConcurrency=1,
            )
        }
    )
    arn = engine.create_state_machine("each", definition)
    other = make_engine()
    execution = "arn:aws:states:us-east-1:123456789012:execution:each:e"
    stopper.append(lambda: other.stop_execution(execution, "Ops.Stop", "by hand"))
    done = engine.start_execution(arn, "e", [0, 1])
    assert (done["status"], done["error"]) == ("ABORTED", "Ops.Stop")
    assert second.events == []  # the stop landed at T2's checkpoint, before its handler
    assert types(engine, execution)[-5:] == [
        "TaskStarted",
        "TaskStateAborted",
        "MapIterationAborted",
        "MapStateAborted",
        "ExecutionAborted",
    ]


def test_items_path_can_read_the_context_object(make_engine: MakeEngine) -> None:
    engine = make_engine()
    definition = machine(
        {
            "Each": mapped(
                {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}},
                ItemsPath="$$.Execution.Input.items",
                InputPath="$.other",
            )
        }
    )
    arn = engine.create_state_machine("each", definition)
    done = engine.start_execution(arn, "e", {"items": [1, 2], "other": {}})
    assert json.loads(done["output"]) == [1, 2]


def test_max_concurrency_path_must_be_a_non_negative_integer(make_engine: MakeEngine) -> None:
    engine = make_engine()
    definition = machine(
        {
            "Each": mapped(
                {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}},
                ItemsPath="$.items",
                MaxConcurrencyPath="$.n",
            )
        }
    )
    arn = engine.create_state_machine("each", definition)
    done = engine.start_execution(arn, "e", {"items": [1], "n": -1})
    assert (done["status"], done["error"]) == ("FAILED", "States.Runtime")
    assert "MaxConcurrencyPath" in done["cause"]


def test_handlers_of_tasks_inside_branches_are_checked_at_start(make_engine: MakeEngine) -> None:
    engine = make_engine({})
    definition = machine(
        {
            "Fork": {
                "Type": "Parallel",
                "Branches": [branch({"Inner": task("nowhere")})],
                "End": True,
            }
        }
    )
    arn = engine.create_state_machine("fan", definition)
    with pytest.raises(InvalidExecutionInput, match=r"'Inner'.*'nowhere'"):
        engine.start_execution(arn, "e", {})
