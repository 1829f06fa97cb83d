"""Step Functions Local mock configs, unchanged, on the embedded engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepsaga.engine import MockConfig
from stepsaga.engine._definition import LAMBDA_INVOKE_WAIT
from stepsaga.errors import MockConfigError
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script, count, machine, task

CONFIG: dict[str, Any] = {
    "StateMachines": {
        "order": {
            "TestCases": {
                "HappyPath": {"Reserve": "ReserveOk"},
                "RefundThrottled": {"Refund": "ThrottledTwiceThenOk"},
                "Exhausted": {"Refund": "OneThrottle"},
                "Approved": {"Recon": "Approved"},
            }
        }
    },
    "MockedResponses": {
        "ReserveOk": {"0": {"Return": {"StatusCode": 200, "Payload": {"id": "mocked"}}}},
        "ThrottledTwiceThenOk": {
            "0-1": {"Throw": {"Error": "Lambda.TooManyRequestsException", "Cause": "slow down"}},
            "2": {"Return": {"StatusCode": 200, "Payload": {"refund": "ok"}}},
        },
        "OneThrottle": {"0": {"Throw": {"Error": "Lambda.TooManyRequestsException", "Cause": "x"}}},
        "Approved": {"0": {"Return": {"applied": True}}},
    },
}
RETRY = [
    {"ErrorEquals": ["Lambda.TooManyRequestsException"], "IntervalSeconds": 1, "MaxAttempts": 3}
]
DEFINITION = machine(
    {
        "Reserve": task(
            "reserve",
            ResultSelector={"id.$": "$.Payload.id"},
            ResultPath="$.reserve",
            Next="Refund",
        ),
        "Refund": task(
            "refund",
            Retry=RETRY,
            ResultSelector={"r.$": "$.Payload"},
            ResultPath="$.refund",
            Next="Recon",
        ),
        "Recon": task(
            "recon",
            Resource=LAMBDA_INVOKE_WAIT,
            Parameters={"FunctionName": "recon", "Payload": {"t.$": "$$.Task.Token"}},
            ResultPath="$.recon",
        ),
    }
)


def engine_with(make_engine: MakeEngine, tmp_path: Path, **handlers: Any) -> Any:
    path = tmp_path / "MockConfigFile.json"
    path.write_text(json.dumps(CONFIG))
    engine = make_engine(handlers, mock_config=MockConfig.from_file(path), time_scale=0)
    return engine, engine.create_state_machine("order", DEFINITION)


def test_mocked_and_real_states_mix(make_engine: MakeEngine, tmp_path: Path) -> None:
    real_reserve = Script({"id": "real"})
    engine, arn = engine_with(
        make_engine,
        tmp_path,
        reserve=real_reserve,
        refund=Script({"refund": "real"}),
        recon=Script({}),
    )
    result = engine.start_execution(arn + "#Approved", "e1", {})
    assert result["status"] == "SUCCEEDED"  # the mocked callback task returned at once
    output = json.loads(result["output"])
    assert output["reserve"] == {"id": "real"}
    assert output["recon"] == {"applied": True}
    assert len(real_reserve.events) == 1


def test_each_retry_consumes_the_next_invocation_number(
    make_engine: MakeEngine, tmp_path: Path
) -> None:
    engine, arn = engine_with(
        make_engine, tmp_path, reserve=Script({"id": "r"}), refund=Script({}), recon=Script({})
    )
    result = engine.start_execution(arn, "e2", {}, test_case="RefundThrottled")
    assert result["status"] == "RUNNING"  # now waiting for the (real) reconciliation callback
    assert count(engine, result["executionArn"], "TaskFailed") == 2
    history = engine.get_execution_history(result["executionArn"])["events"]
    refund_output = [e for e in history if e["type"] == "TaskStateExited"][1]
    assert json.loads(refund_output["stateExitedEventDetails"]["output"])["refund"] == {
        "r": {"refund": "ok"}
    }


def test_running_out_of_mocked_responses_fails_loudly(
    make_engine: MakeEngine, tmp_path: Path
) -> None:
    engine, arn = engine_with(
        make_engine, tmp_path, reserve=Script({"id": "r"}), refund=Script({}), recon=Script({})
    )
    result = engine.start_execution(arn, "e3", {}, test_case="Exhausted")
    assert result["error"] == "States.Runtime"
    assert "invocation 1" in result["cause"]
    assert "OneThrottle" in result["cause"]


def test_the_test_case_is_part_of_the_execution_identity(
    make_engine: MakeEngine, tmp_path: Path
) -> None:
    engine, arn = engine_with(
        make_engine, tmp_path, reserve=Script({"id": "r"}), refund=Script({}), recon=Script({})
    )
    engine.start_execution(arn, "e4", {}, test_case="Approved")
    with pytest.raises(MockConfigError, match="NoSuchCase"):
        engine.start_execution(arn, "e5", {}, test_case="NoSuchCase")
    from stepsaga.errors import ExecutionAlreadyExists

    with pytest.raises(ExecutionAlreadyExists, match="test case"):
        engine.start_execution(arn, "e4", {})


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"StateMachines": {}, "MockedResponses": {}, "Extra": 1}, "unknown top-level"),
        (
            {"StateMachines": {"m": {"TestCases": {"c": {"S": "Nope"}}}}, "MockedResponses": {}},
            "'Nope'",
        ),
        ({"MockedResponses": {"R": {"1": {"Return": 1}}}}, "start at 0"),
        ({"MockedResponses": {"R": {"0": {"Return": 1}, "0-1": {"Return": 2}}}}, "overlaps"),
        ({"MockedResponses": {"R": {"0": {"Return": 1, "Throw": {"Error": "E"}}}}}, "exactly one"),
        ({"MockedResponses": {"R": {"0": {"Throw": {"Cause": "c"}}}}}, "needs Error"),
        ({"MockedResponses": {"R": {"first": {"Return": 1}}}}, "invocation number"),
    ],
)
def test_malformed_configs_are_refused(config: dict[str, Any], message: str) -> None:
    with pytest.raises(MockConfigError, match=message):
        MockConfig.from_dict(config)


def test_ranges_expand_in_order() -> None:
    config = MockConfig.from_dict(CONFIG)
    case = config.test_case("order", "RefundThrottled")
    assert [r.returns for r in case.responses["Refund"]] == [False, False, True]
    assert case.response("Refund", 3) is None


def test_a_mocked_state_must_be_a_task(make_engine: MakeEngine) -> None:
    config = MockConfig.from_dict(
        {
            "StateMachines": {"m": {"TestCases": {"c": {"P": "R"}}}},
            "MockedResponses": {"R": {"0": {"Return": 1}}},
        }
    )
    engine = make_engine(mock_config=config)
    arn = engine.create_state_machine("m", machine({"P": {"Type": "Pass", "End": True}}))
    with pytest.raises(MockConfigError, match="not a Task"):
        engine.start_execution(arn, "e", {}, test_case="c")


def test_every_problem_in_a_config_is_reported_at_once() -> None:
    config = {
        "StateMachines": {
            "saga": {"TestCases": {"Happy": {"A": "Missing", "B": "Good"}}},
            "broken": {"Cases": {}},
        },
        "MockedResponses": {
            "Good": {"0": {"Return": {}}},
            "BadKey": {"zero": {"Return": {}}},
            "BadBody": {"0": {"Return": {}, "Throw": {"Error": "E"}}},
        },
    }
    with pytest.raises(MockConfigError) as caught:
        MockConfig.from_dict(config, source="m.json")
    problems = caught.value.data["problems"]
    assert len(problems) == 4, problems
    joined = "\n".join(problems)
    assert "'zero' is not an invocation number" in joined
    assert "MockedResponses.BadBody.0 must have exactly one of Return or Throw" in joined
    assert "StateMachines.broken must be" in joined
    assert "uses mocked response 'Missing'" in joined
    assert all(line.startswith("m.json: ") for line in problems)
