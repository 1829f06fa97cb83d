"""Loading refuses what the engine does not implement, naming the state and the field."""

from __future__ import annotations

from typing import Any

import pytest

from stepsaga.engine import load
from stepsaga.engine._definition import LAMBDA_INVOKE
from stepsaga.errors import InvalidDefinition
from tests.framework.unit.engine.helpers import machine, task


def refused(definition: Any) -> InvalidDefinition:
    with pytest.raises(InvalidDefinition) as info:
        load(definition)
    return info.value


def test_a_valid_definition_loads_and_has_a_stable_digest() -> None:
    definition = machine({"A": task("f", Next="B"), "B": {"Type": "Succeed"}})
    first, second = load(definition), load(dict(reversed(list(definition.items()))))
    assert first.digest == second.digest
    assert [s.name for s in first.task_states()] == ["A"]


@pytest.mark.parametrize(
    ("state", "field", "message"),
    [
        ({"Type": "Map", "End": True}, "ItemProcessor", "ItemProcessor or the legacy Iterator"),
        ({"Type": "Parallel", "Branches": [], "End": True}, "Branches", "non-empty"),
        ({"Type": "Pass", "End": True, "Assign": {"1x": 1}}, "Assign.1x", "variable name"),
        ({"Type": "Pass", "End": True, "Assign": {"states": 1}}, "Assign.states", "reserved"),
        ({"Type": "Pass", "End": True, "Output": "{% 1 %}"}, "Output", "JSONata field"),
        (
            {"Type": "Pass", "End": True, "QueryLanguage": "JSONata", "Result": 1},
            "Result",
            "JSONPath field",
        ),
        ({"Type": "Pass", "End": True, "QueryLanguage": "XPath"}, "QueryLanguage", "JSONata"),
        (
            {"Type": "Pass", "End": True, "QueryLanguage": "JSONata", "Output": "{% 1 + %}"},
            "Output",
            "not a JSONata expression",
        ),
        (
            {"Type": "Pass", "End": True, "QueryLanguage": "JSONata", "Output": "{% $eval('1') %}"},
            "Output",
            "$parse",
        ),
        (task("f", InputPath="$x.a"), "InputPath", "variable"),
        ({"Type": "Pass", "End": True, "Whatever": 1}, "Whatever", "unknown"),
        (task("f", Resource="arn:aws:states:::sqs:sendMessage"), "Resource", "not supported"),
        (task("f", Resource="arn:aws:lambda:us-east-1:1:function:f"), "Resource", "not supported"),
        (task("f", Parameters={"FunctionName": "f", "Foo": 1}), "Parameters.Foo", "not supported"),
        (task("f", Parameters={"Payload": {}}), "Parameters.FunctionName", "FunctionName"),
        (
            task("f", Parameters={"FunctionName": "f", "InvocationType": "Event"}),
            "Parameters.InvocationType",
            "RequestResponse",
        ),
        (
            task("f", Parameters={"FunctionName": "f", "Payload": {"x.$": "$.a[?(@.b >"}}),
            "Parameters.Payload.x.$",
            "not a JSONPath",
        ),
        (
            task("f", Parameters={"FunctionName": "f", "Payload": {"x.$": "States.Nope()"}}),
            "Parameters.Payload.x.$",
            "Nope",
        ),
        (task("f", InputPath="$.a[*]"), "InputPath", "wildcard"),
        (task("f", ResultPath="$$.x"), "ResultPath", "context"),
        (task("f", Retry=[{"ErrorEquals": []}]), "Retry[0].ErrorEquals", "non-empty"),
        (task("f", Retry=[{"ErrorEquals": ["X"], "MaxAttempts": -1}]), "MaxAttempts", "integer"),
        (
            task("f", Retry=[{"ErrorEquals": ["X"], "IntervalSeconds": 0}]),
            "IntervalSeconds",
            "integer",
        ),
        (
            task("f", Retry=[{"ErrorEquals": ["X"], "BackoffRate": 0.5}]),
            "Retry[0].BackoffRate",
            ">= 1",
        ),
        (
            task("f", Retry=[{"ErrorEquals": ["X"], "JitterStrategy": "HALF"}]),
            "Retry[0].JitterStrategy",
            "FULL",
        ),
        (task("f", Retry=[{"ErrorEquals": ["X"], "Foo": 1}]), "Retry[0].Foo", "unknown"),
        (
            task("f", Retry=[{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["X"]}]),
            "Retry[0].ErrorEquals",
            "States.ALL",
        ),
        (task("f", Catch=[{"ErrorEquals": ["X"]}]), "Catch[0].Next", "Next"),
        (task("f", TimeoutSeconds=10, HeartbeatSeconds=10), "HeartbeatSeconds", "smaller"),
        (task("f", Next="Nowhere", End=None), "Next", "Nowhere"),
        ({"Type": "Pass"}, "End", "Next or End"),
        ({"Type": "Pass", "Next": "A", "End": True}, "Next", "not both"),
        (
            {"Type": "Wait", "Seconds": 1, "SecondsPath": "$.s", "End": True},
            "SecondsPath",
            "exactly one",
        ),
        ({"Type": "Wait", "Timestamp": "tomorrow", "End": True}, "Timestamp", "RFC 3339"),
        ({"Type": "Choice", "Choices": []}, "Choices", "non-empty"),
        (
            {"Type": "Choice", "Choices": [{"Variable": "$.a", "IsPresent": True}]},
            "Choices[0].Next",
            "Next",
        ),
        (
            {"Type": "Choice", "Choices": [{"Variable": "$.a", "Foo": 1, "Next": "A"}]},
            "Choices[0]",
            "unsupported",
        ),
        ({"Type": "Fail", "Error": "E", "ErrorPath": "$.e"}, "ErrorPath", "not both"),
    ],
)
def test_refusals_name_state_and_field(state: dict[str, Any], field: str, message: str) -> None:
    if state.get("End") is None and "Next" in state:
        state = {k: v for k, v in state.items() if k != "End"}
    error = refused(machine({"A": state}))
    assert error.state == "A"
    assert error.field == field
    assert message in error.message
    assert "'A'" in error.message
    assert field in error.message


def test_top_level_refusals() -> None:
    assert refused({"StartAt": "A", "States": {}}).field == "States"
    assert refused(machine({"A": {"Type": "Succeed"}}, start="B")).field == "StartAt"
    assert (
        refused({**machine({"A": {"Type": "Succeed"}}), "TimeoutSeconds": 5}).field
        == "TimeoutSeconds"
    )
    assert refused("{not json").field is None


def test_catch_and_choice_targets_must_exist() -> None:
    error = refused(machine({"A": task("f", Catch=[{"ErrorEquals": ["X"], "Next": "Gone"}])}))
    assert (error.state, error.field) == ("A", "Catch[0].Next")
    choice = {
        "Type": "Choice",
        "Choices": [{"Variable": "$.a", "IsPresent": True, "Next": "A"}],
        "Default": "Z",
    }
    error = refused(machine({"C": choice, "A": {"Type": "Succeed"}}))
    assert (error.state, error.field) == ("C", "Default")


def test_unreachable_states_are_refused() -> None:
    error = refused(machine({"A": {"Type": "Succeed"}, "Orphan": {"Type": "Succeed"}}))
    assert error.state == "Orphan"


def test_wait_for_task_token_resource_is_supported() -> None:
    loaded = load(machine({"A": task("f", Resource=LAMBDA_INVOKE + ".waitForTaskToken")}))
    assert loaded.task_states()[0].waits_for_token
