"""The 256 KiB payload quota (UTF-8 bytes): state input and output, task parameters and
results, a Parallel/Map's combined result, ``Assign``; ``States.DataLimitExceeded``, which
only a retrier or catcher naming it handles (not ``States.ALL``)."""

from __future__ import annotations

from typing import Any

import pytest

from stepsaga.engine import LocalEngine
from stepsaga.engine._quotas import PAYLOAD_BYTES
from stepsaga.errors import InvalidExecutionInput, InvalidOutput
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script, machine, task, types

KB100 = "x" * 100_000
CATCH_ALL = [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}]
CAUGHT = {"Caught": {"Type": "Pass", "End": True}}


def run(engine: LocalEngine, definition: dict[str, Any], payload: Any = None) -> dict[str, Any]:
    arn = engine.create_state_machine("quota", definition)
    return engine.start_execution(arn, "e", payload if payload is not None else {})


def branches(count: int) -> list[dict[str, Any]]:
    """``count`` branches, each giving 100 KB."""
    return [
        machine({f"P{i}": {"Type": "Pass", "Result": KB100, "End": True}}) for i in range(count)
    ]


def fan_in(**fields: Any) -> dict[str, Any]:
    return machine(
        {"Fan": {"Type": "Parallel", "Branches": branches(3), "End": True, **fields}, **CAUGHT}
    )


def test_a_parallel_fan_in_over_256_kib_fails_and_states_all_does_not_catch_it(
    make_engine: MakeEngine,
) -> None:
    engine = make_engine()
    done = run(engine, fan_in(Catch=CATCH_ALL))
    assert (done["status"], done["error"]) == ("FAILED", "States.DataLimitExceeded")
    assert "Fan" in done["cause"]
    assert types(engine, done["executionArn"])[-2:] == ["ParallelStateFailed", "ExecutionFailed"]


def test_a_catcher_naming_the_error_catches_it(make_engine: MakeEngine) -> None:
    catch = [{"ErrorEquals": ["States.DataLimitExceeded"], "ResultPath": None, "Next": "Caught"}]
    done = run(make_engine(), fan_in(Catch=catch))
    assert done["status"] == "SUCCEEDED"


def test_two_branches_of_100_kb_fit(make_engine: MakeEngine) -> None:
    definition = machine({"Fan": {"Type": "Parallel", "Branches": branches(2), "End": True}})
    assert run(make_engine(), definition)["status"] == "SUCCEEDED"


def test_a_task_result_over_the_quota_is_not_retried_by_states_all(
    make_engine: MakeEngine,
) -> None:
    big = Script({"blob": "y" * PAYLOAD_BYTES})
    engine = make_engine({"big": big})
    retry = [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 3}]
    done = run(engine, machine({"T": task("big", Retry=retry)}))
    assert (done["status"], done["error"]) == ("FAILED", "States.DataLimitExceeded")
    assert len(big.events) == 1
    assert "TaskSucceeded" not in types(engine, done["executionArn"])


@pytest.mark.parametrize(
    ("text", "fits"),
    [
        ("a" * (PAYLOAD_BYTES - 2), True),  # with its quotes: exactly the quota
        ("a" * (PAYLOAD_BYTES - 1), False),
        ("é" * (PAYLOAD_BYTES // 2 - 1), True),  # two bytes a character in UTF-8
        ("é" * (PAYLOAD_BYTES // 2), False),
    ],
    ids=["ascii-at", "ascii-over", "utf8-at", "utf8-over"],
)
def test_state_output_is_measured_in_utf8_bytes(
    make_engine: MakeEngine, text: str, fits: bool
) -> None:
    done = run(make_engine(), machine({"P": {"Type": "Pass", "Result": text, "End": True}}))
    assert done["status"] == ("SUCCEEDED" if fits else "FAILED")
    if not fits:
        assert done["error"] == "States.DataLimitExceeded"


def test_an_assign_over_the_quota_fails_the_state(make_engine: MakeEngine) -> None:
    definition = machine(
        {
            "P": {
                "Type": "Pass",
                "Result": {"a": KB100, "b": KB100, "c": KB100},
                "ResultPath": None,
                "Assign": {"a.$": "$.a", "b.$": "$.b", "c.$": "$.c"},
                "End": True,
            }
        }
    )
    done = run(make_engine(), definition, {"a": KB100, "b": KB100, "c": KB100[:60_000]})
    assert (done["status"], done["error"]) == ("FAILED", "States.DataLimitExceeded")
    assert "Assign" in done["cause"]


def test_task_parameters_over_the_quota_fail_before_the_task_is_scheduled(
    make_engine: MakeEngine,
) -> None:
    engine = make_engine({"f": Script({})})
    state = task(
        "f", Parameters={"FunctionName": "f", "Payload": {"a.$": "$.a", "b.$": "$.a", "c.$": "$.a"}}
    )
    done = run(engine, machine({"T": state}), {"a": KB100})
    assert (done["status"], done["error"]) == ("FAILED", "States.DataLimitExceeded")
    assert "TaskScheduled" not in types(engine, done["executionArn"])


def test_the_api_refuses_input_and_task_output_over_the_quota(make_engine: MakeEngine) -> None:
    engine = make_engine()
    arn = engine.create_state_machine("q", machine({"P": {"Type": "Pass", "End": True}}))
    with pytest.raises(InvalidExecutionInput, match="over the 262144-byte quota"):
        engine.start_execution(arn, "e", {"a": "x" * PAYLOAD_BYTES})
    with pytest.raises(InvalidOutput, match="over the 262144-byte quota"):
        engine.send_task_success("sst1." + "0" * 48, {"a": "x" * PAYLOAD_BYTES})
