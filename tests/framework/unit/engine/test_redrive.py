"""Redrive: from the failed state, with its input, counters reset, history kept."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from stepsaga._util.clock import ManualClock
from stepsaga.errors import ExecutionNotRedrivable, TransientError
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script, count, entered, machine, task, types

RETRY = [{"ErrorEquals": ["TransientError"], "IntervalSeconds": 1, "MaxAttempts": 2}]


def test_redrive_restarts_at_the_failed_state_only(make_engine: MakeEngine) -> None:
    first = Script({"id": "R"})
    flaky = Script(
        TransientError("1"),
        TransientError("2"),
        TransientError("3"),
        TransientError("4"),
        {"ok": 1},
    )
    engine = make_engine({"reserve": first, "refund": flaky}, time_scale=0)
    arn = engine.create_state_machine(
        "order",
        machine(
            {
                "Reserve": task(
                    "reserve",
                    ResultSelector={"id.$": "$.Payload.id"},
                    ResultPath="$.r",
                    Next="Refund",
                ),
                "Refund": task("refund", Retry=RETRY, ResultPath="$.f", Next="Done"),
                "Done": {"Type": "Succeed"},
            }
        ),
    )
    failed = engine.start_execution(arn, "e", {"case": 1})
    assert (failed["status"], failed["error"], failed["redriveCount"]) == (
        "FAILED",
        "TransientError",
        0,
    )
    execution = failed["executionArn"]
    refund_input = flaky.events[0]
    assert count(engine, execution, "TaskFailed") == 3

    redriven = engine.redrive_execution(execution)
    assert redriven["status"] == "SUCCEEDED"
    assert redriven["redriveCount"] == 1
    assert "redriveDate" in redriven
    assert len(first.events) == 1  # Reserve did not run again
    assert flaky.events[3] == refund_input  # same input as the failed state had
    history = types(engine, execution)
    assert history.count("ExecutionRedriven") == 1
    after = history[history.index("ExecutionRedriven") :]
    assert after.count("TaskFailed") == 1  # retry counters reset: 1 failure, then success
    assert entered(engine, execution) == ["Reserve", "Refund", "Refund", "Done"]
    event = next(
        e
        for e in engine.get_execution_history(execution)["events"]
        if e["type"] == "ExecutionRedriven"
    )
    assert event["executionRedrivenEventDetails"] == {"redriveCount": 1}
    assert json.loads(redriven["output"])["r"] == {"id": "R"}
    assert [d.attempt for d in engine.list_delays(execution)] == [1, 2, 1]


def test_only_unsuccessful_executions_can_be_redriven(make_engine: MakeEngine) -> None:
    engine = make_engine({"f": Script({})})
    arn = engine.create_state_machine("m", machine({"A": task("f")}))
    done = engine.start_execution(arn, "e", {})
    with pytest.raises(ExecutionNotRedrivable, match="SUCCEEDED"):
        engine.redrive_execution(done["executionArn"])
    assert done["redriveStatusReason"] == "Execution is SUCCEEDED and cannot be redriven"


def test_stop_requested_while_running_then_redrive(make_engine: MakeEngine) -> None:
    handler = Script({})
    engine = make_engine({"f": handler})
    arn = engine.create_state_machine(
        "m", machine({"W": {"Type": "Wait", "Seconds": 5, "Next": "A"}, "A": task("f")})
    )
    execution_arn = engine.state_machine_arn("m").replace(":stateMachine:", ":execution:") + ":e"

    def stop_while_waiting(seconds: float) -> None:
        # Another engine asks to stop; the live owner honours it at its next checkpoint.
        make_engine({"f": handler}).stop_execution(execution_arn, error="Ops.Stop")

    engine.services = replace(engine.services, sleeper=stop_while_waiting)
    stopped = engine.start_execution(arn, "e", {})
    assert (stopped["status"], stopped["error"]) == ("ABORTED", "Ops.Stop")
    assert types(engine, execution_arn)[-2:] == ["TaskStateAborted", "ExecutionAborted"]
    assert handler.events == []

    assert engine.redrive_execution(execution_arn)["status"] == "SUCCEEDED"
    assert entered(engine, execution_arn) == ["W", "A", "A"]


def test_an_execution_stopped_more_than_14_days_ago_is_not_redrivable(
    make_engine: MakeEngine, clock: ManualClock
) -> None:
    """RedriveExecution takes executions that ended "in the last 14 days" (AWS API reference),
    and DescribeExecution says why once the period is over."""
    engine = make_engine({"refund": Script(TransientError("down"), {"ok": 1})}, time_scale=0)
    arn = engine.create_state_machine("order", machine({"Refund": task("refund", End=True)}))
    execution = engine.start_execution(arn, "e", {"case": 1})["executionArn"]

    clock.advance(timedelta(days=14))
    assert engine.describe_execution(execution)["redriveStatus"] == "REDRIVABLE"
    clock.advance(timedelta(seconds=1))
    described = engine.describe_execution(execution)
    assert (described["redriveStatus"], described["redriveStatusReason"]) == (
        "NOT_REDRIVABLE",
        "Execution redrivable period exceeded.",
    )
    with pytest.raises(ExecutionNotRedrivable, match="redrivable period exceeded"):
        engine.redrive_execution(execution)
    assert engine.describe_execution(execution)["status"] == "FAILED"
