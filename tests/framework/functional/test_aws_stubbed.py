"""What moto cannot play: ``RedriveExecution`` (absent from moto 5.2), and the errors AWS
answers ``StartExecution`` and ``SendTaskSuccess`` with. Step Functions is a botocore
``Stubber`` here (every call and its parameters checked, in order); the ledger stays on
moto's DynamoDB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from stepsaga._project.home import StateHome
from stepsaga._reconciliation import decision_of
from stepsaga.backends import ReconOutcome
from stepsaga.backends._aws import AwsBackend, FixedClients, redrive_token
from stepsaga.backends._aws.pointers import Pointer, record_pointer
from stepsaga.backends._progress import Progress, ProgressKind
from stepsaga.errors import (
    DecisionNotDeliveredError,
    ExecutionNotRedrivable,
    InvalidInputError,
    TransientError,
)
from stepsaga.ledger._models import ReconStatus
from tests.framework.functional.aws_support import REGION, TABLE, FakeAws, fake_aws, run_locally
from tests.framework.functional.cli_support import EXAMPLES, case_data, write_case
from workflows.case import parse_case
from workflows.project import reference_project

NAME = "acme-CASE-1001-r1"
STARTED = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
#: Who moto's STS says the caller is: on AWS, the decider recorded and sent.
MOTO_CALLER = "arn:aws:sts::123456789012:user/moto"


@dataclass
class Stubbed:
    aws: FakeAws
    sfn: Any
    stub: Stubber

    @property
    def arn(self) -> str:
        return self.aws.execution_arn(NAME)

    def backend(self, **changes: Any) -> AwsBackend:
        clients = FixedClients(self.sfn, self.aws.ddb)
        changes.setdefault("wait_seconds", 0)
        return AwsBackend(
            self.aws.settings, project=reference_project(), clients=clients, **changes
        )

    def describe(self, status: str, **fields: Any) -> None:
        response = {
            "executionArn": self.arn,
            "stateMachineArn": self.aws.state_machine_arn,
            "name": NAME,
            "status": status,
            "startDate": STARTED,
            "input": json.dumps(parse_case(case_data()).execution_input()),
            **fields,
        }
        self.stub.add_response("describe_execution", response, {"executionArn": self.arn})

    def located(self, status: str, **fields: Any) -> None:
        """Finding ``NAME``: its ``DescribeExecution`` (the ``Query`` of pointers that
        checks no case id looks the same goes to moto's DynamoDB)."""
        self.describe(status, **fields)

    def no_other_revisions(self, status: str, **fields: Any) -> None:
        """Redrive looks for a later revision: the case's pointers (moto) name only this
        execution, described once more."""
        self.describe(status, **fields)

    def history(self, *types: str) -> None:
        events = [
            {"id": i, "previousEventId": i - 1, "timestamp": STARTED, "type": kind}
            for i, kind in enumerate(types, 1)
        ]
        params = {
            "executionArn": self.arn,
            "reverseOrder": False,
            "includeExecutionData": True,
            "maxResults": 1000,
        }
        self.stub.add_response("get_execution_history", {"events": events}, params)


@pytest.fixture
def stubbed() -> Iterator[Stubbed]:
    with fake_aws() as aws:
        sfn = boto3.client("stepfunctions", region_name=REGION)
        started = Pointer.of(aws.state_machine_arn, "acme", "CASE-1001", 1, at=STARTED)
        record_pointer(aws.ddb, TABLE, started)
        with Stubber(sfn) as stub:
            yield Stubbed(aws, sfn, stub)
            stub.assert_no_pending_responses()


# --- redrive -----------------------------------------------------------------------------


def test_redrive_sends_a_token_fixed_by_execution_and_redrive_count(stubbed: Stubbed) -> None:
    stubbed.located("FAILED", error="TransientError", redriveStatus="REDRIVABLE")
    stubbed.no_other_revisions("FAILED")
    token = redrive_token(stubbed.arn, 0)
    stubbed.stub.add_response(
        "redrive_execution",
        {"redriveDate": STARTED},
        {"executionArn": stubbed.arn, "clientToken": token},
    )
    stubbed.describe("RUNNING", redriveCount=1, redriveDate=STARTED)
    view = stubbed.backend().redrive(NAME)
    assert (view.status, view.redrive_count, view.outcome) == ("RUNNING", 1, "running")
    assert len(token) == 64
    assert token == redrive_token(stubbed.arn, 0)  # a repeated call is the same request
    assert token != redrive_token(stubbed.arn, 1)  # the next redrive is a new one


def test_a_non_redrivable_execution_is_refused_with_the_service_reason(stubbed: Stubbed) -> None:
    stubbed.located("SUCCEEDED", stopDate=STARTED, redriveStatus="NOT_REDRIVABLE")
    stubbed.no_other_revisions("SUCCEEDED")
    stubbed.stub.add_client_error(
        "redrive_execution",
        service_error_code="ExecutionNotRedrivable",
        service_message="Execution with status SUCCEEDED cannot be redriven",
        expected_params={"executionArn": stubbed.arn, "clientToken": redrive_token(stubbed.arn, 0)},
    )
    with pytest.raises(ExecutionNotRedrivable) as caught:
        stubbed.backend().redrive(NAME)
    assert caught.value.message == (
        f"execution {NAME} (SUCCEEDED) cannot be redriven: "
        "Execution with status SUCCEEDED cannot be redriven"
    )
    assert isinstance(caught.value, InvalidInputError)


def test_redrive_reports_only_what_happens_after_it(stubbed: Stubbed) -> None:
    stubbed.located("FAILED", error="TransientError")
    stubbed.no_other_revisions("FAILED")
    stubbed.history("ExecutionStarted", "TaskStateEntered", "ExecutionFailed")
    stubbed.stub.add_response("redrive_execution", {"redriveDate": STARTED})
    stubbed.describe("RUNNING", redriveCount=1)
    stubbed.history("ExecutionStarted", "TaskStateEntered", "ExecutionFailed", "ExecutionRedriven")
    notices: list[Progress] = []
    stubbed.backend().redrive(NAME, on_event=notices.append)
    assert [notice.kind for notice in notices] == [ProgressKind.REDRIVEN]


# --- start -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "kind", "words"),
    [
        ("AccessDeniedException", InvalidInputError, "AWS denied states:StartExecution"),
        ("ThrottlingException", TransientError, "throttled or unavailable"),
        ("InvalidExecutionInput", InvalidInputError, "refused the request"),
    ],
)
def test_start_errors(stubbed: Stubbed, code: str, kind: type[Exception], words: str) -> None:
    # The fixture's pointer names an execution AWS does not know: an interrupted start.
    stubbed.stub.add_client_error("describe_execution", service_error_code="ExecutionDoesNotExist")
    stubbed.stub.add_client_error("start_execution", service_error_code=code, service_message="no")
    with pytest.raises(kind, match=words):
        stubbed.backend().start(parse_case(case_data()))


