"""``.waitForTaskToken`` inside Parallel branches and Map iterations.

A branch whose task waits for a callback stops there while the others run on; once no
branch runs, the execution is released (RUNNING, no owner) and each answer continues only
the branch that waited for it. A failure elsewhere cancels the waiting branches: their
tokens no longer wait.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

import pytest

from stepsaga._util.clock import ManualClock
from stepsaga.engine import LocalEngine
from stepsaga.engine._definition import LAMBDA_INVOKE_WAIT
from stepsaga.errors import BusinessRejectedError, TaskTimedOut
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script, machine, task, types
from tests.framework.unit.engine.test_parallel_map import branch, mapped


class Tokens:
    """A ``.waitForTaskToken`` handler that keeps each token by the item it was for."""

    def __init__(self, answer: Any = None) -> None:
        self.tokens: dict[str, str] = {}
        self.calls: Counter[str] = Counter()
        self.answer = answer  # called with (item, token) inside the handler, if given
        self.lock = threading.Lock()

    def __call__(self, event: Any, context: Any) -> Any:
        with self.lock:
            self.tokens[str(event["id"])] = event["token"]
            self.calls[str(event["id"])] += 1
        if self.answer is not None:
            self.answer(str(event["id"]), event["token"])
        return {"queued": True}


def decide(**fields: Any) -> dict[str, Any]:
    return task(
        "decide",
        Resource=LAMBDA_INVOKE_WAIT,
        Parameters={
            "FunctionName": "decide",
            "Payload": {"token.$": "$$.Task.Token", "id.$": "$.id"},
        },
        **fields,
    )


EACH = machine(
    {
        "Each": mapped(
            {
                "StartAt": "Decide",
                "States": {
                    "Decide": decide(ResultPath="$.decision", Next="Apply"),
                    "Apply": task("apply", ResultSelector={"p.$": "$.Payload"}, ResultPath="$.r"),
                },
            },
            ItemsPath="$.items",
            ItemSelector={"id.$": "$$.Map.Item.Value"},
            ResultPath="$.done",
        )
    }
)


def test_each_answer_continues_only_its_iteration(make_engine: MakeEngine) -> None:
    decide_handler, apply = Tokens(), Script({"applied": True})
    engine = make_engine({"decide": decide_handler, "apply": apply})
    arn = engine.create_state_machine("each", EACH)
    started = engine.start_execution(arn, "e", {"items": ["a", "b"]})
    assert started["status"] == "RUNNING"
    execution = started["executionArn"]
    assert sorted(t.state_name for t in engine.list_waiting_tasks(execution)) == [
        "Decide",
        "Decide",
    ]
    assert apply.events == []

    after_b = engine.send_task_success(decide_handler.tokens["b"], {"ok": "b"})
    assert after_b["status"] == "RUNNING"  # a still waits
    assert [e["id"] for e in apply.events] == ["b"]
    assert len(engine.list_waiting_tasks(execution)) == 1

    done = engine.send_task_success(decide_handler.tokens["a"], {"ok": "a"})
    assert done["status"] == "SUCCEEDED", done
    output = json.loads(done["output"])["done"]
    assert [(o["id"], o["decision"], o["r"]) for o in output] == [
        ("a", {"ok": "a"}, {"p": {"applied": True}}),
        ("b", {"ok": "b"}, {"p": {"applied": True}}),
    ]
    assert decide_handler.calls == Counter({"a": 1, "b": 1})
    event_types = Counter(types(engine, execution))
    assert event_types["MapStateEntered"] == event_types["MapStateStarted"] == 1
    assert event_types["MapIterationStarted"] == event_types["MapIterationSucceeded"] == 2
    assert event_types["TaskSubmitted"] == 2
    assert event_types["TaskStateEntered"] == 4  # Decide and Apply, once per item


def test_an_answer_given_while_the_execution_runs_is_not_lost(make_engine: MakeEngine) -> None:
    """Iteration b answers a's token while the engine still drives the execution: the
    answer is recorded, and the engine continues a before it lets the execution go."""
    decide_handler = Tokens()
    other: list[LocalEngine] = []

    def answer_a(event: Any, context: Any) -> Any:
        if event["id"] == "b":
            other[0].send_task_success(decide_handler.tokens["a"], {"ok": "late"})
        return {}

    definition = json.loads(json.dumps(EACH))
    definition["States"]["Each"]["MaxConcurrency"] = 1
    # a waits for a callback; b runs a plain task that answers a's token
    definition["States"]["Each"]["ItemProcessor"] = {
        "StartAt": "Route",
        "States": {
            "Route": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.id", "StringEquals": "a", "Next": "Wait"}],
                "Default": "Answer",
            },
            "Wait": decide(ResultPath="$.decision"),
            "Answer": task("answer", ResultPath=None),
        },
    }
    engine = make_engine({"decide": decide_handler, "answer": answer_a})
    other.append(make_engine({}))
    arn = engine.create_state_machine("each", definition)
    done = engine.start_execution(arn, "e", {"items": ["a", "b"]})
    assert done["status"] == "SUCCEEDED", done
    assert json.loads(done["output"])["done"][0]["decision"] == {"ok": "late"}


def test_a_callback_answered_by_its_own_handler_does_not_wait(make_engine: MakeEngine) -> None:
    def answer(item: str, token: str) -> None:
        make_engine({}).send_task_success(token, {"ok": item})  # an engine per thread

    decide_handler = Tokens(answer=answer)
    engine = make_engine({"decide": decide_handler, "apply": Script({})})
    arn = engine.create_state_machine("each", EACH)
    done = engine.start_execution(arn, "e", {"items": ["a", "b"]})
    assert done["status"] == "SUCCEEDED", (done.get("error"), done.get("cause"))
    assert [o["decision"] for o in json.loads(done["output"])["done"]] == [
        {"ok": "a"},
        {"ok": "b"},
    ]


PARALLEL = machine(
    {
        "Fork": {
            "Type": "Parallel",
            "Branches": [
                branch({"Decide": decide(OutputPath="$")}),
                branch({"Work": task("work")}),
            ],
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.failure", "Next": "Undo"}],
            "End": True,
        },
        "Undo": {"Type": "Pass", "End": True},
    }
)


def test_a_failure_answer_fails_the_parallel_state(make_engine: MakeEngine) -> None:
    decide_handler = Tokens()
    engine = make_engine({"decide": decide_handler, "work": Script({"w": 1})})
    arn = engine.create_state_machine("fan", PARALLEL)
    started = engine.start_execution(arn, "e", {"id": "x"})
    assert started["status"] == "RUNNING"
    done = engine.send_task_failure(decide_handler.tokens["x"], "Saga.Rejected", "operator said no")
    assert done["status"] == "SUCCEEDED"
    assert json.loads(done["output"])["failure"] == {
        "Error": "Saga.Rejected",
        "Cause": "operator said no",
    }


def test_a_failing_sibling_cancels_the_waiting_branch(make_engine: MakeEngine) -> None:
    decide_handler = Tokens()
    gate = threading.Event()

    def work(event: Any, context: Any) -> Any:
        assert gate.wait(5)  # fail only once the other branch waits
        raise BusinessRejectedError("no")

    def decide_then_open(event: Any, context: Any) -> Any:
        result = decide_handler(event, context)
        gate.set()
        return result

    engine = make_engine({"decide": decide_then_open, "work": work})
    arn = engine.create_state_machine("fan", PARALLEL)
    done = engine.start_execution(arn, "e", {"id": "x"})
    assert done["status"] == "SUCCEEDED", done
    assert json.loads(done["output"])["failure"]["Error"] == "BusinessRejectedError"
    assert engine.list_waiting_tasks(done["executionArn"]) == []
    with pytest.raises(TaskTimedOut, match="no longer waits"):
        engine.send_task_success(decide_handler.tokens["x"], {})
    assert "TaskStateAborted" in types(engine, done["executionArn"])


def test_a_callback_timeout_inside_an_iteration(
    make_engine: MakeEngine, clock: ManualClock
) -> None:
    definition = json.loads(json.dumps(EACH))
    processor = definition["States"]["Each"]["ItemProcessor"]["States"]
    processor["Decide"]["TimeoutSeconds"] = 60
    processor["Decide"]["Catch"] = [
        {"ErrorEquals": ["States.Timeout"], "ResultPath": "$.timeout", "Next": "Apply"}
    ]
    decide_handler = Tokens()
    engine = make_engine({"decide": decide_handler, "apply": Script({})})
    arn = engine.create_state_machine("each", definition)
    execution = engine.start_execution(arn, "e", {"items": ["a", "b"]})["executionArn"]
    engine.send_task_success(decide_handler.tokens["a"], {"ok": "a"})
    clock.advance(61)
    assert engine.run_due_timers() == [execution]
    done = engine.describe_execution(execution)
    assert done["status"] == "SUCCEEDED", done
    output = json.loads(done["output"])["done"]
    assert output[0]["decision"] == {"ok": "a"}
    assert output[1]["timeout"]["Error"] == "States.Timeout"


def test_stop_while_branches_wait_then_redrive_asks_again_only_there(
    make_engine: MakeEngine,
) -> None:
    decide_handler = Tokens()
    apply = Script({})
    engine = make_engine({"decide": decide_handler, "apply": apply})
    arn = engine.create_state_machine("each", EACH)
    execution = engine.start_execution(arn, "e", {"items": ["a", "b"]})["executionArn"]
    engine.send_task_success(decide_handler.tokens["a"], {"ok": "a"})
    stopped = engine.stop_execution(execution, "Ops.Stop", "maintenance")
    assert stopped["status"] == "ABORTED"
    assert types(engine, execution)[-2:] == ["MapStateAborted", "ExecutionAborted"]
    old_b = decide_handler.tokens["b"]
    with pytest.raises(TaskTimedOut):
        engine.send_task_success(old_b, {})

    assert engine.redrive_execution(execution)["status"] == "RUNNING"
    assert decide_handler.calls == Counter({"a": 1, "b": 2})  # only b asks again
    assert decide_handler.tokens["b"] != old_b
    done = engine.send_task_success(decide_handler.tokens["b"], {"ok": "b2"})
    assert done["status"] == "SUCCEEDED", done
    assert [o["decision"] for o in json.loads(done["output"])["done"]] == [
        {"ok": "a"},
        {"ok": "b2"},
    ]
    assert len(apply.events) == 2
