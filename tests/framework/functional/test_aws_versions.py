"""``stepsaga versions prune``: old state machine versions go, the ones a case needs stay.

moto 5.2 has no ``ListStateMachineVersions``/``DeleteStateMachineVersion``: Step Functions
is a botocore ``Stubber`` (every call and its parameters checked, in order).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from stepsaga.backends._aws import SessionClients
from stepsaga.backends._aws.versions import REDRIVE_WINDOW
from tests.framework.functional.test_aws_cli import aws_cli

REGION = "eu-west-1"
MACHINE = f"arn:aws:states:{REGION}:123456789012:stateMachine:dev-replacement-order"
ENV = {
    "STEPSAGA_STATE_MACHINE_ARN": MACHINE,
    "STEPSAGA_LEDGER_TABLE_NAME": "stepsaga-dev-ledger",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
}
NOW = datetime.now(UTC)


def _version(n: int) -> str:
    return f"{MACHINE}:{n}"


def _execution(name: str, *, stopped_days_ago: float | None = None) -> dict[str, Any]:
    execution: dict[str, Any] = {
        "executionArn": f"{MACHINE.replace(':stateMachine:', ':execution:')}:{name}",
        "stateMachineArn": MACHINE,
        "name": name,
        "status": "RUNNING" if stopped_days_ago is None else "FAILED",
        "startDate": NOW - timedelta(days=30),
    }
    if stopped_days_ago is not None:
        execution["stopDate"] = NOW - timedelta(days=stopped_days_ago)
    return execution


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    sfn = boto3.client(
        "stepfunctions",
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    monkeypatch.setattr(SessionClients, "stepfunctions", lambda self, region: sfn)
    with Stubber(sfn) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def _listed(stub: Stubber, version: int, status: str, found: list[dict[str, Any]]) -> None:
    stub.add_response(
        "list_executions",
        {"executions": found},
        {
            "stateMachineArn": _version(version),
            "statusFilter": status,
            "maxResults": 1 if status == "RUNNING" else 1000,
        },
    )


def _seven_versions(stub: Stubber) -> None:
    """7 and 6 newest; ``live`` → 7, ``canary`` → 5; 4 runs a case; 3 failed 3 days ago
    (redrivable); 2 had nothing; 1 failed 20 days ago (past the redrive window)."""
    stub.add_response(
        "list_state_machine_versions",
        {
            "stateMachineVersions": [
                {"stateMachineVersionArn": _version(n), "creationDate": NOW - timedelta(days=n)}
                for n in (1, 2, 3, 4, 5, 6, 7)  # any order: sorted by number
            ]
        },
        {"stateMachineArn": MACHINE, "maxResults": 1000},
    )
    aliases = {"live": 7, "canary": 5}
    stub.add_response(
        "list_state_machine_aliases",
        {
            "stateMachineAliases": [
                {"stateMachineAliasArn": f"{MACHINE}:{a}", "creationDate": NOW} for a in aliases
            ]
        },
        {"stateMachineArn": MACHINE, "maxResults": 100},
    )
    for alias, version in aliases.items():
        stub.add_response(
            "describe_state_machine_alias",
            {
                "stateMachineAliasArn": f"{MACHINE}:{alias}",
                "name": alias,
                "routingConfiguration": [
                    {"stateMachineVersionArn": _version(version), "weight": 100}
                ],
                "creationDate": NOW,
                "updateDate": NOW,
            },
            {"stateMachineAliasArn": f"{MACHINE}:{alias}"},
        )
    _listed(stub, 4, "RUNNING", [_execution("acme-CASE-4-r1")])
    _listed(stub, 3, "RUNNING", [])
    _listed(stub, 3, "FAILED", [_execution("acme-CASE-3-r1", stopped_days_ago=3)])
    for version, failed in ((2, []), (1, [_execution("acme-CASE-1-r1", stopped_days_ago=20)])):
        _listed(stub, version, "RUNNING", [])
        _listed(stub, version, "FAILED", failed)
        _listed(stub, version, "TIMED_OUT", [])
        _listed(stub, version, "ABORTED", [])


def test_prune_deletes_only_what_no_alias_running_or_redrivable_case_needs(
    stub: Stubber,
) -> None:
    assert timedelta(days=14) == REDRIVE_WINDOW
    _seven_versions(stub)
    for version in (2, 1):
        stub.add_response(
            "delete_state_machine_version", {}, {"stateMachineVersionArn": _version(version)}
        )
    result = aws_cli(ENV, "versions", "prune", "--keep", "2", "--json")
    assert result.code == 0, result.err
    rows = {row["version"]: (row["action"], row["reason"]) for row in result.json()["versions"]}
    assert rows == {
        7: ("kept", "one of the 2 newest versions"),
        6: ("kept", "one of the 2 newest versions"),
        5: ("kept", "alias canary routes to it"),
        4: ("kept", "execution acme-CASE-4-r1 is running on it"),
        3: ("kept", "execution acme-CASE-3-r1 (FAILED) can still be redriven on it"),
        2: ("deleted", None),
        1: ("deleted", None),
    }


def test_a_dry_run_deletes_nothing(stub: Stubber) -> None:
    _seven_versions(stub)
    result = aws_cli(ENV, "versions", "prune", "--keep", "2", "--dry-run")
    assert result.code == 0, result.err
    assert "version 2: would delete" in result.out
    assert result.out.splitlines()[-1] == "5 kept, 2 would delete"


def test_a_delete_aws_refuses_is_reported_and_exit_1(stub: Stubber) -> None:
    _seven_versions(stub)
    stub.add_client_error(
        "delete_state_machine_version",
        "ConflictException",
        "version is referenced by an alias",
        expected_params={"stateMachineVersionArn": _version(2)},
    )
    stub.add_response("delete_state_machine_version", {}, {"stateMachineVersionArn": _version(1)})
    result = aws_cli(ENV, "versions", "prune", "--keep", "2")
    assert result.code == 1
    assert (
        "version 2: refused (AWS refused: ConflictException: version is referenced by an alias)"
        in result.out
    )
    assert "version 1: deleted" in result.out


@pytest.mark.parametrize("keep", ["0", "1001", "-3"])
def test_a_bad_keep_is_exit_2_and_calls_nothing(stub: Stubber, keep: str) -> None:
    result = aws_cli(ENV, "versions", "prune", "--keep", keep)
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1
