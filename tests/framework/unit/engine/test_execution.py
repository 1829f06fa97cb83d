"""Running definitions: data flow, Retry/Catch, errors, every state type."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stepsaga._util.clock import ManualClock
from stepsaga.engine._models import DelayChosen, DelayKind, EngineEvent, HistoryRecorded
from stepsaga.errors import BusinessRejectedError, InvalidExecutionInput, TransientError
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script, count, entered, machine, task, types

RETRY = {
    "ErrorEquals": ["TransientError"],
    "IntervalSeconds": 2,
    "MaxAttempts": 3,
    "BackoffRate": 2.0,
    "MaxDelaySeconds": 5,
}


def test_happy_path_history_and_output(make_engine: MakeEngine) -> None:
    engine = make_engine({"reserve": Script({"id": "R1"}), "ship": Script({"id": "S1"})})
    arn = engine.create_state_machine(
        "order",
        machine(
            {
                "Reserve": task(
                    "reserve",
                    ResultSelector={"id.$": "$.Payload.id"},
                    ResultPath="$.reserve",
                    Next="Ship",
                ),
                "Ship": task(
                    "ship",
                    ResultSelector={"id.$": "$.Payload.id"},
                    ResultPath="$.ship",
                    Next="Done",
                ),
                "Done": {"Type": "Succeed"},
            }
        ),
    )
    result = engine.start_execution(arn, "case-1", json.dumps({"case": 1}))
    assert result["status"] == "SUCCEEDED"
    assert json.loads(result["output"]) == {
        "case": 1,
        "reserve": {"id": "R1"},
        "ship": {"id": "S1"},
    }
    assert types(engine, result["executionArn"]) == [
        "ExecutionStarted",
        *["TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited"]
        * 2,
        "SucceedStateEntered",
        "SucceedStateExited",
        "ExecutionSucceeded",
    ]
    events = engine.get_execution_history(result["executionArn"])["events"]
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    assert all(e["previousEventId"] == e["id"] - 1 for e in events)
    scheduled = events[2]["taskScheduledEventDetails"]
    assert scheduled["resourceType"] == "lambda"
    assert scheduled["resource"] == "invoke"
    assert json.loads(scheduled["parameters"]) == {
        "FunctionName": "reserve",
        "Payload": {"case": 1},
    }


def test_result_is_shaped_like_the_lambda_invoke_integration(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script({"ok": True})})
    arn = engine.create_state_machine("m", machine({"A": task("f", ResultPath="$.r")}))
    output = json.loads(engine.start_execution(arn, "e", {})["output"])["r"]
    assert set(output) == {
        "ExecutedVersion",
        "Payload",
        "SdkHttpMetadata",
        "SdkResponseMetadata",
        "StatusCode",
    }
    assert output["Payload"] == {"ok": True}
    assert output["StatusCode"] == 200
    assert output["SdkHttpMetadata"]["HttpStatusCode"] == 200


def test_input_output_paths_parameters_and_context(
    make_engine: MakeEngine, clock: ManualClock
) -> None:
    handler = Script({"done": True})
    engine = make_engine({"f": handler})
    parameters = {
        "FunctionName": "f",
        "Payload": {
            "item.$": "$.item",
            "execution.$": "$$.Execution.Id",
            "name.$": "$$.Execution.Name",
            "whole.$": "$$.Execution.Input",
            "started.$": "$$.Execution.StartTime",
            "state.$": "$$.State.Name",
            "retries.$": "$$.State.RetryCount",
            "machine.$": "$$.StateMachine.Name",
            "greeting.$": "States.Format('hello {}', $.item)",
            "static": [1, {"x": 2}],
        },
    }
    arn = engine.create_state_machine(
        "ctx",
        machine(
            {
                "A": task(
                    "f",
                    InputPath="$.order",
                    Parameters=parameters,
                    ResultPath=None,
                    OutputPath="$.order",
                    Next="B",
                ),
                "B": {"Type": "Pass", "Result": {"x": 1}, "ResultPath": "$.added", "End": True},
            }
        ),
    )
    result = engine.start_execution(arn, "run-1", {"order": {"item": "mug"}})
    event = handler.events[0]
    assert event["item"] == "mug"
    assert event["execution"] == result["executionArn"]
    assert event["name"] == "run-1"
    assert event["whole"] == {"order": {"item": "mug"}}
    assert event["started"] == "2026-11-29T12:00:00.000Z"
    assert (event["state"], event["retries"], event["machine"]) == ("A", 0, "ctx")
    assert event["greeting"] == "hello mug"
    assert event["static"] == [1, {"x": 2}]
    # ResultPath null keeps the raw input; OutputPath then picks part of it.
    assert json.loads(result["output"]) == {"item": "mug", "added": {"x": 1}}


def test_output_path_selects_a_scalar(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script("ok")})
    arn = engine.create_state_machine("m", machine({"A": task("f", OutputPath="$.Payload")}))
    assert engine.start_execution(arn, "e", {})["output"] == '"ok"'


def test_handler_exception_becomes_lambda_error(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script(BusinessRejectedError("shipment refused"))})
    arn = engine.create_state_machine("m", machine({"A": task("f")}))
    result = engine.start_execution(arn, "e", {})
    assert result["status"] == "FAILED"
    assert result["error"] == "BusinessRejectedError"
    cause = json.loads(result["cause"])
    assert cause["errorType"] == "BusinessRejectedError"
    assert cause["errorMessage"] == "shipment refused"
    assert cause["stackTrace"]
    assert "lambda_invoke" not in "".join(cause["stackTrace"])
    assert result["redriveStatus"] == "REDRIVABLE"
    assert types(engine, result["executionArn"])[-2:] == ["TaskFailed", "ExecutionFailed"]


def test_retry_then_success_records_delays_and_sleeps_scaled(
    make_engine: MakeEngine, clock: ManualClock
) -> None:
    handler = Script(TransientError("busy"), TransientError("busy"), {"ok": 1})
    engine = make_engine({"f": handler}, time_scale=0.5)
    arn = engine.create_state_machine("m", machine({"A": task("f", Retry=[RETRY])}))
    start = clock.now()
    result = engine.start_execution(arn, "e", {})
    assert result["status"] == "SUCCEEDED"
    assert count(engine, result["executionArn"], "TaskScheduled") == 3
    delays = engine.list_delays(result["executionArn"])
    assert [(d.kind, d.attempt, d.error, d.seconds) for d in delays] == [
        (DelayKind.RETRY, 1, "TransientError", 2.0),
        (DelayKind.RETRY, 2, "TransientError", 4.0),
    ]
    assert [d.slept for d in delays] == [1.0, 2.0]
    assert (clock.now() - start).total_seconds() == pytest.approx(3.0)


def test_retry_count_is_visible_in_the_context(make_engine: MakeEngine) -> None:
    handler = Script(TransientError("busy"), TransientError("busy"), {"ok": 1})
    engine = make_engine({"f": handler}, time_scale=0)
    parameters = {"FunctionName": "f", "Payload": {"retries.$": "$$.State.RetryCount"}}
    arn = engine.create_state_machine(
        "m", machine({"A": task("f", Parameters=parameters, Retry=[RETRY])})
    )
    engine.start_execution(arn, "e", {})
    assert [e["retries"] for e in handler.events] == [0, 1, 2]


def test_time_scale_zero_skips_waits_but_keeps_the_delays(
    make_engine: MakeEngine, clock: ManualClock
) -> None:
    slept: list[float] = []
    engine = make_engine(
        {"f": Script(TransientError("busy"), {"ok": 1})}, time_scale=0, sleeper=slept.append
    )
    arn = engine.create_state_machine(
        "m", machine({"A": task("f", Retry=[{**RETRY, "JitterStrategy": "FULL"}])})
    )
    execution = engine.start_execution(arn, "e", {})["executionArn"]
    assert slept == []
    (delay,) = engine.list_delays(execution)
    assert 0.0 <= delay.seconds <= 2.0
    assert delay.slept == 0.0


def test_retries_exhausted_are_not_caught_unless_a_catcher_matches(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script(TransientError("busy"))}, time_scale=0)
    arn = engine.create_state_machine(
        "m",
        machine(
            {
                "A": task(
                    "f",
                    Retry=[RETRY],
                    Catch=[{"ErrorEquals": ["BusinessRejectedError"], "Next": "Comp"}],
                ),
                "Comp": {"Type": "Pass", "End": True},
            }
        ),
    )
    result = engine.start_execution(arn, "e", {})
    assert (result["status"], result["error"]) == ("FAILED", "TransientError")
    assert count(engine, result["executionArn"], "TaskFailed") == 4  # 1 + MaxAttempts 3


def test_catch_routes_with_result_path(make_engine: MakeEngine) -> None:
    engine = make_engine(
        {"f": Script(BusinessRejectedError("no")), "undo": Script({"undone": True})}
    )
    arn = engine.create_state_machine(
        "m",
        machine(
            {
                "A": task(
                    "f",
                    Catch=[
                        {
                            "ErrorEquals": ["States.TaskFailed"],
                            "ResultPath": "$.error",
                            "Next": "Undo",
                        }
                    ],
                ),
                "Undo": task("undo", ResultPath=None, Next="Failed"),
                "Failed": {
                    "Type": "Fail",
                    "Error": "Saga.Compensated",
                    "CausePath": "$.error.Error",
                },
            }
        ),
    )
    result = engine.start_execution(arn, "e", {"k": 1})
    assert (result["status"], result["error"], result["cause"]) == (
        "FAILED",
        "Saga.Compensated",
        "BusinessRejectedError",
    )
    assert entered(engine, result["executionArn"]) == ["A", "Undo", "Failed"]
    exited = [
        e
        for e in engine.get_execution_history(result["executionArn"])["events"]
        if e["type"] == "TaskStateExited"
    ]
    caught = json.loads(exited[0]["stateExitedEventDetails"]["output"])
    assert caught["k"] == 1
    assert caught["error"]["Error"] == "BusinessRejectedError"


def test_runtime_errors_are_not_caught_by_states_all(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script({})})
    arn = engine.create_state_machine(
        "m",
        machine(
            {
                "A": task(
                    "f", InputPath="$.missing", Catch=[{"ErrorEquals": ["States.ALL"], "Next": "B"}]
                ),
                "B": {"Type": "Succeed"},
            }
        ),
    )
    result = engine.start_execution(arn, "e", {})
    assert result["error"] == "States.Runtime"
    assert "'A'" in result["cause"]
    assert "$.missing" in result["cause"]


def test_result_path_failure_is_catchable(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script({})})
    arn = engine.create_state_machine(
        "m",
        machine(
            {
                "A": task(
                    "f",
                    ResultPath="$.text.inner",
                    Catch=[
                        {
                            "ErrorEquals": ["States.ResultPathMatchFailure"],
                            "ResultPath": "$.err",
                            "Next": "B",
                        }
                    ],
                ),
                "B": {"Type": "Succeed"},
            }
        ),
    )
    result = engine.start_execution(arn, "e", {"text": "scalar"})
    assert result["status"] == "SUCCEEDED"
    assert json.loads(result["output"])["err"]["Error"] == "States.ResultPathMatchFailure"


def test_choice_default_and_no_match(make_engine: MakeEngine) -> None:
    engine = make_engine()
    choice = {
        "Type": "Choice",
        "Choices": [
            {"Variable": "$.n", "NumericGreaterThan": 10, "Next": "Big"},
            {
                "And": [
                    {"Variable": "$.n", "IsPresent": True},
                    {"Variable": "$.n", "NumericLessThan": 0},
                ],
                "Next": "Neg",
            },
        ],
        "Default": "Small",
    }
    states = {
        "C": choice,
        "Big": {"Type": "Succeed"},
        "Neg": {"Type": "Succeed"},
        "Small": {"Type": "Succeed"},
    }
    arn = engine.create_state_machine("m", machine(states))
    for n, expected in ((11, "Big"), (-1, "Neg"), (3, "Small")):
        execution = engine.start_execution(arn, f"e{n + 5}", {"n": n})["executionArn"]
        assert entered(engine, execution) == ["C", expected]
    no_default = engine.create_state_machine(
        "nd",
        machine(
            {
                "C": {k: v for k, v in choice.items() if k != "Default"},
                **{k: v for k, v in states.items() if k != "C" and k != "Small"},
            }
        ),
    )
    result = engine.start_execution(no_default, "e", {"n": 3})
    assert result["error"] == "States.NoChoiceMatched"
    assert types(engine, result["executionArn"]) == [
        "ExecutionStarted",
        "ChoiceStateEntered",
        "ExecutionFailed",
    ]


def test_pass_parameters_and_result(make_engine: MakeEngine) -> None:
    engine = make_engine()
    arn = engine.create_state_machine(
        "m",
        machine(
            {
                "P1": {
                    "Type": "Pass",
                    "Parameters": {"copy.$": "$.a", "arr.$": "States.Array($.a, 2)"},
                    "Next": "P2",
                },
                "P2": {"Type": "Pass", "Result": "r", "ResultPath": "$.result", "End": True},
            }
        ),
    )
    result = engine.start_execution(arn, "e", {"a": 1})
    assert json.loads(result["output"]) == {"copy": 1, "arr": [1, 2], "result": "r"}
    assert types(engine, result["executionArn"]).count("PassStateExited") == 2


def test_wait_states_record_and_sleep(make_engine: MakeEngine, clock: ManualClock) -> None:
    engine = make_engine()
    arn = engine.create_state_machine(
        "m",
        machine(
            {
                "W1": {"Type": "Wait", "Seconds": 30, "Next": "W2"},
                "W2": {"Type": "Wait", "SecondsPath": "$.s", "Next": "W3"},
                "W3": {"Type": "Wait", "TimestampPath": "$.until", "End": True},
            }
        ),
    )
    start = clock.now()
    result = engine.start_execution(arn, "e", {"s": 5, "until": "2026-11-29T12:10:00Z"})
    assert result["status"] == "SUCCEEDED"
    delays = engine.list_delays(result["executionArn"])
    assert [(d.kind, d.state_name, d.seconds) for d in delays] == [
        (DelayKind.WAIT, "W1", 30.0),
        (DelayKind.WAIT, "W2", 5.0),
        (DelayKind.WAIT, "W3", 565.0),
    ]
    assert (clock.now() - start).total_seconds() == pytest.approx(600.0)


def test_fail_state_paths(make_engine: MakeEngine) -> None:
    engine = make_engine()
    arn = engine.create_state_machine(
        "m",
        machine(
            {
                "F": {
                    "Type": "Fail",
                    "ErrorPath": "$.e",
                    "CausePath": "States.Format('case {}', $.c)",
                }
            }
        ),
    )
    result = engine.start_execution(arn, "e", {"e": "Saga.Compensated", "c": 7})
    assert (result["error"], result["cause"]) == ("Saga.Compensated", "case 7")
    assert types(engine, result["executionArn"]) == [
        "ExecutionStarted",
        "FailStateEntered",
        "ExecutionFailed",
    ]


def test_slow_handler_times_out(make_engine: MakeEngine, clock: ManualClock) -> None:
    def slow(event: Any, context: Any) -> Any:
        clock.advance(5)
        return {"late": True}

    engine = make_engine({"slow": slow})
    arn = engine.create_state_machine(
        "m",
        machine(
            {
                "A": task(
                    "slow",
                    TimeoutSeconds=3,
                    Retry=[{"ErrorEquals": ["States.Timeout"], "MaxAttempts": 1}],
                )
            }
        ),
    )
    result = engine.start_execution(arn, "e", {})
    assert (result["status"], result["error"]) == ("FAILED", "States.Timeout")
    assert count(engine, result["executionArn"], "TaskTimedOut") == 2


def test_unserializable_result_is_a_marshal_error(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script(object())})
    arn = engine.create_state_machine("m", machine({"A": task("f")}))
    assert engine.start_execution(arn, "e", {})["error"] == "Runtime.MarshalError"


def test_handlers_resolve_by_arn_and_substitutions(make_engine: MakeEngine) -> None:
    engine = make_engine({"reserve-fn": Script({"ok": 1})})
    definition = machine({"A": task("${ReserveFunctionArn}")})
    arn = engine.create_state_machine(
        "m",
        definition,
        substitutions={
            "ReserveFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:reserve-fn"
        },
    )
    assert engine.start_execution(arn, "e", {})["status"] == "SUCCEEDED"


def test_a_missing_static_handler_is_refused_at_start(make_engine: MakeEngine) -> None:
    engine = make_engine({})
    arn = engine.create_state_machine("m", machine({"A": task("nobody")}))
    with pytest.raises(InvalidExecutionInput, match="nobody"):
        engine.start_execution(arn, "e", {})
    assert engine.list_executions()["executions"] == []


def test_a_missing_dynamic_handler_is_a_catchable_lambda_error(make_engine: MakeEngine) -> None:
    engine = make_engine({})
    state = task(
        "x",
        Parameters={"FunctionName.$": "$.fn"},
        Catch=[{"ErrorEquals": ["States.ALL"], "Next": "B"}],
    )
    arn = engine.create_state_machine("m", machine({"A": state, "B": {"Type": "Succeed"}}))
    result = engine.start_execution(arn, "e", {"fn": "ghost"})
    assert json.loads(result["output"])["Error"] == "Lambda.ResourceNotFoundException"


def test_handlers_get_their_own_copy_of_the_payload(make_engine: MakeEngine) -> None:
    def mutate(event: Any, context: Any) -> Any:
        event["evil"] = True
        return None

    engine = make_engine({"f": mutate})
    arn = engine.create_state_machine("m", machine({"A": task("f", ResultPath=None)}))
    assert json.loads(engine.start_execution(arn, "e", {"a": 1})["output"]) == {"a": 1}


def test_on_event_sees_history_and_delays_and_cannot_break_a_run(make_engine: MakeEngine) -> None:
    seen: list[EngineEvent] = []

    def on_event(event: EngineEvent) -> None:
        seen.append(event)
        raise RuntimeError("display bug")

    engine = make_engine({"f": Script(TransientError("x"), {"ok": 1})}, on_event=on_event)
    arn = engine.create_state_machine("m", machine({"A": task("f", Retry=[RETRY])}))
    result = engine.start_execution(arn, "e", {})
    assert result["status"] == "SUCCEEDED"
    history = [e.event["type"] for e in seen if isinstance(e, HistoryRecorded)]
    assert history == types(engine, result["executionArn"])
    (delay,) = [e.delay for e in seen if isinstance(e, DelayChosen)]
    assert (delay.state_name, delay.seconds) == ("A", 2.0)