def test_start_accepts_what_aws_answers_for_a_running_same_input(stubbed: Stubbed) -> None:
    """AWS answers a repeated StartExecution of a running execution with its ARN."""
    case = parse_case(case_data())
    stubbed.describe("RUNNING")  # its pointer's execution: a re-start
    stubbed.stub.add_response(
        "start_execution",
        {"executionArn": stubbed.arn, "startDate": STARTED},
        {
            "stateMachineArn": stubbed.aws.state_machine_arn,
            "name": NAME,
            "input": json.dumps(case.execution_input(), sort_keys=True, separators=(",", ":")),
        },
    )
    stubbed.describe("RUNNING")
    assert stubbed.backend().start(case).execution_arn == stubbed.arn


def test_start_goes_through_the_alias_when_the_stack_has_one(stubbed: Stubbed) -> None:
    """``StartExecution`` names the ``live`` alias (the execution keeps the version it
    starts on); AWS answers with the unqualified execution ARN, the one ``owns`` knows."""
    case = parse_case(case_data())
    alias = f"{stubbed.aws.state_machine_arn}:live"
    settings = replace(stubbed.aws.settings, alias_arn=alias)
    # The fixture's pointer names an execution AWS does not know yet: an interrupted start.
    stubbed.stub.add_client_error("describe_execution", service_error_code="ExecutionDoesNotExist")
    stubbed.stub.add_response(
        "start_execution",
        {"executionArn": stubbed.arn, "startDate": STARTED},
        {
            "stateMachineArn": alias,
            "name": NAME,
            "input": json.dumps(case.execution_input(), sort_keys=True, separators=(",", ":")),
        },
    )
    stubbed.describe(
        "RUNNING",
        stateMachineAliasArn=alias,
        stateMachineVersionArn=f"{stubbed.aws.state_machine_arn}:3",
    )
    backend = AwsBackend(
        settings,
        project=reference_project(),
        clients=FixedClients(stubbed.sfn, stubbed.aws.ddb),
        wait_seconds=0,
    )
    assert backend.start(case).execution_arn == stubbed.arn
    assert settings.owns(stubbed.arn)


