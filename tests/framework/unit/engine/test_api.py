"""The boto3-flavoured surface: names, idempotent starts, listings, describe shapes."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from stepsaga._project.home import StateHome
from stepsaga.engine import LocalEngine
from stepsaga.engine._engine import time_scale_from_env
from stepsaga.errors import (
    ExecutionAlreadyExists,
    ExecutionDoesNotExist,
    InvalidExecutionInput,
    InvalidInputError,
    InvalidName,
    NotFoundError,
    StateMachineAlreadyExists,
    StateMachineDoesNotExist,
)
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script, machine, task

DEFINITION = machine({"A": task("f")})


@pytest.mark.parametrize("name", ["", "a" * 81, "has space", "ümlaut", "a:b", "x/y"])
def test_execution_names_follow_aws_rules(make_engine: MakeEngine, name: str) -> None:
    engine = make_engine({"f": Script({})})
    arn = engine.create_state_machine("m", DEFINITION)
    with pytest.raises(InvalidName):
        engine.start_execution(arn, name, {})


def test_same_name_same_input_returns_the_existing_execution(make_engine: MakeEngine) -> None:
    handler = Script({"n": 1})
    engine = make_engine({"f": handler})
    arn = engine.create_state_machine("m", DEFINITION)
    first = engine.start_execution(arn, "acme-CASE-1-r1", '{"a": 1, "b": 2}')
    again = engine.start_execution(arn, "acme-CASE-1-r1", {"b": 2, "a": 1})
    assert again == first
    assert len(handler.events) == 1
    with pytest.raises(ExecutionAlreadyExists, match="acme-CASE-1-r1") as info:
        engine.start_execution(arn, "acme-CASE-1-r1", {"a": 2})
    assert isinstance(info.value, InvalidInputError)


def test_describe_shape_matches_describe_execution(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script({})})
    arn = engine.create_state_machine("m", DEFINITION)
    result = engine.start_execution(arn, "e", {"x": 1})
    assert set(result) == {
        "executionArn",
        "stateMachineArn",
        "name",
        "status",
        "startDate",
        "stopDate",
        "input",
        "inputDetails",
        "output",
        "outputDetails",
        "redriveCount",
        "redriveStatus",
        "redriveStatusReason",
    }
    assert result["executionArn"] == "arn:aws:states:us-east-1:123456789012:execution:m:e"
    assert isinstance(result["startDate"], datetime)
    assert result["startDate"].tzinfo is not None
    assert json.loads(result["input"]) == {"x": 1}


def test_list_executions_filters_newest_first(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script({}), "g": Script(RuntimeError("x"))})
    ok = engine.create_state_machine("ok", DEFINITION)
    bad = engine.create_state_machine("bad", machine({"A": task("g")}))
    engine.start_execution(ok, "one", {})
    engine.start_execution(bad, "two", {})
    names = [e["name"] for e in engine.list_executions()["executions"]]
    assert sorted(names) == ["one", "two"]
    assert [e["name"] for e in engine.list_executions(status="FAILED")["executions"]] == ["two"]
    assert [e["name"] for e in engine.list_executions(state_machine_arn=ok)["executions"]] == [
        "one"
    ]
    assert len(engine.list_executions(max_results=1)["executions"]) == 1


def test_history_reverse_order(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script({})})
    execution = engine.start_execution(engine.create_state_machine("m", DEFINITION), "e", {})[
        "executionArn"
    ]
    forward = engine.get_execution_history(execution)["events"]
    assert engine.get_execution_history(execution, reverse_order=True)["events"] == forward[::-1]


def test_state_machines_are_versioned_per_execution(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script({}), "g": Script({"g": 1})})
    arn = engine.create_state_machine("m", DEFINITION)
    assert engine.create_state_machine("m", DEFINITION) == arn
    other = machine({"B": task("g")})
    with pytest.raises(StateMachineAlreadyExists):
        engine.create_state_machine("m", other)
    old = engine.start_execution(arn, "old", {})
    assert engine.ensure_state_machine("m", other) == arn
    new = engine.start_execution(arn, "new", {})
    assert json.loads(engine.describe_state_machine(arn)["definition"])["StartAt"] == "B"
    assert old["status"] == new["status"] == "SUCCEEDED"
    assert json.loads(new["output"])["Payload"] == {"g": 1}


def test_durable_across_engine_instances(home: StateHome, make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script({})})
    execution = engine.start_execution(engine.create_state_machine("m", DEFINITION), "e", {})[
        "executionArn"
    ]
    engine.close()
    with LocalEngine(home, {}) as reopened:
        assert reopened.describe_execution(execution)["status"] == "SUCCEEDED"
        assert len(reopened.get_execution_history(execution)["events"]) == 7


def test_unknown_things_are_not_found(make_engine: MakeEngine) -> None:
    engine = make_engine()
    with pytest.raises(ExecutionDoesNotExist) as info:
        engine.describe_execution("arn:aws:states:us-east-1:1:execution:m:nope")
    assert isinstance(info.value, NotFoundError)
    with pytest.raises(StateMachineDoesNotExist):
        engine.start_execution("arn:aws:states:us-east-1:1:stateMachine:nope", "e", {})


def test_bad_input_is_refused(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script({})})
    arn = engine.create_state_machine("m", DEFINITION)
    with pytest.raises(InvalidExecutionInput):
        engine.start_execution(arn, "e", "{nope")


def test_time_scale_from_environment() -> None:
    assert time_scale_from_env({}) == 1.0
    assert time_scale_from_env({"STEPSAGA_TIME_SCALE": "0"}) == 0.0
    with pytest.raises(InvalidExecutionInput):
        time_scale_from_env({"STEPSAGA_TIME_SCALE": "fast"})
    with pytest.raises(InvalidExecutionInput):
        time_scale_from_env({"STEPSAGA_TIME_SCALE": "-1"})


def test_engine_reads_the_time_scale_from_the_environment(
    home: StateHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPSAGA_TIME_SCALE", "0")
    with LocalEngine(home, {}) as engine:
        assert engine.time_scale == 0.0
