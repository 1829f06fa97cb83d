"""``stepsaga start``: the JSON shape, idempotent starts, faults, mock configs, progress."""

from __future__ import annotations

import json
from pathlib import Path

from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import (
    EXAMPLES,
    case_data,
    cli,
    effects,
    row_counts,
    write_case,
    write_faults,
    write_json,
)

EXECUTION_KEYS = {
    "executionArn",
    "stateMachineArn",
    "name",
    "status",
    "startDate",
    "stopDate",
    "error",
    "cause",
    "redriveCount",
    "redriveDate",
    "redriveStatus",
    "tenant_id",
    "case_id",
    "revision",
    "outcome",
    "saga",
    "steps",
    "waiting_for",
    "open_items",
    "reason",  # why the case did not complete (None here: it completed)
}
STEP_KEYS = {
    "state",
    "kind",
    "operation",
    "action_key",
    "ledger_status",
    "attempts",
    "reference",
    "error",  # the recorded refusal or uncertainty (None when the step completed)
}


def test_start_json_shape(home: StateHome, tmp_path: Path) -> None:
    result = cli(home, "start", str(write_case(tmp_path)), "--json")
    assert result.code == 0, result.err
    view = result.json()
    assert set(view) == EXECUTION_KEYS
    assert view["name"] == "acme-CASE-1001-r1"
    assert view["executionArn"].endswith(":execution:replacement-order:acme-CASE-1001-r1")
    assert view["stateMachineArn"].endswith(":stateMachine:replacement-order")
    assert (view["status"], view["outcome"]) == ("SUCCEEDED", "completed")
    assert (view["tenant_id"], view["case_id"], view["revision"]) == ("acme", "CASE-1001", 1)
    assert view["startDate"].endswith("Z")
    assert view["stopDate"].endswith("Z")
    assert view["redriveCount"] == 0
    assert view["waiting_for"] == []
    assert view["open_items"] == []
    assert view["reason"] is None
    steps = {step["state"]: step for step in view["steps"]}
    assert list(steps) == ["ReserveStock", "RefundPayment", "CreateShipment", "ReleaseReservation"]
    for step in view["steps"]:
        assert set(step) == STEP_KEYS
    assert steps["RefundPayment"] == {
        "state": "RefundPayment",
        "kind": "step",
        "operation": "refund_payment",
        "action_key": "acme:CASE-1001:r1:refund_payment",
        "ledger_status": "COMPLETED",
        "attempts": 1,
        "reference": steps["RefundPayment"]["reference"],
        "error": None,
    }
    assert steps["ReleaseReservation"]["kind"] == "compensation"
    assert steps["ReleaseReservation"]["action_key"] == (
        "acme:CASE-1001:r1:reserve_stock:compensate:release_reservation"
    )
    assert steps["ReleaseReservation"]["ledger_status"] is None
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}


def test_start_shows_progress_and_a_table(home: StateHome, tmp_path: Path) -> None:
    faults = write_faults(
        tmp_path, {"service": "payments", "operation": "refund", "times": 1, "fault": "throttle"}
    )
    result = cli(home, "start", str(write_case(tmp_path)), "--faults", str(faults))
    assert result.code == 0, result.err
    out = result.out
    for state in ("→ ReserveStock", "→ RefundPayment", "→ CreateShipment"):
        assert state in out
    assert "✗ TransientError" in out
    assert "↻ retry 1 of RefundPayment in" in out
    assert "outcome completed" in out
    assert "acme-CASE-1001-r1" in out
    assert not out.lstrip().startswith("{")


def test_start_again_returns_the_same_execution(home: StateHome, tmp_path: Path) -> None:
    case = write_case(tmp_path)
    first = cli(home, "start", str(case), "--json").json()
    rows = row_counts(home)
    again = cli(home, "start", str(case), "--json")
    assert again.code == 0
    assert again.json()["executionArn"] == first["executionArn"]
    assert again.json()["startDate"] == first["startDate"]
    assert row_counts(home) == rows  # nothing ran again, nothing was written
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}