# --- recon resolve: SendTaskSuccess ------------------------------------------------------


def _waiting(stubbed: Stubbed, home: StateHome, tmp_path: Path) -> tuple[str, str]:
    """A case waiting on an item (ledger from a local run): the item's id and task token."""
    local = run_locally(home, write_case(tmp_path), EXAMPLES / "faults-shipment-unverifiable.json")
    stubbed.aws.copy_ledger(local.records, local.items)
    item = next(i for i in local.items if i.status is ReconStatus.OPEN)
    assert item.task_token is not None
    return item.item_id, item.task_token


def _decision(token: str, item_id: str, outcome: str, by: str, note: str) -> dict[str, Any]:
    """``SendTaskSuccess`` parameters: the token and the ``OperatorDecision`` as JSON."""
    output = {"outcome": outcome, "item_id": item_id, "decided_by": by, "note": note}
    return {"taskToken": token, "output": json.dumps(output)}


def test_resolve_sends_the_operator_decision(
    stubbed: Stubbed, home: StateHome, tmp_path: Path
) -> None:
    item_id, token = _waiting(stubbed, home, tmp_path)
    stubbed.describe("RUNNING")
    decision = _decision(token, item_id, "applied", MOTO_CALLER, "seen")
    stubbed.stub.add_response("send_task_success", {}, decision)
    stubbed.describe("SUCCEEDED", stopDate=STARTED)
    resolution = stubbed.backend().recon_resolve(item_id, ReconOutcome.APPLIED, "ops@acme", "seen")
    assert resolution.execution is not None
    assert resolution.execution.outcome == "completed"
    resolved = stubbed.aws.ledger().get_item(item_id)
    assert resolved is not None
    assert json.loads(decision["output"]) == decision_of(resolved)


def test_a_wait_that_ended_gets_a_clear_message(
    stubbed: Stubbed, home: StateHome, tmp_path: Path
) -> None:
    item_id, token = _waiting(stubbed, home, tmp_path)
    stubbed.describe("FAILED", error="States.Timeout")
    stubbed.stub.add_client_error(
        "send_task_success",
        service_error_code="TaskTimedOut",
        service_message="Task Timed Out",
        expected_params=_decision(token, item_id, "applied", MOTO_CALLER, "seen"),
    )
    with pytest.raises(DecisionNotDeliveredError) as caught:
        stubbed.backend().recon_resolve(item_id, ReconOutcome.APPLIED, "ops@acme", "seen")
    assert caught.value.message == (
        f"item {item_id} is resolved as applied, but execution {NAME} no longer waits for it "
        f"(TaskTimedOut: Task Timed Out); redrive it (stepsaga --backend aws redrive {NAME}) "
        "and it goes on with this decision"
    )
    stored = stubbed.aws.ledger().get_item(item_id)
    assert stored is not None
    assert stored.status is ReconStatus.RESOLVED  # the finding stands
    # Resolving again the same way is quiet: nothing waits on that token any more.
    stubbed.describe("FAILED", error="States.Timeout")
    stubbed.stub.add_client_error("send_task_success", service_error_code="InvalidToken")
    stubbed.describe("FAILED", error="States.Timeout")
    again = stubbed.backend().recon_resolve(item_id, ReconOutcome.APPLIED, "ops@acme", "seen")
    assert again.execution is not None
    assert again.execution.outcome == "failed"


