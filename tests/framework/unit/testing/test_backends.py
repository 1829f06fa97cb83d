"""Backends: the engine with strict handlers; a Step Functions API driven through boto3."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from mypy_boto3_stepfunctions import SFNClient

from stepsaga._project.home import StateHome
from stepsaga.engine import LocalEngine
from stepsaga.testing import EngineBackend, MockConfigBuilder, Return, StepFunctionsBackend
from stepsaga.testing._backends import lambda_arn, strict_handlers

MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:m"
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:m:e1"
NOW = datetime(2026, 11, 29, tzinfo=UTC)
TWO_TASKS = {
    "StartAt": "A",
    "States": {
        "A": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": lambda_arn("A"), "Payload.$": "$"},
            "Retry": [
                {
                    "ErrorEquals": ["E"],
                    "MaxAttempts": 2,
                    "MaxDelaySeconds": 5,
                    "JitterStrategy": "FULL",
                }
            ],
            "Next": "B",
        },
        "B": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": lambda_arn("B"), "Payload.$": "$"},
            "End": True,
        },
    },
}


# --- strict handlers on the engine --------------------------------------------------------


def make_engine(tmp_path: Path, handlers: dict[str, Any], mocks: MockConfigBuilder) -> LocalEngine:
    return LocalEngine(
        StateHome(tmp_path / "home"),
        strict_handlers(handlers),
        time_scale=0,
        mock_config=mocks.build(),
    )


def test_mocked_states_and_own_handlers_mix(tmp_path: Path) -> None:
    mocks = MockConfigBuilder().test_case("m", "c", {"A": Return.payload({"a": 1})})
    calls: list[Any] = []

    def b(event: Any, context: Any) -> str:
        calls.append(event)
        return "b"

    with make_engine(tmp_path, {"B": b}, mocks) as e:
        backend = EngineBackend(e)
        execution = backend.run(backend.deploy("m", TWO_TASKS), {"x": 1}, test_case="c")
    assert execution.status == "SUCCEEDED"
    assert execution.output["Payload"] == "b"
    assert calls == [{"StatusCode": 200, "Payload": {"a": 1}}]
    assert execution.history.path == ("A", "B")


def test_a_state_nobody_mocked_fails_loudly(tmp_path: Path) -> None:
    mocks = MockConfigBuilder().test_case("m", "c", {"A": Return.payload({})})
    with make_engine(tmp_path, {}, mocks) as engine:
        backend = EngineBackend(engine)
        execution = backend.run(backend.deploy("m", TWO_TASKS), {}, test_case="c")
    assert (execution.status, execution.error) == ("FAILED", "StateNotMockedError")
    assert "invoked function 'B': the test case does not mock it" in str(execution.cause)


def test_strict_handlers_resolve_names_and_arns() -> None:
    def handler(event: Any, context: Any) -> str:
        return "mine"

    registry = strict_handlers({"Mine": handler})
    assert registry["Mine"] is handler
    assert registry[lambda_arn("Mine")] is handler
    assert registry[lambda_arn("Mine") + ":live"] is handler
    assert list(registry) == ["Mine"]
    assert len(registry) == 1
    with pytest.raises(Exception, match="state 'S' invoked function 'Other'") as failure:
        registry[lambda_arn("Other")]({"execution": {"state": "S"}}, None)
    assert type(failure.value).__name__ == "StateNotMockedError"


# --- a Step Functions API (stubbed boto3) ---------------------------------------------------


@pytest.fixture
def client() -> SFNClient:
    return boto3.client("stepfunctions", region_name="us-east-1")


@pytest.fixture
def stub(client: SFNClient) -> Iterator[Stubber]:
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def described(status: str, **extra: Any) -> dict[str, Any]:
    return {
        "executionArn": EXECUTION,
        "stateMachineArn": MACHINE,
        "status": status,
        "startDate": NOW,
        **extra,
    }


def event(i: int, kind: str, **details: Any) -> dict[str, Any]:
    e: dict[str, Any] = {"id": i, "previousEventId": i - 1, "type": kind, "timestamp": NOW}
    if kind.endswith("StateEntered"):
        e["stateEnteredEventDetails"] = details
    elif details:
        e[kind[0].lower() + kind[1:] + "EventDetails"] = details
    return e


def test_run_polls_until_the_end_and_reads_every_history_page(
    client: SFNClient, stub: Stubber
) -> None:
    stub.add_response(
        "start_execution",
        {"executionArn": EXECUTION, "startDate": NOW},
        {"stateMachineArn": MACHINE + "#HappyPath", "name": "e1", "input": '{"x": 1}'},
    )
    stub.add_response("describe_execution", described("RUNNING"), {"executionArn": EXECUTION})
    stub.add_response(
        "describe_execution",
        described("FAILED", error="Saga.Compensated", cause="c"),
        {"executionArn": EXECUTION},
    )
    stub.add_response(
        "get_execution_history",
        {
            "events": [event(1, "ExecutionStarted"), event(2, "TaskStateEntered", name="A")],
            "nextToken": "t",
        },
        {"executionArn": EXECUTION},
    )
    stub.add_response(
        "get_execution_history",
        {"events": [event(3, "ExecutionFailed", error="Saga.Compensated")]},
        {"executionArn": EXECUTION, "nextToken": "t"},
    )
    execution = StepFunctionsBackend(client, poll_interval=0).run(
        MACHINE, {"x": 1}, test_case="HappyPath", name="e1"
    )
    assert (execution.status, execution.error, execution.cause) == (
        "FAILED",
        "Saga.Compensated",
        "c",
    )
    assert execution.output is None
    assert execution.history.path == ("A",)
    assert execution.history.outcome.error == "Saga.Compensated"


def test_run_gives_up_after_its_timeout_and_shows_the_path_so_far(
    client: SFNClient, stub: Stubber
) -> None:
    stub.add_response("start_execution", {"executionArn": EXECUTION, "startDate": NOW})
    stub.add_response("describe_execution", described("RUNNING"))
    stub.add_response(
        "get_execution_history", {"events": [event(1, "TaskStateEntered", name="AwaitDecision")]}
    )
    backend = StepFunctionsBackend(client, timeout=0, poll_interval=0)
    with pytest.raises(
        TimeoutError, match=r"still RUNNING after 0 s; so far:\n  1\. AwaitDecision"
    ):
        backend.run(MACHINE, {})


def test_output_is_parsed(client: SFNClient, stub: Stubber) -> None:
    stub.add_response("start_execution", {"executionArn": EXECUTION, "startDate": NOW})
    stub.add_response("describe_execution", described("SUCCEEDED", output='{"done": true}'))
    stub.add_response("get_execution_history", {"events": []})
    assert StepFunctionsBackend(client).run(MACHINE, {}).output == {"done": True}


def test_deploy_updates_an_existing_machine(client: SFNClient, stub: Stubber) -> None:
    text = json.dumps(TWO_TASKS)
    stub.add_client_error("create_state_machine", "StateMachineAlreadyExists")
    stub.add_response(
        "update_state_machine",
        {"updateDate": NOW},
        {"stateMachineArn": MACHINE, "definition": text},
    )
    assert StepFunctionsBackend(client).deploy("m", TWO_TASKS) == MACHINE


def test_deploy_drops_retrier_fields_an_old_emulator_refuses(
    client: SFNClient, stub: Stubber
) -> None:
    stub.add_client_error(
        "create_state_machine",
        "InvalidDefinition",
        "ASLParserException: mismatched input '\"JitterStrategy\"'",
    )
    stripped = json.loads(json.dumps(TWO_TASKS))
    stripped["States"]["A"]["Retry"][0] = {"ErrorEquals": ["E"], "MaxAttempts": 2}
    stub.add_response(
        "create_state_machine",
        {"stateMachineArn": MACHINE, "creationDate": NOW},
        {"name": "m", "definition": json.dumps(stripped), "roleArn": ANY},
    )
    with pytest.warns(UserWarning, match="refuses JitterStrategy/MaxDelaySeconds"):
        assert StepFunctionsBackend(client).deploy("m", TWO_TASKS) == MACHINE


def test_other_invalid_definitions_are_raised(client: SFNClient, stub: Stubber) -> None:
    stub.add_client_error("create_state_machine", "InvalidDefinition", "no StartAt")
    with pytest.raises(client.exceptions.InvalidDefinition):
        StepFunctionsBackend(client).deploy("m", TWO_TASKS)


def test_deploy_saga_fills_function_arns_for_the_backend(client: SFNClient, stub: Stubber) -> None:
    from workflows.replacement_order import saga

    sent: dict[str, Any] = {}
    client.meta.events.register(
        "provide-client-params.stepfunctions.CreateStateMachine",
        lambda params, **_: sent.update(params),
    )
    stub.add_response("create_state_machine", {"stateMachineArn": MACHINE, "creationDate": NOW})
    StepFunctionsBackend(client, account="111122223333").deploy_saga(saga)
    definition = json.loads(sent["definition"])
    assert sent["name"] == "replacement-order"
    assert "${" not in sent["definition"]
    assert definition["States"]["ReserveStock"]["Parameters"]["FunctionName"] == (
        "arn:aws:lambda:us-east-1:111122223333:function:ReserveStock"
    )
    assert definition["States"]["ReconcileReserveStock"]["Parameters"]["FunctionName"] == (
        lambda_arn("Reconcile", account="111122223333")
    )


def test_every_public_name_of_stepsaga_testing_resolves() -> None:
    import stepsaga.testing as testing

    missing = [name for name in testing.__all__ if not hasattr(testing, name)]
    assert missing == []


def test_retry_delays_are_capped_everywhere_attempts_kept() -> None:
    from stepsaga.testing._backends import cap_retry_delays

    retrier = {"ErrorEquals": ["E"], "IntervalSeconds": 3, "MaxAttempts": 7, "BackoffRate": 2.0}
    inner: dict[str, Any] = {
        "StartAt": "T",
        "States": {"T": {"Type": "Task", "Retry": [dict(retrier)]}},
    }
    machine: dict[str, Any] = {
        "StartAt": "P",
        "States": {
            "P": {"Type": "Parallel", "Branches": [inner], "Retry": [dict(retrier)]},
            "M": {"Type": "Map", "ItemProcessor": inner},
        },
    }
    capped = cap_retry_delays(machine, 1)
    for found in (
        capped["States"]["P"]["Retry"][0],
        capped["States"]["P"]["Branches"][0]["States"]["T"]["Retry"][0],
        capped["States"]["M"]["ItemProcessor"]["States"]["T"]["Retry"][0],
    ):
        assert (found["IntervalSeconds"], found["MaxDelaySeconds"]) == (1, 1)
        assert (found["MaxAttempts"], found["BackoffRate"]) == (7, 2.0)
    assert machine["States"]["P"]["Retry"][0]["IntervalSeconds"] == 3  # the input is kept
