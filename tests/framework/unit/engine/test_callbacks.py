"""``.waitForTaskToken``: the execution waits durably and resumes on the callback."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stepsaga._util.clock import ManualClock
from stepsaga.engine import LocalEngine
from stepsaga.engine._definition import LAMBDA_INVOKE_WAIT
from stepsaga.errors import InvalidOutput, InvalidToken, TaskDoesNotExist, TaskTimedOut
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script, entered, machine, task, types

TOKEN_PAYLOAD = {
    "FunctionName": "escalate",
    "Payload": {"token.$": "$$.Task.Token", "case.$": "$.case"},
}


def waiting_machine(**fields: Any) -> dict[str, Any]:
    return machine(
        {
            "Reconcile": task(
                "escalate",
                Resource=LAMBDA_INVOKE_WAIT,
                Parameters=TOKEN_PAYLOAD,
                ResultPath="$.decision",
                Next="Decide",
                **fields,
            ),
            "Decide": {
                "Type": "Choice",
                "Choices": [
                    {"Variable": "$.decision.applied", "BooleanEquals": True, "Next": "Done"}
                ],
                "Default": "Retry",
            },
            "Retry": {"Type": "Pass", "End": True},
            "Done": {"Type": "Succeed"},
        }
    )


def start_waiting(engine: LocalEngine, handler: Script, **fields: Any) -> tuple[str, str]:
    arn = engine.create_state_machine("recon", waiting_machine(**fields))
    result = engine.start_execution(arn, "case-9", {"case": 9})
    assert result["status"] == "RUNNING"
    return result["executionArn"], handler.events[-1]["token"]


def test_waits_then_resumes_on_success(make_engine: MakeEngine) -> None:
    handler = Script({"queued": True})
    engine = make_engine({"escalate": handler})
    execution, token = start_waiting(engine, handler)
    assert types(engine, execution)[-3:] == ["TaskScheduled", "TaskStarted", "TaskSubmitted"]
    (waiting,) = engine.list_waiting_tasks()
    assert (waiting.task_token, waiting.state_name, waiting.execution_arn) == (
        token,
        "Reconcile",
        execution,
    )

    result = engine.send_task_success(token, json.dumps({"applied": True}))
    assert result["status"] == "SUCCEEDED"
    assert json.loads(result["output"])["decision"] == {"applied": True}
    assert entered(engine, execution) == ["Reconcile", "Decide", "Done"]
    assert engine.list_waiting_tasks() == []
    with pytest.raises(TaskTimedOut):
        engine.send_task_success(token, "{}")


def test_resumes_in_another_engine_instance(make_engine: MakeEngine) -> None:
    handler = Script({})
    first = make_engine({"escalate": handler})
    execution, token = start_waiting(first, handler)
    second = make_engine({"escalate": handler})
    assert second.send_task_success(token, {"applied": False})["status"] == "SUCCEEDED"
    assert entered(second, execution)[-1] == "Retry"


def test_failure_goes_through_catch(make_engine: MakeEngine) -> None:
    handler = Script({})
    engine = make_engine({"escalate": handler})
    catch = [{"ErrorEquals": ["Operator.Rejected"], "ResultPath": "$.error", "Next": "Done"}]
    _execution, token = start_waiting(engine, handler, Catch=catch)
    result = engine.send_task_failure(token, "Operator.Rejected", "not ours")
    assert result["status"] == "SUCCEEDED"
    assert json.loads(result["output"])["error"] == {
        "Error": "Operator.Rejected",
        "Cause": "not ours",
    }


def test_timeout_fires_and_retries_with_a_new_token(
    make_engine: MakeEngine, clock: ManualClock
) -> None:
    handler = Script({})
    engine = make_engine({"escalate": handler})
    retry = [{"ErrorEquals": ["States.Timeout"], "IntervalSeconds": 1, "MaxAttempts": 1}]
    execution, token = start_waiting(engine, handler, TimeoutSeconds=60, Retry=retry)
    assert engine.run_due_timers() == []
    clock.advance(61)
    assert engine.run_due_timers() == [execution]
    assert types(engine, execution).count("TaskTimedOut") == 1
    new_token = handler.events[-1]["token"]
    assert new_token != token
    with pytest.raises(TaskTimedOut):
        engine.send_task_success(token, "{}")
    clock.advance(61)
    with pytest.raises(TaskTimedOut, match="timed out"):
        engine.send_task_success(new_token, "{}")
    result = engine.describe_execution(execution)
    assert (result["status"], result["error"]) == ("FAILED", "States.Timeout")


def test_heartbeats_keep_a_task_alive(make_engine: MakeEngine, clock: ManualClock) -> None:
    handler = Script({})
    engine = make_engine({"escalate": handler})
    execution, token = start_waiting(engine, handler, TimeoutSeconds=100, HeartbeatSeconds=10)
    for _ in range(3):
        clock.advance(8)
        engine.send_task_heartbeat(token)
    assert engine.run_due_timers() == []
    clock.advance(11)
    assert engine.run_due_timers() == [execution]
    assert engine.describe_execution(execution)["error"] == "States.HeartbeatTimeout"


def test_a_handler_may_answer_its_own_token(make_engine: MakeEngine) -> None:
    engines: list[LocalEngine] = []

    def answer_now(event: Any, context: Any) -> Any:
        engines[0].send_task_success(event["token"], {"applied": True})
        return {}

    engine = make_engine({"escalate": answer_now})
    engines.append(engine)
    arn = engine.create_state_machine("recon", waiting_machine())
    result = engine.start_execution(arn, "e", {"case": 1})
    assert result["status"] == "SUCCEEDED"
    assert types(engine, result["executionArn"]).count("TaskSucceeded") == 1


def test_a_failing_invocation_fails_the_task_and_cancels_its_token(make_engine: MakeEngine) -> None:
    engine = make_engine({"escalate": Script(RuntimeError("down"))})
    arn = engine.create_state_machine("recon", waiting_machine())
    result = engine.start_execution(arn, "e", {"case": 1})
    assert (result["status"], result["error"]) == ("FAILED", "RuntimeError")
    assert engine.list_waiting_tasks() == []


def test_stopping_a_waiting_execution_cancels_the_token(make_engine: MakeEngine) -> None:
    handler = Script({})
    engine = make_engine({"escalate": handler})
    execution, token = start_waiting(engine, handler)
    result = engine.stop_execution(execution, error="Operator.Stop", cause="by hand")
    assert (result["status"], result["error"], result["cause"]) == (
        "ABORTED",
        "Operator.Stop",
        "by hand",
    )
    assert types(engine, execution)[-2:] == ["TaskStateAborted", "ExecutionAborted"]
    with pytest.raises(TaskTimedOut):
        engine.send_task_success(token, "{}")


def test_bad_tokens_and_outputs(make_engine: MakeEngine) -> None:
    handler = Script({})
    engine = make_engine({"escalate": handler})
    _, token = start_waiting(engine, handler)
    with pytest.raises(InvalidToken):
        engine.send_task_success("garbage", "{}")
    with pytest.raises(TaskDoesNotExist):
        engine.send_task_success("sst1." + "0" * 48, "{}")
    with pytest.raises(InvalidOutput):
        engine.send_task_success(token, "{not json")