def test_a_failed_delivery_is_retried_by_resolving_again(
    stubbed: Stubbed, home: StateHome, tmp_path: Path
) -> None:
    item_id, token = _waiting(stubbed, home, tmp_path)
    stubbed.describe("RUNNING")
    stubbed.stub.add_client_error("send_task_success", service_error_code="ThrottlingException")
    with pytest.raises(TransientError, match="run the same recon resolve again to resume it"):
        stubbed.backend().recon_resolve(item_id, ReconOutcome.NOT_APPLIED, "ops", "none")
    stubbed.describe("RUNNING")
    decision = _decision(token, item_id, "not_applied", MOTO_CALLER, "none")
    stubbed.stub.add_response("send_task_success", {}, decision)
    stubbed.describe("RUNNING")
    resumed = stubbed.backend().recon_resolve(item_id, ReconOutcome.NOT_APPLIED, "ops", "none")
    assert resumed.item.outcome == "not_applied"


# --- stop and redrive refusals -----------------------------------------------------------

STOP_CAUSE = "stopped by ops@acme.example: customer cancelled"


def test_stop_sends_stop_execution_and_settles_the_ledger(
    stubbed: Stubbed, home: StateHome, tmp_path: Path
) -> None:
    item_id, _ = _waiting(stubbed, home, tmp_path)
    stubbed.located("RUNNING")
    stubbed.stub.add_response(
        "stop_execution",
        {"stopDate": STARTED},
        {"executionArn": stubbed.arn, "error": "Stepsaga.Stopped", "cause": STOP_CAUSE},
    )
    stubbed.describe("ABORTED", stopDate=STARTED, error="Stepsaga.Stopped", cause=STOP_CAUSE)
    view = stubbed.backend().stop(NAME, by="ops@acme.example", note="customer cancelled")
    assert (view.status, view.outcome, view.cause) == ("ABORTED", "stopped", STOP_CAUSE)
    assert view.waiting_for == ()
    assert view.open_items == (item_id,)
    item = stubbed.aws.ledger().get_item(item_id)
    assert item is not None
    assert (item.status, item.task_token) == (
        ReconStatus.OPEN,
        None,
    )  # decided later, resumes nothing
    # Resolving it now records the finding and sends nothing (the stub would fail on a call).
    resolution = stubbed.backend().recon_resolve(
        item_id, ReconOutcome.APPLIED, "ops@acme.example", "carrier shows it"
    )
    assert resolution.execution is None


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        (
            {"status": "ABORTED", "error": "Stepsaga.Stopped", "cause": STOP_CAUSE},
            f"it was stopped ({STOP_CAUSE})",
        ),
        (
            {"status": "FAILED", "error": "Saga.Compensated"},
            "it ended compensated (its completed steps were undone or escalated); approve a "
            "new revision to act on the case again",
        ),
    ],
)
def test_stopped_and_compensated_executions_are_not_redriven(
    stubbed: Stubbed, fields: dict[str, str], reason: str
) -> None:
    status = fields.pop("status")
    stubbed.located(status, stopDate=STARTED, **fields)
    with pytest.raises(ExecutionNotRedrivable) as caught:  # before any RedriveExecution
        stubbed.backend().redrive(NAME)
    assert caught.value.message == f"execution {NAME} ({status}) cannot be redriven: {reason}"


def test_stop_refuses_an_ended_execution(stubbed: Stubbed) -> None:
    stubbed.located("SUCCEEDED", stopDate=STARTED)
    with pytest.raises(InvalidInputError, match="is SUCCEEDED, not running: there is nothing"):
        stubbed.backend().stop(NAME, by="ops@acme.example", note="late")
