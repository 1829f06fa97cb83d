"""The AWS backend against moto: starting once per case, finding executions, the ledger's
view of a case, reconciliation items, and following an execution until it settles."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from services import load_faults
from stepsaga._project.home import StateHome
from stepsaga.backends import ReconFilter, ReconOutcome, to_json
from stepsaga.backends._aws import AwsBackend, AwsSettings, FixedClients
from stepsaga.backends._progress import Progress, ProgressKind
from stepsaga.cli._run import load_mock_config
from stepsaga.errors import (
    SAGA_COMPENSATED,
    ExecutionAlreadyExists,
    ExecutionNotRedrivable,
    IllegalTransitionError,
    InvalidInputError,
    NotFoundError,
)
from stepsaga.ledger import Status
from stepsaga.ledger._dynamodb import create_table
from stepsaga.ledger._models import ReconStatus
from tests.framework.functional.aws_support import (
    ACCOUNT,
    MACHINE,
    REGION,
    ROLE_ARN,
    TABLE,
    FakeAws,
    LocalRun,
    fake_aws,
    read_resolution_audit,
    run_locally,
)
from tests.framework.functional.cli_support import EXAMPLES, case_data, write_case, write_faults
from workflows.case import Case, parse_case
from workflows.project import reference_project

UNVERIFIABLE = EXAMPLES / "faults-shipment-unverifiable.json"
MOCK_CONFIG = EXAMPLES / "mock-config" / "replacement-order.json"


@pytest.fixture
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


def _case(case_id: str = "CASE-1001", **changes: Any) -> Case:
    return parse_case(case_data(case_id, **changes))


def _executions(aws: FakeAws) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = aws.sfn.list_executions(stateMachineArn=aws.state_machine_arn)[
        "executions"
    ]
    return listed


#: Who moto's default credentials are.
MOTO_CALLER = f"arn:aws:sts::{ACCOUNT}:user/moto"


def _waiting(aws: FakeAws, home: StateHome, tmp_path: Path) -> LocalRun:
    """A case waiting for an operator: its ledger from a local run, its execution on AWS."""
    local = run_locally(home, write_case(tmp_path), UNVERIFIABLE)
    aws.copy_ledger(local.records, local.items)
    aws.backend().start(_case())
    return local


# --- start -------------------------------------------------------------------------------


def test_start_names_the_execution_after_the_case(aws: FakeAws) -> None:
    case = _case()
    view = aws.backend().start(case)
    assert (view.name, view.status, view.outcome) == ("acme-CASE-1001-r1", "RUNNING", "running")
    assert view.execution_arn == aws.execution_arn("acme-CASE-1001-r1")
    assert view.state_machine_arn == aws.state_machine_arn
    assert (view.tenant_id, view.case_id, view.revision) == ("acme", "CASE-1001", 1)
    assert [step.ledger_status for step in view.steps] == [None] * len(view.steps)
    described = aws.sfn.describe_execution(executionArn=view.execution_arn)
    assert json.loads(described["input"]) == case.execution_input()


def test_starting_again_reports_the_same_execution(aws: FakeAws) -> None:
    backend = aws.backend()
    case = _case()  # once: the approval time is "now", to the second
    first = backend.start(case)
    again = backend.start(case)  # still running: AWS answers with the same execution
    assert again.execution_arn == first.execution_arn
    aws.set_status(first.name, "SUCCEEDED")
    finished = backend.start(case)  # finished: AWS says ExecutionAlreadyExists
    assert (finished.execution_arn, finished.status, finished.outcome) == (
        first.execution_arn,
        "SUCCEEDED",
        "completed",
    )
    assert len(_executions(aws)) == 1


def test_a_different_input_for_the_same_case_is_refused(aws: FakeAws) -> None:
    backend = aws.backend()
    first = backend.start(_case())
    changed = _case(order_id="ORD-78")
    with pytest.raises(ExecutionAlreadyExists) as caught:
        backend.start(changed)
    assert caught.value.message == (
        "execution acme-CASE-1001-r1 already exists (RUNNING) for case CASE-1001 revision 1 "
        "with a different input; to change the case, approve revision 2 (it starts once this "
        "one is closed, adopts what this one applied unchanged and sends every changed effect "
        "to a person)"
    )
    assert caught.value.data["execution_arn"] == first.execution_arn
    assert len(_executions(aws)) == 1
    described = aws.sfn.describe_execution(executionArn=first.execution_arn)
    assert json.loads(described["input"])["order_id"] == "ORD-77"


def _revision(revision: int) -> Case:
    data = case_data()
    data["approval"]["revision"] = revision
    return parse_case(data)


def test_a_revision_starts_only_when_the_earlier_one_is_closed(aws: FakeAws) -> None:
    backend = aws.backend()
    backend.start(_revision(1))
    with pytest.raises(InvalidInputError) as refused:
        backend.start(_revision(2))
    assert refused.value.message.startswith(
        "case CASE-1001 revision 2 starts only when every earlier revision is closed: "
        "execution acme-CASE-1001-r1 (revision 1) is RUNNING; stop it first"
    )
    assert len(_executions(aws)) == 1
    aws.set_status("acme-CASE-1001-r1", "FAILED", error="TransientError")
    assert backend.start(_revision(2)).name == "acme-CASE-1001-r2"
    with pytest.raises(ExecutionNotRedrivable, match="superseded by revision 2"):
        backend.redrive("acme-CASE-1001-r1")


def test_start_refuses_an_approval_outside_the_retention_window(aws: FakeAws) -> None:
    stale = parse_case(
        case_data(approval={**case_data()["approval"], "approved_at": "2020-01-01T00:00:00Z"})
    )
    with pytest.raises(InvalidInputError, match="retention"):
        aws.backend().start(stale)
    assert _executions(aws) == []


def _no_settings() -> AwsSettings:
    raise AssertionError("a refused flag must not even read the settings")


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        ({"faults": load_faults(UNVERIFIABLE)}, "--faults"),
        (
            {
                "mock_config": load_mock_config(MOCK_CONFIG),
                "test_case": "HappyPath",
            },
            "--mock-config",
        ),
        ({"time_scale": 0.0}, "--time-scale"),
    ],
)
def test_local_only_flags_are_refused_before_any_call(
    aws: FakeAws, flags: dict[str, Any], named: str
) -> None:
    backend = AwsBackend(
        _no_settings, project=reference_project(), clients=FixedClients(aws.sfn, aws.ddb)
    )
    with pytest.raises(InvalidInputError) as caught:
        backend.start(_case(), **flags)
    assert caught.value.message.startswith(named)
    assert _executions(aws) == []


def test_time_scale_is_refused_by_redrive_and_resolve(aws: FakeAws) -> None:
    backend = AwsBackend(
        _no_settings, project=reference_project(), clients=FixedClients(aws.sfn, aws.ddb)
    )
    with pytest.raises(InvalidInputError, match=r"^--time-scale"):
        backend.redrive("CASE-1001", time_scale=1)
    with pytest.raises(InvalidInputError, match=r"^--time-scale"):
        backend.recon_resolve("item", ReconOutcome.APPLIED, "ops", "checked", time_scale=1)


# --- status and history ------------------------------------------------------------------


def test_status_by_case_name_and_arn(aws: FakeAws) -> None:
    backend = aws.backend()
    started = to_json(backend.start(_case()))
    for ref in ("CASE-1001", started["name"], started["executionArn"], f" {started['name']} "):
        assert to_json(backend.status(ref)) == started


def test_a_case_of_two_tenants_needs_tenant(aws: FakeAws) -> None:
    backend = aws.backend()
    backend.start(_case())
    backend.start(_case(tenant_id="globex"))
    with pytest.raises(InvalidInputError) as caught:
        backend.status("CASE-1001")
    assert caught.value.message == "case CASE-1001 exists for tenants acme, globex: pass --tenant"
    assert backend.status("CASE-1001", tenant="globex").name == "globex-CASE-1001-r1"
    # A tenant never sees another tenant's execution, even by its name or ARN.
    with pytest.raises(NotFoundError):
        backend.status("globex-CASE-1001-r1", tenant="acme")
    with pytest.raises(NotFoundError):
        backend.status(aws.execution_arn("globex-CASE-1001-r1"), tenant="acme")


def test_the_newest_revision_wins_and_hashed_names_are_found(aws: FakeAws) -> None:
    backend = aws.backend()
    first = _case(tenant_id="acme-eu")
    second = case_data(tenant_id="acme-eu")
    second["approval"]["revision"] = 2
    aws.set_status(backend.start(first).name, "SUCCEEDED")  # closed: revision 2 may start
    newest = backend.start(parse_case(second))
    assert newest.name.startswith("acme-eu-CASE-1001-r2-")
    assert backend.status("CASE-1001").name == newest.name


def test_long_names_cut_before_the_case_id_are_found(aws: FakeAws) -> None:
    tenant, case_id = "t" * 32, "C" * 48
    view = aws.backend().start(_case(case_id, tenant_id=tenant))
    assert len(view.name) == 80
    assert case_id not in view.name
    assert aws.backend().status(case_id).execution_arn == view.execution_arn


def test_unknown_refs(aws: FakeAws) -> None:
    backend = aws.backend()
    backend.start(_case())
    with pytest.raises(NotFoundError) as caught:
        backend.status("CASE-404")
    assert caught.value.message.startswith(
        f"no execution or case 'CASE-404' on {aws.state_machine_arn} (a case id is found by "
        "the pointer its start recorded; executions started before stepsaga recorded "
        "pointers are found by ARN or exact name)"
    )
    with pytest.raises(NotFoundError, match=r"^no execution arn:"):
        backend.status(aws.execution_arn("acme-CASE-404-r1"))
    with pytest.raises(InvalidInputError, match="must not be empty"):
        backend.status("  ")


def test_an_execution_of_another_state_machine_is_refused(aws: FakeAws) -> None:
    other = aws.execution_arn("x").replace("dev-replacement-order", "prod-replacement-order")
    with pytest.raises(InvalidInputError) as caught:
        aws.backend().history(other)
    assert caught.value.message == f"{other} is not an execution of {aws.state_machine_arn}"


def test_status_reads_the_ledger_and_the_waiting_items(
    aws: FakeAws, home: StateHome, tmp_path: Path
) -> None:
    local = _waiting(aws, home, tmp_path)
    view = aws.backend().status("CASE-1001")
    assert (view.status, view.outcome) == ("RUNNING", "awaiting_reconciliation")
    assert view.waiting_for == ("AwaitDecisionCreateShipment",)
    assert list(view.open_items) == local.view["open_items"]
    steps = {step.state: step.ledger_status for step in view.steps}
    assert steps["CreateShipment"] == "UNKNOWN"
    assert steps["RefundPayment"] == "COMPLETED"
    # Once the execution stopped (its wait timed out), nothing waits any more.
    aws.set_status(view.name, "FAILED", error="States.Timeout")
    stopped = aws.backend().status("CASE-1001")
    assert (stopped.outcome, stopped.waiting_for) == ("failed", ())
    assert stopped.open_items == view.open_items


@pytest.mark.parametrize(
    ("status", "error", "outcome"),
    [
        ("SUCCEEDED", None, "completed"),
        ("FAILED", SAGA_COMPENSATED, "compensated"),
        ("FAILED", "Saga.CompensationFailed", "compensation_failed"),
        ("FAILED", "TransientError", "failed"),
        ("TIMED_OUT", None, "failed"),
        ("ABORTED", None, "failed"),
    ],
)
def test_outcome_follows_the_execution(
    aws: FakeAws, status: str, error: str | None, outcome: str
) -> None:
    backend = aws.backend()
    started = backend.start(_case())
    aws.set_status(started.name, status, error=error)
    view = backend.status("CASE-1001")
    assert (view.status, view.error, view.outcome) == (status, error, outcome)


def test_history_is_get_execution_history(aws: FakeAws) -> None:
    backend = aws.backend()
    started = backend.start(_case())
    history = backend.history(started.name)
    assert list(history) == ["events"]
    events = history["events"]
    assert [event["id"] for event in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "ExecutionStarted"
    expected = aws.sfn.get_execution_history(executionArn=started.execution_arn)["events"]
    assert events == expected


# --- following an execution after start/redrive/resolve ----------------------------------


def test_start_follows_until_the_execution_stops(aws: FakeAws) -> None:
    name = "acme-CASE-1001-r1"
    notices: list[Progress] = []

    def sleep(seconds: float) -> None:
        aws.sleeps.append(seconds)
        aws.set_status(name, "SUCCEEDED")

    backend = aws.backend(wait_seconds=30, poll_seconds=2, sleeper=sleep)
    view = backend.start(_case(), on_event=notices.append)
    assert (view.status, view.outcome) == ("SUCCEEDED", "completed")
    assert aws.sleeps == [2]
    # moto's made-up history: each event becomes at most one notice, once.
    kinds = [(notice.kind, notice.state) for notice in notices]
    assert kinds == [(ProgressKind.STATE_ENTERED, "A State"), (ProgressKind.ENDED, None)]


def test_following_is_bounded(aws: FakeAws) -> None:
    view = aws.backend(wait_seconds=5, poll_seconds=2).start(_case())
    assert (view.status, view.outcome) == ("RUNNING", "running")
    assert aws.sleeps == [2, 2, 2]


def test_following_stops_when_the_case_waits_for_a_person(
    aws: FakeAws, home: StateHome, tmp_path: Path
) -> None:
    local = run_locally(home, write_case(tmp_path), UNVERIFIABLE)
    aws.copy_ledger(local.records, local.items)
    view = aws.backend(wait_seconds=30).start(_case())
    assert view.outcome == "awaiting_reconciliation"
    assert aws.sleeps == []


# --- reconciliation ----------------------------------------------------------------------


def test_recon_list_and_show(aws: FakeAws, home: StateHome, tmp_path: Path) -> None:
    local = _waiting(aws, home, tmp_path)
    backend = aws.backend()
    listed = backend.recon_list()
    assert [item.id for item in listed] == local.view["open_items"]
    assert listed[0].waiting
    assert backend.recon_list(tenant="acme") == listed  # the open-items index
    assert backend.recon_list(tenant="globex") == []
    assert backend.recon_list(status=ReconFilter.RESOLVED) == []
    assert backend.recon_list(status=ReconFilter.ALL) == listed
    assert backend.recon_show(listed[0].id) == listed[0]
    with pytest.raises(NotFoundError, match=r"^no reconciliation item 'nope'$"):
        backend.recon_show("nope")


def test_recon_resolve_resumes_the_waiting_case(
    aws: FakeAws, home: StateHome, tmp_path: Path
) -> None:
    local = _waiting(aws, home, tmp_path)
    item_id = local.view["open_items"][0]
    resolution = aws.backend().recon_resolve(item_id, ReconOutcome.APPLIED, "ops@acme", "found")
    assert (resolution.item.status, resolution.item.outcome) == ("RESOLVED", "applied")
    assert resolution.item.resolved_by == MOTO_CALLER  # the IAM identity, not --by
    assert resolution.execution is not None
    assert resolution.execution.name == "acme-CASE-1001-r1"
    assert resolution.execution.open_items == ()
    ledger = aws.ledger()
    stored = ledger.get_item(item_id)
    assert stored is not None
    assert stored.status is ReconStatus.RESOLVED
    record = ledger.get("acme:CASE-1001:r1:create_shipment")
    assert record is not None
    assert record.status is Status.COMPLETED
    # The same decision again changes nothing; the other one is refused.
    again = aws.backend().recon_resolve(item_id, ReconOutcome.APPLIED, "ops@acme", "found")
    assert again.item == resolution.item
    with pytest.raises(IllegalTransitionError, match="already resolved as applied"):
        aws.backend().recon_resolve(item_id, ReconOutcome.NOT_APPLIED, "ops@acme", "oops")


def _operator_session(role: str, session: str) -> Any:
    """An STS client signed with an assumed role's session credentials (moto's IAM)."""
    iam = boto3.client("iam", region_name=REGION)
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": ACCOUNT}, "Action": "sts:AssumeRole"}
        ],
    }
    arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    credentials = boto3.client("sts", region_name=REGION).assume_role(
        RoleArn=arn, RoleSessionName=session
    )["Credentials"]
    return boto3.client(
        "sts",
        region_name=REGION,
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )


def test_on_aws_the_decider_is_the_callers_iam_identity_and_each_resolution_is_audited(
    aws: FakeAws, home: StateHome, tmp_path: Path
) -> None:
    local = _waiting(aws, home, tmp_path)
    item_id = local.view["open_items"][0]
    alice = _operator_session("stepsaga-operator", "alice")
    alice_arn = f"arn:aws:sts::{ACCOUNT}:assumed-role/stepsaga-operator/alice"

    resolution = aws.backend(identity=alice).recon_resolve(
        item_id, ReconOutcome.APPLIED, "the-ceo@acme.example", "found it"
    )

    assert resolution.item.resolved_by == alice_arn
    assert aws.ledger().get_item(item_id).resolved_by == alice_arn  # type: ignore[union-attr]
    audit = read_resolution_audit(aws.ddb, TABLE, item_id)
    assert audit is not None
    assert {k: audit[k] for k in ("outcome", "resolved_by", "caller_arn", "note")} == {
        "outcome": "applied",
        "resolved_by": alice_arn,
        "caller_arn": alice_arn,
        "note": "found it",
    }
    assert audit["caller_account"] == ACCOUNT
    assert audit["case_id"] == "CASE-1001"
    # Someone else resolving the same way again (to resume a case) neither changes who
    # decided nor writes a second audit record.
    again = aws.backend().recon_resolve(item_id, ReconOutcome.APPLIED, None, "found it")
    assert again.item.resolved_by == alice_arn
    assert read_resolution_audit(aws.ddb, TABLE, item_id) == audit
    audits = aws.ddb.scan(
        TableName=TABLE,
        FilterExpression="begins_with(pk, :audit)",
        ExpressionAttributeValues={":audit": {"S": "AUDIT#"}},
    )["Items"]
    assert len(audits) == 1


def test_recon_resolve_without_a_waiting_case(
    aws: FakeAws, home: StateHome, tmp_path: Path
) -> None:
    local = run_locally(home, write_case(tmp_path), UNVERIFIABLE)
    stripped = [replace(item, task_token=None) for item in local.items]
    aws.copy_ledger(local.records, stripped)
    item_id = local.view["open_items"][0]
    resolution = aws.backend().recon_resolve(item_id, ReconOutcome.NOT_APPLIED, "ops", "none")
    assert resolution.execution is None
    assert resolution.item.outcome == "not_applied"
    with pytest.raises(NotFoundError):
        aws.backend().recon_resolve("nope", ReconOutcome.APPLIED, "ops", "x")


def test_following_an_execution_moto_runs() -> None:
    """moto runs a stand-in machine (Prepare → Fail ``Saga.Compensated``) on its own
    thread: the backend polls until it stops and reports its real history as notices."""
    stand_in = {
        "StartAt": "Prepare",
        "States": {
            "Prepare": {"Type": "Pass", "Next": "Compensated"},
            "Compensated": {"Type": "Fail", "Error": SAGA_COMPENSATED, "Cause": "rejected"},
        },
    }
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", region_name=REGION)
        ddb = boto3.client("dynamodb", region_name=REGION)
        create_table(ddb, TABLE)
        machine = sfn.create_state_machine(
            name=MACHINE, definition=json.dumps(stand_in), roleArn=ROLE_ARN
        )
        settings = AwsSettings(machine["stateMachineArn"], TABLE)
        backend = AwsBackend(
            settings,
            project=reference_project(),
            clients=FixedClients(sfn, ddb),
            wait_seconds=10,
            poll_seconds=0.05,
        )
        notices: list[Progress] = []
        view = backend.start(_case(), on_event=notices.append)
    assert (view.status, view.error, view.outcome) == ("FAILED", SAGA_COMPENSATED, "compensated")
    assert [(n.kind, n.state or n.error) for n in notices] == [
        (ProgressKind.STATE_ENTERED, "Prepare"),
        (ProgressKind.STATE_ENTERED, "Compensated"),
        (ProgressKind.ENDED, SAGA_COMPENSATED),
    ]


#: The refund's reply is lost twice and the automatic looks fail: a person decides it.
REFUND_UNVERIFIABLE = (
    {"service": "payments", "operation": "refund", "times": 2, "fault": "lose_response"},
    {"service": "payments", "operation": "find_refund_by_key", "times": 2, "fault": "throttle"},
)


def test_on_aws_not_applied_on_a_refund_takes_two_iam_identities_and_one_audit_record(
    aws: FakeAws, home: StateHome, tmp_path: Path
) -> None:
    local = run_locally(home, write_case(tmp_path), write_faults(tmp_path, *REFUND_UNVERIFIABLE))
    aws.copy_ledger(local.records, [replace(item, task_token=None) for item in local.items])
    item_id = local.view["open_items"][0]
    alice = _operator_session("stepsaga-operator", "alice")
    bob = _operator_session("stepsaga-operator-2", "bob")
    alice_arn = f"arn:aws:sts::{ACCOUNT}:assumed-role/stepsaga-operator/alice"
    bob_arn = f"arn:aws:sts::{ACCOUNT}:assumed-role/stepsaga-operator-2/bob"

    first = aws.backend(identity=alice).recon_resolve(
        item_id, ReconOutcome.NOT_APPLIED, None, "PSP shows nothing"
    )

    assert (first.item.status, first.item.awaiting_second_approver) == ("OPEN", True)
    assert first.item.first_approval is not None
    assert first.item.first_approval["by"] == alice_arn
    assert first.execution is None
    assert read_resolution_audit(aws.ddb, TABLE, item_id) is None
    with pytest.raises(IllegalTransitionError, match="needs a second approver"):
        aws.backend(identity=alice).recon_resolve(item_id, ReconOutcome.NOT_APPLIED, None, "x")
    with pytest.raises(IllegalTransitionError, match="disagreement"):
        aws.backend(identity=bob).recon_resolve(item_id, ReconOutcome.APPLIED, None, "seen")

    second = aws.backend(identity=bob).recon_resolve(
        item_id, ReconOutcome.NOT_APPLIED, None, "confirmed with PSP"
    )

    assert (second.item.status, second.item.resolved_by) == ("RESOLVED", bob_arn)
    record = aws.ledger().get("acme:CASE-1001:r1:refund_payment")
    assert record is not None
    assert record.status is Status.RELEASED
    flat = read_resolution_audit(aws.ddb, TABLE, item_id)
    assert flat is not None
    assert {k: flat[k] for k in ("outcome", "resolved_by", "first_approver", "caller_arn")} == {
        "outcome": "not_applied",
        "resolved_by": bob_arn,
        "first_approver": alice_arn,
        "caller_arn": bob_arn,
    }
    assert flat["caller_account"] == ACCOUNT
    shown = aws.backend().recon_show(item_id)
    assert shown.audit is not None
    assert [d["by"] for d in shown.audit["deciders"]] == [alice_arn, bob_arn]
    assert shown.audit["notes"] == ["PSP shows nothing", "confirmed with PSP"]
    assert shown.audit["identity"]["caller_user_id"]


def test_an_audit_record_written_apart_from_its_resolution_still_reads(aws: FakeAws) -> None:
    """Items resolved before audit records joined the resolution's transaction keep the
    flat record ``record_resolution`` wrote; ``recon show`` reads it as one decider."""
    flat = {
        "item_id": "rec-old",
        "tenant_id": "acme",
        "case_id": "CASE-1",
        "step": "CreateShipment",
        "action_key": "acme:CASE-1:r1:create_shipment",
        "outcome": "applied",
        "resolved_by": "arn:aws:sts::1:assumed-role/Ops/alice",
        "caller_arn": "arn:aws:sts::1:assumed-role/Ops/alice",
        "caller_account": "1",
        "caller_user_id": "AROA:alice",
        "note": "carrier shows it",
        "recorded_at": "2026-11-30T10:00:00+00:00",
    }
    aws.ddb.put_item(
        TableName=TABLE,
        Item={
            "pk": {"S": "AUDIT#rec-old"},
            "sk": {"S": "RESOLUTION"},
            **{k: {"S": v} for k, v in flat.items()},
        },
    )
    audit = aws.ledger().get_audit("rec-old")
    assert audit is not None
    assert [(d.by, d.note) for d in audit.deciders] == [(flat["resolved_by"], flat["note"])]
    assert dict(audit.identity) == {
        "caller_arn": flat["caller_arn"],
        "caller_account": "1",
        "caller_user_id": "AROA:alice",
    }
