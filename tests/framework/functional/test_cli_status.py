"""``stepsaga status`` and ``history``: finding an execution by case, name or ARN, and the
``GetExecutionHistory`` shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import cli, write_case


def _start(
    home: StateHome, tmp_path: Path, case_id: str = "CASE-1001", **changes: str
) -> dict[str, Any]:
    folder = tmp_path / f"{changes.get('tenant_id', 'acme')}-{case_id}"
    folder.mkdir()
    result = cli(home, "start", str(write_case(folder, case_id, **changes)), "--json")
    assert result.code == 0, result.err
    started: dict[str, Any] = result.json()
    return started


def test_status_by_case_name_and_arn(home: StateHome, tmp_path: Path) -> None:
    started = _start(home, tmp_path)
    for ref in ("CASE-1001", started["name"], started["executionArn"]):
        result = cli(home, "status", ref, "--json")
        assert result.code == 0, result.err
        assert result.json() == started


def test_status_table(home: StateHome, tmp_path: Path) -> None:
    _start(home, tmp_path)
    result = cli(home, "status", "CASE-1001")
    assert result.code == 0
    assert "outcome completed" in result.out
    assert "RefundPayment" in result.out
    assert "COMPLETED" in result.out


def test_a_case_id_of_two_tenants_needs_tenant(home: StateHome, tmp_path: Path) -> None:
    _start(home, tmp_path)
    _start(home, tmp_path, tenant_id="globex")
    result = cli(home, "status", "CASE-1001", "--json")
    assert result.code == 2
    assert "acme, globex" in result.err
    assert "--tenant" in result.err
    globex = cli(home, "status", "CASE-1001", "--tenant", "globex", "--json")
    assert globex.code == 0
    assert (globex.json()["tenant_id"], globex.json()["name"]) == ("globex", "globex-CASE-1001-r1")
    # A tenant never sees another tenant's execution, even by its name.
    other = cli(home, "status", "globex-CASE-1001-r1", "--tenant", "acme")
    assert other.code == 2


def test_dashed_tenants_get_hashed_names(home: StateHome, tmp_path: Path) -> None:
    started = _start(home, tmp_path, tenant_id="acme-eu")
    assert started["name"].startswith("acme-eu-CASE-1001-r1-")
    assert cli(home, "status", "CASE-1001", "--json").json()["tenant_id"] == "acme-eu"


def test_unknown_case(home: StateHome, tmp_path: Path) -> None:
    _start(home, tmp_path)
    result = cli(home, "status", "CASE-404")
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        f"error: no execution or case 'CASE-404' in {home.root}"
    ]


def test_history_json_shape(home: StateHome, tmp_path: Path) -> None:
    started = _start(home, tmp_path)
    result = cli(home, "history", started["name"], "--json")
    assert result.code == 0
    data = result.json()
    assert list(data) == ["events"]
    events = data["events"]
    assert events[0]["type"] == "ExecutionStarted"
    assert events[-1]["type"] == "ExecutionSucceeded"
    for index, event in enumerate(events, 1):
        assert event["id"] == index
        assert event["previousEventId"] == index - 1
        assert event["timestamp"].endswith("Z")
    entered = [e["stateEnteredEventDetails"]["name"] for e in events if "StateEntered" in e["type"]]
    assert entered == ["ReserveStock", "RefundPayment", "CreateShipment"]
    scheduled = next(e for e in events if e["type"] == "TaskScheduled")
    assert scheduled["taskScheduledEventDetails"]["resourceType"] == "lambda"


def test_history_table(home: StateHome, tmp_path: Path) -> None:
    _start(home, tmp_path)
    result = cli(home, "history", "CASE-1001")
    assert result.code == 0
    assert "ExecutionStarted" in result.out
    assert "TaskStateEntered" in result.out


def test_history_reverse_is_newest_first(home: StateHome, tmp_path: Path) -> None:
    started = _start(home, tmp_path)
    forward = cli(home, "history", started["name"], "--json").json()["events"]
    backward = cli(home, "history", started["name"], "--reverse", "--json").json()["events"]
    assert backward == list(reversed(forward))
    assert backward[0]["type"] == "ExecutionSucceeded"
