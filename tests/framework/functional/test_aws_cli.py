"""``stepsaga --backend aws …`` end to end on moto: configuration by stack or environment,
exit codes 0/1/2 with one-line errors, and the same ``--json`` as the local backend."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from stepsaga import EffectClass
from stepsaga._project.home import StateHome
from stepsaga.backends._aws import SessionClients
from stepsaga.cli._app import app
from stepsaga.ledger import Action, Intent
from tests.framework.functional.aws_support import (
    REGION,
    STACK,
    TABLE,
    FakeAws,
    fake_aws,
    run_locally,
)
from tests.framework.functional.cli_support import EXAMPLES, Result, write_case

UNVERIFIABLE = EXAMPLES / "faults-shipment-unverifiable.json"
#: What differs between two deployments of the same case: where and when it ran, and
#: ``redriveStatus``, which moto 5.2 leaves out of ``DescribeExecution`` (AWS sends it).
WHERE_AND_WHEN = {"executionArn", "stateMachineArn", "startDate", "stopDate", "redriveStatus"}

runner = CliRunner()


@pytest.fixture
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


def _env(aws: FakeAws, **extra: str) -> dict[str, str]:
    return {
        "STEPSAGA_STATE_MACHINE_ARN": aws.state_machine_arn,
        "STEPSAGA_LEDGER_TABLE_NAME": TABLE,
        "STEPSAGA_AWS_WAIT_SECONDS": "0",
        **extra,
    }


def aws_cli(env: dict[str, str], *args: str, root: tuple[str, ...] = ()) -> Result:
    result = runner.invoke(app, ["--backend", "aws", *root, *args], env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Result(result.exit_code, result.stdout, result.stderr)


def _without_where_and_when(view: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in view.items() if key not in WHERE_AND_WHEN}


# --- the same --json on both backends --------------------------------------------------


def test_status_json_equals_the_local_backend_for_a_waiting_case(
    aws: FakeAws, home: StateHome, tmp_path: Path
) -> None:
    case_file = write_case(tmp_path)
    local = run_locally(home, case_file, UNVERIFIABLE)
    aws.copy_ledger(local.records, local.items)
    started = aws_cli(_env(aws), "start", str(case_file), "--json")
    assert started.code == 0, started.err
    status = aws_cli(_env(aws), "status", "CASE-1001", "--json")
    assert status.code == 0, status.err
    remote = status.json()
    assert list(remote) == list(local.view)  # same keys, same order
    assert remote["outcome"] == "awaiting_reconciliation"
    assert _without_where_and_when(remote) == _without_where_and_when(local.view)
    assert remote["executionArn"] == aws.execution_arn(local.view["name"])


def test_status_json_equals_the_local_backend_for_a_completed_case(
    aws: FakeAws, home: StateHome, tmp_path: Path
) -> None:
    case_file = write_case(tmp_path)
    local = run_locally(home, case_file)
    assert local.view["outcome"] == "completed"
    aws.copy_ledger(local.records, local.items)
    assert aws_cli(_env(aws), "start", str(case_file)).code == 0
    aws.set_status(local.view["name"], "SUCCEEDED")
    remote = aws_cli(_env(aws), "status", local.view["name"], "--json").json()
    assert _without_where_and_when(remote) == _without_where_and_when(local.view)
    assert remote["stopDate"].endswith("Z")


def test_recon_json_equals_the_local_backend(aws: FakeAws, home: StateHome, tmp_path: Path) -> None:
    local = run_locally(home, write_case(tmp_path), UNVERIFIABLE)
    aws.copy_ledger(local.records, local.items)
    local_items = json.loads(
        runner.invoke(app, ["--home", str(home.root), "recon", "list", "--json"]).stdout
    )["items"]
    listed = aws_cli(_env(aws), "recon", "list", "--json")
    assert listed.code == 0, listed.err
    assert listed.json()["items"] == local_items
    shown = aws_cli(_env(aws), "recon", "show", local_items[0]["id"], "--json")
    assert shown.json() == local_items[0]


# --- configuration ---------------------------------------------------------------------


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_stack_configures_the_backend(aws: FakeAws, tmp_path: Path, how: str) -> None:
    env = {"STEPSAGA_AWS_WAIT_SECONDS": "0"}
    root: tuple[str, ...] = ()
    if how == "option":
        root = ("--stack", STACK)
    else:
        env["STEPSAGA_STACK"] = STACK
    result = aws_cli(env, "start", str(write_case(tmp_path)), "--json", root=root)
    assert result.code == 0, result.err
    assert result.json()["stateMachineArn"] == aws.state_machine_arn


def test_no_configuration_is_one_line_and_exit_2(aws: FakeAws, tmp_path: Path) -> None:
    result = aws_cli({}, "status", "CASE-1001")
    assert result.code == 2
    assert result.err.splitlines() == [
        "error: --backend aws is not configured: pass --stack NAME (or set STEPSAGA_STACK), "
        "or set STEPSAGA_STATE_MACHINE_ARN and STEPSAGA_LEDGER_TABLE_NAME"
    ]
    missing = aws_cli({}, "status", "CASE-1001", root=("--stack", "stepsaga-nope"))
    assert missing.code == 2
    assert missing.err.startswith("error: stack stepsaga-nope does not exist in region us-east-1")


def test_bad_wait_seconds_is_exit_2(aws: FakeAws) -> None:
    result = aws_cli(_env(aws, STEPSAGA_AWS_WAIT_SECONDS="soon"), "status", "CASE-1001")
    assert result.code == 2
    assert "STEPSAGA_AWS_WAIT_SECONDS" in result.err


# --- exit codes ------------------------------------------------------------------------


def test_local_only_flags_are_exit_2_and_start_nothing(aws: FakeAws, tmp_path: Path) -> None:
    case_file = str(write_case(tmp_path))
    result = aws_cli(_env(aws), "start", case_file, "--faults", str(UNVERIFIABLE))
    assert result.code == 2
    assert result.err.startswith("error: --faults drives the simulated services")
    scaled = aws_cli(_env(aws), "start", case_file, "--time-scale", "0")
    assert scaled.code == 2
    listed = aws.sfn.list_executions(stateMachineArn=aws.state_machine_arn)["executions"]
    assert listed == []


def test_a_conflicting_start_and_an_unknown_case_are_exit_2(aws: FakeAws, tmp_path: Path) -> None:
    assert aws_cli(_env(aws), "start", str(write_case(tmp_path))).code == 0
    other = tmp_path / "other"
    other.mkdir()
    changed = aws_cli(_env(aws), "start", str(write_case(other, order_id="ORD-78")))
    assert changed.code == 2
    assert "already exists (RUNNING)" in changed.err
    unknown = aws_cli(_env(aws), "status", "CASE-404")
    assert unknown.code == 2
    assert unknown.err.splitlines() == [
        f"error: no execution or case 'CASE-404' on {aws.state_machine_arn} (a case id is "
        "found by the pointer its start recorded; executions started before stepsaga "
        "recorded pointers are found by ARN or exact name)"
    ]


def test_an_unexpected_aws_error_is_exit_1(
    aws: FakeAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    monkeypatch.setattr(SessionClients, "stepfunctions", lambda self, region: sfn)
    with Stubber(sfn) as stub:
        stub.add_client_error("start_execution", "KmsThrottlingException", "slow down")
        result = aws_cli(_env(aws), "start", str(write_case(tmp_path)))
    assert result.code == 1
    assert result.err.splitlines() == [
        "error: AwsCallError: states:StartExecution failed (KmsThrottlingException): slow down"
    ]


def test_redrive_through_the_cli(aws: FakeAws, monkeypatch: pytest.MonkeyPatch) -> None:
    """moto has no RedriveExecution: the whole Step Functions side is stubbed."""
    sfn = boto3.client("stepfunctions", region_name=REGION)
    monkeypatch.setattr(SessionClients, "stepfunctions", lambda self, region: sfn)
    arn = aws.execution_arn("acme-CASE-1001-r1")
    described = {
        "executionArn": arn,
        "stateMachineArn": aws.state_machine_arn,
        "name": "acme-CASE-1001-r1",
        "startDate": "2026-11-29T12:00:00Z",
        "input": json.dumps(
            {"tenant_id": "acme", "case_id": "CASE-1001", "approval": {"revision": 1}}
        ),
    }
    # A name is looked up as a case id too, and redrive looks for a later revision: both
    # through the case pointers on moto's DynamoDB (none here), so no Step Functions call.
    with Stubber(sfn) as stub:
        stub.add_response("describe_execution", {**described, "status": "FAILED"})
        stub.add_response("redrive_execution", {"redriveDate": "2026-11-29T12:01:00Z"})
        stub.add_response(
            "describe_execution", {**described, "status": "RUNNING", "redriveCount": 1}
        )
        result = aws_cli(_env(aws), "redrive", "acme-CASE-1001-r1", "--json")
        assert result.code == 0, result.err
        assert (result.json()["redriveCount"], result.json()["outcome"]) == (1, "running")
        stub.add_response("describe_execution", {**described, "status": "SUCCEEDED"})
        stub.add_response("get_execution_history", {"events": []})  # for the live display
        stub.add_client_error(
            "redrive_execution", "ExecutionNotRedrivable", "Execution is SUCCEEDED"
        )
        refused = aws_cli(_env(aws), "redrive", "acme-CASE-1001-r1")
    assert refused.code == 2
    assert refused.err.splitlines() == [
        "error: execution acme-CASE-1001-r1 (SUCCEEDED) cannot be redriven: Execution is SUCCEEDED"
    ]


# --- the other verbs ---------------------------------------------------------------------


def test_history_json(aws: FakeAws, tmp_path: Path) -> None:
    aws_cli(_env(aws), "start", str(write_case(tmp_path)))
    result = aws_cli(_env(aws), "history", "CASE-1001", "--json")
    assert result.code == 0, result.err
    events = result.json()["events"]
    assert events[0]["type"] == "ExecutionStarted"
    assert all(event["timestamp"].endswith("Z") for event in events)


def test_resolve_through_the_cli(aws: FakeAws, home: StateHome, tmp_path: Path) -> None:
    case_file = write_case(tmp_path)
    local = run_locally(home, case_file, UNVERIFIABLE)
    aws.copy_ledger(local.records, local.items)
    aws_cli(_env(aws), "start", str(case_file))
    item_id = local.view["open_items"][0]
    args = ("recon", "resolve", item_id, "--outcome", "applied", "--by", "ops", "--note", "seen")
    result = aws_cli(_env(aws), *args, "--json")
    assert result.code == 0, result.err
    resolution = result.json()
    assert list(resolution) == ["item", "execution"]
    assert resolution["item"]["status"] == "RESOLVED"
    assert resolution["execution"]["name"] == local.view["name"]
    other_way = aws_cli(
        _env(aws),
        "recon",
        "resolve",
        item_id,
        "--outcome",
        "not-applied",
        "--by",
        "ops",
        "--note",
        "oops",
    )
    assert other_way.code == 2
    assert "already resolved as applied" in other_way.err


def test_status_table(aws: FakeAws, home: StateHome, tmp_path: Path) -> None:
    case_file = write_case(tmp_path)
    local = run_locally(home, case_file, UNVERIFIABLE)
    aws.copy_ledger(local.records, local.items)
    aws_cli(_env(aws), "start", str(case_file))
    result = aws_cli(_env(aws), "status", "CASE-1001")
    assert result.code == 0, result.err
    assert "outcome awaiting_reconciliation" in result.out
    assert "CreateShipment" in result.out


# --- the ledger commands read the stack's table ----------------------------------------


def test_ledger_commands_use_the_stacks_table(aws: FakeAws) -> None:
    intent = Intent("CASE-9", 1, datetime.now(UTC))
    action = Action("acme", intent, "refund_payment", EffectClass.KEYED_WRITE, {"n": 1})
    aws.ledger().perform(action, lambda claim: {"refund_id": "R-1"})
    listed = aws_cli({}, "ledger", "list", "--json", root=("--stack", STACK))
    assert listed.code == 0, listed.err
    records = listed.json()["records"]
    assert [(r["key"], r["status"]) for r in records] == [(action.key, "COMPLETED")]
    unconfigured = aws_cli({}, "ledger", "list")
    assert unconfigured.code == 2
    assert len(unconfigured.err.splitlines()) == 1
    assert "--backend aws is not configured" in unconfigured.err


def test_stack_is_read_in_aws_region_not_only_aws_default_region(aws: FakeAws) -> None:
    """boto3's session ignores ``AWS_REGION``; the CLI reads it first, as the CDK CLI does."""
    eu = boto3.client("cloudformation", region_name="eu-west-1")
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {
            "StateMachineArn": {"Value": aws.state_machine_arn},
            "LedgerTableName": {"Value": TABLE},
        },
    }
    eu.create_stack(StackName="stepsaga-dev-eu", TemplateBody=json.dumps(template))
    env = {"AWS_REGION": "eu-west-1", "STEPSAGA_AWS_WAIT_SECONDS": "0"}
    listed = aws_cli(env, "recon", "list", "--json", root=("--stack", "stepsaga-dev-eu"))
    assert listed.code == 0, listed.err
    assert listed.json() == {"items": [], "next_token": None}
    # Without AWS_REGION, AWS_DEFAULT_REGION (us-east-1 here) is where the stack is looked for.
    missing = aws_cli(
        {"STEPSAGA_AWS_WAIT_SECONDS": "0"}, "recon", "list", root=("--stack", "stepsaga-dev-eu")
    )
    assert missing.code == 2
    assert "does not exist in region us-east-1" in missing.err


