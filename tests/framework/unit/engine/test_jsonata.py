"""QueryLanguage JSONata on the engine, against AWS's documented behaviour: ``Arguments``,
``Output``, ``Assign``, ``Condition``, ``Items``, ``$states``, Step Functions' added
functions, ``States.QueryEvaluationError``, and JSONata states inside a JSONPath machine."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from stepsaga.engine import load
from stepsaga.engine._definition import LAMBDA_INVOKE
from stepsaga.errors import BusinessRejectedError, InvalidDefinition
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script, machine


def jsonata(states: dict[str, Any], start: str | None = None) -> dict[str, Any]:
    return {"QueryLanguage": "JSONata", **machine(states, start)}


def task(function: str, **fields: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "Type": "Task",
        "Resource": LAMBDA_INVOKE,
        "Arguments": {"FunctionName": function, "Payload": "{% $states.input %}"},
    }
    state.update(fields)
    if "Next" not in state and "End" not in state:
        state["End"] = True
    return state


def run(
    make_engine: MakeEngine, definition: dict[str, Any], data: Any = None, **handlers: Any
) -> dict[str, Any]:
    engine = make_engine(handlers)
    arn = engine.create_state_machine("jsonata", definition)
    return engine.start_execution(arn, "e1", json.dumps({} if data is None else data))


def output(result: dict[str, Any]) -> Any:
    assert result["status"] == "SUCCEEDED", result
    return json.loads(result["output"])


def test_pass_output_reads_states_input_and_context(make_engine: MakeEngine) -> None:
    result = run(
        make_engine,
        jsonata(
            {
                "Shape": {
                    "Type": "Pass",
                    "Output": {
                        "total": "{% $sum($states.input.lines.(qty * price)) %}",
                        "execution": "{% $states.context.Execution.Name %}",
                        "literal": "not {% an expression",
                        "nested": ["{% $count($states.input.lines) %}", 1],
                    },
                    "End": True,
                }
            }
        ),
        {"lines": [{"qty": 2, "price": 5}, {"qty": 1, "price": 7}]},
    )
    assert output(result) == {
        "total": 17,
        "execution": "e1",
        "literal": "not {% an expression",
        "nested": [2, 1],
    }


def test_a_state_without_output_passes_its_input_on(make_engine: MakeEngine) -> None:
    assert output(run(make_engine, jsonata({"P": {"Type": "Pass", "End": True}}), {"a": 1})) == {
        "a": 1
    }


def test_task_arguments_output_and_assign(make_engine: MakeEngine) -> None:
    reserve = Script({"reservation": "R-1", "warehouse": "eu"})
    result = run(
        make_engine,
        jsonata(
            {
                "Reserve": task(
                    "reserve",
                    Arguments={
                        "FunctionName": "reserve",
                        "Payload": {"sku": "{% $states.input.sku %}", "quantity": 2},
                    },
                    Assign={"reservation": "{% $states.result.Payload.reservation %}"},
                    Output="{% $merge([$states.input, "
                    "{'warehouse': $states.result.Payload.warehouse}]) %}",
                    Next="Report",
                ),
                "Report": {
                    "Type": "Pass",
                    "Output": {
                        "id": "{% $reservation %}",
                        "where": "{% $states.input.warehouse %}",
                    },
                    "End": True,
                },
            }
        ),
        {"sku": "MUG"},
        reserve=reserve,
    )
    assert reserve.events == [{"sku": "MUG", "quantity": 2}]
    assert output(result) == {"id": "R-1", "where": "eu"}


def test_task_output_defaults_to_the_integration_result(make_engine: MakeEngine) -> None:
    result = run(make_engine, jsonata({"T": task("f")}), {"x": 1}, f=Script({"y": 2}))
    assert output(result)["Payload"] == {"y": 2}
    assert output(result)["StatusCode"] == 200


def test_choice_condition_rule_assign_and_output(make_engine: MakeEngine) -> None:
    definition = jsonata(
        {
            "Decide": {
                "Type": "Choice",
                "Choices": [
                    {
                        "Condition": "{% $states.input.amount > 100 %}",
                        "Assign": {"route": "review"},
                        "Output": {"amount": "{% $states.input.amount %}", "big": True},
                        "Next": "Done",
                    }
                ],
                "Default": "Done",
                "Assign": {"route": "auto"},
            },
            "Done": {
                "Type": "Pass",
                "Output": "{% $merge([$states.input, {'route': $route}]) %}",
                "End": True,
            },
        }
    )
    engine = make_engine({})
    arn = engine.create_state_machine("choice", definition)
    big = engine.start_execution(arn, "big", json.dumps({"amount": 500}))
    small = engine.start_execution(arn, "small", json.dumps({"amount": 5}))
    assert output(big) == {"amount": 500, "big": True, "route": "review"}
    assert output(small) == {"amount": 5, "route": "auto"}


def test_a_condition_that_is_not_boolean_is_a_query_evaluation_error(
    make_engine: MakeEngine,
) -> None:
    result = run(
        make_engine,
        jsonata(
            {
                "Decide": {
                    "Type": "Choice",
                    "Choices": [{"Condition": "{% $states.input.name %}", "Next": "Done"}],
                },
                "Done": {"Type": "Succeed"},
            }
        ),
        {"name": "x"},
    )
    assert result["status"] == "FAILED"
    assert result["error"] == "States.QueryEvaluationError"
    assert "not a boolean" in result["cause"]


def test_step_functions_added_functions(make_engine: MakeEngine) -> None:
    result = run(
        make_engine,
        jsonata(
            {
                "Fn": {
                    "Type": "Pass",
                    "Output": {
                        "partition": "{% $partition([1,2,3,4,5], 2) %}",
                        "range": "{% $range(0, 10, 2) %}",
                        "hash": "{% $hash('stepsaga', 'SHA-256') %}",
                        "parse": "{% $parse($states.input.text) %}",
                        "uuid": "{% $uuid() %}",
                        "random": "{% $random() %}",
                        "seeded": "{% [$random(7), $random(7)] %}",
                    },
                    "End": True,
                }
            }
        ),
        {"text": '{"a": [1, null]}'},
    )
    out = output(result)
    assert out["partition"] == [[1, 2], [3, 4], [5]]
    assert out["range"] == [0, 2, 4, 6, 8, 10]
    assert out["hash"] == hashlib.sha256(b"stepsaga").hexdigest()
    assert out["parse"] == {"a": [1, None]}
    assert len(out["uuid"]) == 36
    assert out["uuid"][14] == "4"
    assert 0 <= out["random"] < 1
    assert out["seeded"][0] == out["seeded"][1]


def test_eval_is_not_available(make_engine: MakeEngine) -> None:
    with pytest.raises(InvalidDefinition, match=r"\$parse"):
        load(jsonata({"P": {"Type": "Pass", "Output": "{% $eval('1+1') %}", "End": True}}))


def test_undefined_output_is_a_query_evaluation_error_naming_state_and_field(
    make_engine: MakeEngine,
) -> None:
    result = run(
        make_engine,
        jsonata(
            {"Shape": {"Type": "Pass", "Output": {"x": "{% $states.input.nope %}"}, "End": True}}
        ),
    )
    assert result["status"] == "FAILED"
    assert result["error"] == "States.QueryEvaluationError"
    assert "'Shape'" in result["cause"]
    assert "Output.x" in result["cause"]
    assert "undefined" in result["cause"]


def test_catch_handles_a_query_evaluation_error_and_its_output_reads_error_output(
    make_engine: MakeEngine,
) -> None:
    result = run(
        make_engine,
        jsonata(
            {
                "T": task(
                    "f",
                    Output="{% $states.result.Payload.missing %}",
                    Catch=[
                        {
                            "ErrorEquals": ["States.QueryEvaluationError"],
                            "Assign": {"why": "{% $states.errorOutput.Error %}"},
                            "Output": {"failed": True},
                            "Next": "Handled",
                        }
                    ],
                ),
                "Handled": {
                    "Type": "Pass",
                    "Output": "{% $merge([$states.input, {'why': $why}]) %}",
                    "End": True,
                },
            }
        ),
        f=Script({"present": 1}),
    )
    assert output(result) == {"failed": True, "why": "States.QueryEvaluationError"}


def test_a_task_error_caught_defaults_to_the_error_output(make_engine: MakeEngine) -> None:
    result = run(
        make_engine,
        jsonata(
            {
                "T": task("f", Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Handled"}]),
                "Handled": {"Type": "Pass", "End": True},
            }
        ),
        f=Script(BusinessRejectedError("refused")),
    )
    assert output(result)["Error"] == "BusinessRejectedError"


def test_map_items_item_selector_and_max_concurrency(make_engine: MakeEngine) -> None:
    result = run(
        make_engine,
        jsonata(
            {
                "Each": {
                    "Type": "Map",
                    "Items": "{% $states.input.lines[qty > 0] %}",
                    "MaxConcurrency": "{% $states.input.limit %}",
                    "ItemSelector": {
                        "sku": "{% $states.context.Map.Item.Value.sku %}",
                        "index": "{% $states.context.Map.Item.Index %}",
                    },
                    "ItemProcessor": machine(
                        {
                            "Line": {
                                "Type": "Pass",
                                "Output": "{% $states.input.sku & '#' & $states.input.index %}",
                                "End": True,
                            }
                        }
                    ),
                    "End": True,
                }
            }
        ),
        {
            "limit": 2,
            "lines": [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 0}, {"sku": "C", "qty": 3}],
        },
    )
    assert output(result) == ["A#0", "C#1"]


def test_map_items_that_are_not_an_array_fail(make_engine: MakeEngine) -> None:
    result = run(
        make_engine,
        jsonata(
            {
                "Each": {
                    "Type": "Map",
                    "Items": "{% $states.input.n %}",
                    "ItemProcessor": machine({"X": {"Type": "Pass", "End": True}}),
                    "End": True,
                }
            }
        ),
        {"n": 3},
    )
    assert result["error"] == "States.QueryEvaluationError"


def test_parallel_arguments_and_output(make_engine: MakeEngine) -> None:
    result = run(
        make_engine,
        jsonata(
            {
                "Fork": {
                    "Type": "Parallel",
                    "Arguments": {"n": "{% $states.input.n %}"},
                    "Branches": [
                        machine(
                            {
                                "A": {
                                    "Type": "Pass",
                                    "Output": "{% $states.input.n + 1 %}",
                                    "End": True,
                                }
                            }
                        ),
                        machine(
                            {
                                "B": {
                                    "Type": "Pass",
                                    "Output": "{% $states.input.n * 2 %}",
                                    "End": True,
                                }
                            }
                        ),
                    ],
                    "Output": {"sum": "{% $sum($states.result) %}"},
                    "End": True,
                }
            }
        ),
        {"n": 5},
    )
    assert output(result) == {"sum": 16}


def test_wait_seconds_and_fail_error_cause_expressions(make_engine: MakeEngine) -> None:
    result = run(
        make_engine,
        jsonata(
            {
                "Pause": {"Type": "Wait", "Seconds": "{% $states.input.wait %}", "Next": "Stop"},
                "Stop": {
                    "Type": "Fail",
                    "Error": "{% 'Case.' & $states.input.code %}",
                    "Cause": "{% 'waited ' & $string($states.input.wait) & ' s' %}",
                },
            }
        ),
        {"wait": 3, "code": "Rejected"},
    )
    assert result["status"] == "FAILED"
    assert (result["error"], result["cause"]) == ("Case.Rejected", "waited 3 s")


def test_a_jsonata_state_inside_a_jsonpath_machine(make_engine: MakeEngine) -> None:
    result = run(
        make_engine,
        machine(
            {
                "Old": {
                    "Type": "Pass",
                    "Parameters": {"v.$": "$.v"},
                    "Assign": {"k": 1},
                    "Next": "New",
                },
                "New": {
                    "Type": "Pass",
                    "QueryLanguage": "JSONata",
                    "Output": {"v": "{% $states.input.v %}", "k": "{% $k %}"},
                    "End": True,
                },
            }
        ),
        {"v": "x"},
    )
    assert output(result) == {"v": "x", "k": 1}


@pytest.mark.parametrize(
    ("definition", "field", "message"),
    [
        (
            jsonata({"P": {"Type": "Pass", "QueryLanguage": "JSONPath", "End": True}}),
            "QueryLanguage",
            "cannot use JSONPath",
        ),
        (
            jsonata({"P": {"Type": "Pass", "InputPath": "$.a", "End": True}}),
            "InputPath",
            "JSONPath",
        ),
        (jsonata({"T": task("f", Parameters={})}), "Parameters", "JSONPath field"),
        (
            jsonata({"T": task("f", Arguments={"FunctionName": "f", "Nope": 1})}),
            "Arguments.Nope",
            "not supported",
        ),
        (
            jsonata(
                {
                    "C": {
                        "Type": "Choice",
                        "Choices": [{"Variable": "$.a", "IsPresent": True, "Next": "C"}],
                    }
                }
            ),
            "Choices[0].Variable",
            "Condition",
        ),
        (
            jsonata({"W": {"Type": "Wait", "SecondsPath": "$.s", "End": True}}),
            "SecondsPath",
            "JSONPath field",
        ),
    ],
)
def test_jsonata_refusals_name_state_and_field(
    definition: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(InvalidDefinition) as info:
        load(definition)
    assert info.value.field == field
    assert message in str(info.value)


def test_loading_jsonata_leaves_the_recursion_limit_alone() -> None:
    # jsonata-python raises it to 10,000 when imported; other parsers rely on the default.
    import sys

    before = sys.getrecursionlimit()
    load(jsonata({"P": {"Type": "Pass", "Output": "{% 1 + 1 %}", "End": True}}))
    assert sys.getrecursionlimit() == before


def test_an_evaluation_failure_is_recorded_before_the_state_fails(
    make_engine: MakeEngine,
) -> None:
    engine = make_engine({})
    arn = engine.create_state_machine(
        "evaluation",
        jsonata({"Shape": {"Type": "Pass", "Output": "{% $states.input.nope %}", "End": True}}),
    )
    result = engine.start_execution(arn, "e1", "{}")
    events = engine.get_execution_history(result["executionArn"])["events"]
    assert [e["type"] for e in events][-2:] == ["EvaluationFailed", "ExecutionFailed"]
    details = events[-2]["evaluationFailedEventDetails"]
    assert details["error"] == "States.QueryEvaluationError"
    assert (details["location"], details["state"]) == ("Output", "Shape")
    assert details["cause"] == result["cause"]
    assert details["cause"].startswith("An error occurred while executing the state 'Shape'")


def test_a_callback_task_reads_its_token_and_a_timeout_expression(
    make_engine: MakeEngine,
) -> None:
    tokens: list[str] = []

    def queue(event: Any, context: Any) -> Any:
        tokens.append(event["token"])
        return {}

    engine = make_engine({"queue": queue})
    arn = engine.create_state_machine(
        "callback",
        jsonata(
            {
                "Ask": task(
                    "queue",
                    Resource="arn:aws:states:::lambda:invoke.waitForTaskToken",
                    Arguments={
                        "FunctionName": "queue",
                        "Payload": {"token": "{% $states.context.Task.Token %}"},
                    },
                    TimeoutSeconds="{% $states.input.timeout %}",
                    Output={"answer": "{% $states.result.decision %}"},
                )
            }
        ),
    )
    started = engine.start_execution(arn, "e1", json.dumps({"timeout": 60}))
    assert started["status"] == "RUNNING"
    scheduled = next(
        e
        for e in engine.get_execution_history(started["executionArn"])["events"]
        if e["type"] == "TaskScheduled"
    )
    assert scheduled["taskScheduledEventDetails"]["timeoutInSeconds"] == 60
    done = engine.send_task_success(tokens[0], json.dumps({"decision": "approve"}))
    assert output(done) == {"answer": "approve"}