def test_start_with_another_input_is_refused(home: StateHome, tmp_path: Path) -> None:
    cli(home, "start", str(write_case(tmp_path)), "--json")
    rows = row_counts(home)
    other = case_data(refund={"payment_id": "PAY-991", "amount": "25.00", "currency": "USD"})
    changed = write_json(tmp_path / "changed.json", other)
    faults = write_faults(
        tmp_path, {"service": "shipping", "operation": "create_shipment", "fault": "reject"}
    )
    result = cli(home, "start", str(changed), "--faults", str(faults), "--json")
    assert result.code == 2
    assert result.out == ""
    lines = result.err.strip().splitlines()
    assert len(lines) == 1
    assert "acme-CASE-1001-r1" in lines[0]
    assert "different input" in lines[0]
    assert row_counts(home) == rows  # no execution, no faults attached


def test_a_new_revision_is_a_new_execution(home: StateHome, tmp_path: Path) -> None:
    cli(home, "start", str(write_case(tmp_path)), "--json")
    data = case_data()
    data["approval"]["revision"] = 2
    data["refund"]["amount"] = "25.00"
    second = cli(home, "start", str(write_json(tmp_path / "r2.json", data)), "--json")
    assert second.code == 0
    assert second.json()["name"] == "acme-CASE-1001-r2"
    status = cli(home, "status", "CASE-1001", "--json").json()
    assert status["revision"] == 2  # a case id resolves to its newest revision


def test_shipment_rejected_is_compensated(home: StateHome, tmp_path: Path) -> None:
    faults = EXAMPLES / "faults-shipment-rejected.json"
    result = cli(home, "start", str(write_case(tmp_path)), "--faults", str(faults), "--json")
    view = result.json()
    assert (view["status"], view["error"], view["outcome"]) == (
        "FAILED",
        "Saga.Compensated",
        "compensated",
    )
    steps = {step["state"]: step["ledger_status"] for step in view["steps"]}
    assert steps["ReleaseReservation"] == "COMPLETED"
    assert len(view["open_items"]) == 1  # the refund, escalated to a person
    assert effects(home) == {"reserve": 1, "refund": 1, "release": 1}


def test_lost_refund_response_is_one_refund(home: StateHome, tmp_path: Path) -> None:
    faults = EXAMPLES / "faults-lost-refund-response.json"
    result = cli(home, "start", str(write_case(tmp_path)), "--faults", str(faults), "--json")
    assert result.json()["outcome"] == "completed"
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}


def test_mock_config_mocks_named_states_and_runs_the_others(
    home: StateHome, tmp_path: Path
) -> None:
    mock = {
        "StateMachines": {
            "replacement-order": {"TestCases": {"NoShipping": {"CreateShipment": "Shipped"}}}
        },
        "MockedResponses": {
            "Shipped": {
                "0": {
                    "Return": {
                        "StatusCode": 200,
                        "Payload": {
                            "action_key": "acme:CASE-1001:r1:create_shipment",
                            "status": "COMPLETED",
                            "result": {"shipment_id": "mocked"},
                            "replayed": False,
                        },
                    }
                }
            }
        },
    }
    config = write_json(tmp_path / "mock.json", mock)
    result = cli(
        home,
        "start",
        str(write_case(tmp_path)),
        "--mock-config",
        str(config),
        "--test-case",
        "NoShipping",
        "--json",
    )
    assert result.code == 0, result.err
    assert result.json()["outcome"] == "completed"
    assert effects(home) == {"reserve": 1, "refund": 1}  # the mocked state shipped nothing


def test_example_mock_config_happy_path(home: StateHome, tmp_path: Path) -> None:
    config = EXAMPLES / "mock-config" / "replacement-order.json"
    result = cli(
        home,
        "start",
        str(write_case(tmp_path)),
        "--mock-config",
        str(config),
        "--test-case",
        "HappyPath",
        "--json",
    )
    assert result.code == 0, result.err
    assert result.json()["status"] == "SUCCEEDED"
    assert effects(home) == {}


def test_time_scale_flag_and_environment(home: StateHome, tmp_path: Path) -> None:
    faults = write_faults(
        tmp_path, {"service": "payments", "operation": "refund", "times": 2, "fault": "throttle"}
    )
    result = cli(
        home,
        "start",
        str(write_case(tmp_path)),
        "--faults",
        str(faults),
        "--time-scale",
        "0",
        "--json",
        env={"STEPSAGA_TIME_SCALE": "1000"},
    )
    assert result.code == 0, result.err
    assert result.json()["outcome"] == "completed"
    history = cli(home, "history", "CASE-1001", "--json").json()["events"]
    assert [e["type"] for e in history].count("TaskFailed") == 2
    assert json.dumps(history)  # timestamps are strings already