def test_resolve_on_aws_records_the_iam_identity_and_notes_that_by_is_ignored(
    aws: FakeAws, home: StateHome, tmp_path: Path
) -> None:
    case_file = write_case(tmp_path)
    local = run_locally(home, case_file, UNVERIFIABLE)
    aws.copy_ledger(local.records, local.items)
    assert aws_cli(_env(aws), "start", str(case_file)).code == 0
    item_id = local.view["open_items"][0]
    resolved = aws_cli(
        _env(aws),
        *("recon", "resolve", item_id, "--outcome", "applied", "--by", "ops", "--note", "n"),
        "--json",
    )
    assert resolved.code == 0, resolved.err
    assert resolved.err.splitlines() == [
        "note: --by is ignored on AWS; the decider is your IAM identity, as you sign the request"
    ]
    assert resolved.json()["item"]["resolved_by"] == "arn:aws:sts::123456789012:user/moto"


def _assumed(role: str, session: str) -> dict[str, str]:
    """Environment credentials of an assumed role's session (moto's IAM and STS)."""
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": "123456789012"}, "Action": "sts:AssumeRole"}
        ],
    }
    iam = boto3.client("iam", region_name=REGION)
    arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    granted = boto3.client("sts", region_name=REGION).assume_role(
        RoleArn=arn, RoleSessionName=session
    )["Credentials"]
    return {
        "AWS_ACCESS_KEY_ID": granted["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": granted["SecretAccessKey"],
        "AWS_SESSION_TOKEN": granted["SessionToken"],
    }


def test_not_applied_on_a_refund_needs_a_second_iam_identity(
    aws: FakeAws, home: StateHome, tmp_path: Path
) -> None:
    faults = tmp_path / "refund-faults.json"
    faults.write_text(
        json.dumps(
            {
                "faults": [
                    {
                        "service": "payments",
                        "operation": "refund",
                        "times": 2,
                        "fault": "lose_response",
                    },
                    {
                        "service": "payments",
                        "operation": "find_refund_by_key",
                        "times": 2,
                        "fault": "throttle",
                    },
                ]
            }
        )
    )
    local = run_locally(home, write_case(tmp_path), faults)
    aws.copy_ledger(local.records, [replace(i, task_token=None) for i in local.items])
    item_id = local.view["open_items"][0]
    alice = _env(aws, **_assumed("ops-alice", "alice"))
    bob = _env(aws, **_assumed("ops-bob", "bob"))
    resolve = ("recon", "resolve", item_id, "--outcome")

    first = aws_cli(alice, *resolve, "not-applied", "--note", "PSP shows nothing")
    assert first.code == 0, first.err
    assert "awaiting a second approver" in first.out
    same = aws_cli(alice, *resolve, "not-applied", "--note", "again")
    assert same.code == 2
    assert len(same.err.strip().splitlines()) == 1
    assert "needs a second approver" in same.err
    other = aws_cli(bob, *resolve, "applied", "--note", "PSP shows RF-1")
    assert other.code == 2
    assert "assumed-role/ops-alice/alice said not_applied" in other.err
    assert "assumed-role/ops-bob/bob says applied" in other.err
    second = aws_cli(bob, *resolve, "not-applied", "--note", "confirmed", "--json")
    assert second.code == 0, second.err
    assert second.json()["item"]["status"] == "RESOLVED"
    shown = aws_cli(bob, "recon", "show", item_id, "--json").json()
    assert [d["by"].rsplit("/", 1)[-1] for d in shown["audit"]["deciders"]] == ["alice", "bob"]
    assert shown["audit"]["identity"]["caller_arn"].endswith("assumed-role/ops-bob/bob")
    table = aws_cli(bob, "recon", "show", item_id)
    assert "audit.caller_arn" in table.out
