"""The ingress starter on moto: queued cases become executions, once each; the rest is
dead-lettered with a reason or retried."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from stepsaga import EffectClass, Saga, Step
from stepsaga._aws.ingress import REASON_ATTRIBUTE, Starter, StartVerdict
from stepsaga.backends._aws.pointers import Pointer, case_pointers, record_pointer
from stepsaga.backends._naming import execution_name
from stepsaga.cdk._access import INGRESS_POINTER_ACTIONS
from stepsaga.ledger._table import CASE_PREFIX
from tests.framework.functional.aws_support import (
    REGION,
    TABLE,
    FakeAws,
    VisibilityRecorder,
    fake_aws,
)
from tests.framework.functional.cli_support import case_data
from tests.framework.functional.grants_support import Calls, calls
from workflows.replacement_order import saga


@dataclass
class Ingress:
    aws: FakeAws
    sqs: Any
    queue_url: str
    dlq_url: str
    starter: Starter

    def deliver(self, *bodies: str) -> dict[str, Any]:
        """Send the bodies to the ingress queue and hand SQS's batch to the starter, in the
        event shape Lambda's SQS event source uses."""
        for body in bodies:
            self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body)
        received = self.sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
        ).get("Messages", [])
        records = [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "eventSource": "aws:sqs",
            }
            for m in received
        ]
        return self.starter.handle({"Records": records})

    def dead_letters(self) -> list[tuple[str, str]]:
        received = self.sqs.receive_message(
            QueueUrl=self.dlq_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
        ).get("Messages", [])
        return [
            (m["Body"], m["MessageAttributes"][REASON_ATTRIBUTE]["StringValue"]) for m in received
        ]

    def executions(self) -> list[str]:
        listed = self.aws.sfn.list_executions(stateMachineArn=self.aws.state_machine_arn)
        return sorted(e["name"] for e in listed["executions"])


@pytest.fixture
def ingress() -> Iterator[Ingress]:
    with fake_aws() as aws:
        sqs = boto3.client("sqs", region_name=REGION)
        dlq = sqs.create_queue(QueueName="ingress-dlq")["QueueUrl"]
        queue = sqs.create_queue(QueueName="ingress")["QueueUrl"]
        starter = Starter(saga, aws.state_machine_arn, aws.sfn, sqs, dlq, aws.ddb, TABLE)
        yield Ingress(aws, sqs, queue, dlq, starter)


NAME = execution_name("acme", "CASE-1001", 1)

__all__ = ["calls"]  # the fixture


def test_the_starter_calls_exactly_its_grants(calls: Calls, ingress: Ingress) -> None:
    """A start and a duplicate: the case's pointers read (one ``Query``, the start rule for
    revisions) and one conditional ``PutItem`` of a ``CASE#`` pointer each (the refusal
    returns the stored one): exactly ``INGRESS_POINTER_ACTIONS`` under ``CASE#``, the
    starter's only ledger grant (``tests/framework/infra/test_ingress.py``)."""
    body = json.dumps(case_data())
    calls.clear()
    with calls.role("ingress"):
        ingress.deliver(body)
        ingress.deliver(body)
    assert ingress.executions() == [NAME]
    assert dict(calls.table["ingress"]) == {a: {CASE_PREFIX} for a in INGRESS_POINTER_ACTIONS}
    assert not calls.index.get("ingress")


def test_a_case_starts_its_derived_execution(ingress: Ingress) -> None:
    answer = ingress.deliver(json.dumps(case_data()))
    assert answer == {"batchItemFailures": []}
    assert ingress.executions() == [NAME]
    assert ingress.dead_letters() == []


def test_the_starter_records_the_case_pointer_once_and_status_finds_it(ingress: Ingress) -> None:
    body = json.dumps(case_data())
    ingress.deliver(body)
    (first,) = case_pointers(ingress.aws.ddb, TABLE, "CASE-1001")
    assert (first.tenant_id, first.revision, first.execution_name) == ("acme", 1, NAME)
    assert first.execution_arn == ingress.aws.execution_arn(NAME)
    ingress.deliver(body)  # a duplicate keeps the first pointer as it is
    assert case_pointers(ingress.aws.ddb, TABLE, "CASE-1001") == [first]
    assert ingress.aws.backend().status("CASE-1001").name == NAME


def test_a_pointer_to_another_execution_is_dead_lettered_and_nothing_starts(
    ingress: Ingress,
) -> None:
    other = "arn:aws:states:us-east-1:123456789012:stateMachine:another-saga"
    taken = Pointer.of(other, "acme", "CASE-1001", 1, at=datetime.now(UTC))
    record_pointer(ingress.aws.ddb, TABLE, taken)
    assert ingress.deliver(json.dumps(case_data())) == {"batchItemFailures": []}
    assert ingress.executions() == []
    ((_, reason),) = ingress.dead_letters()
    assert f"already runs as {taken.execution_arn}" in reason
    assert case_pointers(ingress.aws.ddb, TABLE, "CASE-1001") == [taken]


def test_an_invalid_case_records_no_pointer(ingress: Ingress) -> None:
    ingress.deliver(json.dumps(case_data(unexpected="x")))
    assert case_pointers(ingress.aws.ddb, TABLE, "CASE-1001") == []


def test_an_eventbridge_event_carrying_the_case_starts_it_too(ingress: Ingress) -> None:
    event = {
        "version": "0",
        "id": "b1",
        "detail-type": "CaseApproved",
        "source": "acme.approvals",
        "detail": case_data(),
    }
    assert ingress.deliver(json.dumps(event)) == {"batchItemFailures": []}
    assert ingress.executions() == [NAME]


def test_a_duplicate_returns_the_same_execution(ingress: Ingress) -> None:
    body = json.dumps(case_data())
    first = ingress.starter.start(body)
    again = ingress.starter.start(json.dumps(case_data() | {}))
    assert first.verdict is StartVerdict.STARTED
    assert again.verdict in (StartVerdict.DUPLICATE, StartVerdict.STARTED)
    assert again.execution_arn == first.execution_arn
    assert ingress.deliver(body) == {"batchItemFailures": []}
    assert ingress.executions() == [NAME]
    assert ingress.dead_letters() == []


def test_a_conflicting_case_is_dead_lettered_with_its_reason(ingress: Ingress) -> None:
    ingress.deliver(json.dumps(case_data()))
    changed = case_data(order_id="ORD-OTHER")
    assert ingress.deliver(json.dumps(changed)) == {"batchItemFailures": []}
    assert ingress.executions() == [NAME]
    ((body, reason),) = ingress.dead_letters()
    assert json.loads(body) == changed
    assert reason.startswith(f"execution {NAME} already exists (RUNNING)")
    assert reason.endswith("approve a new revision to change it")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("{not json", "not JSON"),
        (json.dumps({k: v for k, v in case_data().items() if k != "order_id"}), "order_id"),
        (json.dumps(case_data(unexpected="x")), "unexpected"),
    ],
)
def test_an_invalid_case_is_dead_lettered_naming_the_field(
    ingress: Ingress, body: str, field: str
) -> None:
    assert ingress.deliver(body) == {"batchItemFailures": []}
    assert ingress.executions() == []
    ((dead, reason),) = ingress.dead_letters()
    assert dead == body
    assert field in reason
    assert "\n" not in reason


class ThrottledStepFunctions:
    """moto's client, except that ``StartExecution`` is throttled (and counted)."""

    def __init__(self, sfn: Any) -> None:
        self._sfn = sfn
        self.starts = 0

    def start_execution(self, **kwargs: Any) -> Any:
        self.starts += 1
        error = {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}
        raise ClientError(error, "StartExecution")  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sfn, name)


def test_a_throttled_start_backs_off_the_batch_instead_of_burning_receives(
    ingress: Ingress,
) -> None:
    """A backlog after an outage: the first throttled ``StartExecution`` backs off its
    message and the rest of the batch (no further calls), each hidden for longer than
    the queue's own timeout; once Step Functions takes starts again, they start."""
    sfn = ThrottledStepFunctions(ingress.aws.sfn)
    recorder = VisibilityRecorder(ingress.sqs)
    ingress.starter = replace(
        ingress.starter,
        sfn=sfn,  # type: ignore[arg-type]
        sqs=recorder,
        queue_url=ingress.queue_url,
    )
    good, other, bad = json.dumps(case_data()), json.dumps(case_data("CASE-2")), "{not json"

    answer = ingress.deliver(good, other, bad)

    assert len(answer["batchItemFailures"]) == 3
    assert sfn.starts == 1  # the others were not tried
    assert len(recorder.timeouts) == 3
    assert all(60 <= t <= 120 for t in recorder.timeouts)  # receive 1: 120 s · [0.5, 1]
    assert ingress.dead_letters() == []  # nothing dead-lettered for AWS being busy
    hidden = ingress.sqs.receive_message(QueueUrl=ingress.queue_url, MaxNumberOfMessages=10)
    assert hidden.get("Messages", []) == []

    # Time passes (SQS shows them again) and Step Functions takes starts again.
    for handle in recorder.handles:
        ingress.sqs.change_message_visibility(
            QueueUrl=ingress.queue_url, ReceiptHandle=handle, VisibilityTimeout=0
        )
    ingress.starter = replace(ingress.starter, sfn=ingress.aws.sfn)
    assert ingress.deliver() == {"batchItemFailures": []}
    assert ingress.executions() == sorted([NAME, execution_name("acme", "CASE-2", 1)])
    assert [body for body, _ in ingress.dead_letters()] == [bad]


def test_logs_name_identifiers_never_the_case(
    ingress: Ingress, capsys: pytest.CaptureFixture[str]
) -> None:
    personal = case_data()
    personal["shipment"]["address"]["postal_code"] = "x" * 40  # invalid, and personal
    ingress.deliver(json.dumps(case_data()), json.dumps(personal))
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(line["ingress"] for line in lines) == ["invalid", "started"]
    assert "x" * 40 not in json.dumps(lines)
    assert "Berlin" not in json.dumps(lines)


def test_a_case_with_a_reserved_top_level_field_is_dead_lettered_naming_it(
    ingress: Ingress,
) -> None:
    """The saga ``stepsaga start`` would run refuses it the same way (``Saga.check_input``):
    here a saga without an input model, whose cases may otherwise carry any field."""
    open_saga = Saga("open", [Step("LookUp", effect=EffectClass.READ)])
    aws = ingress.aws
    open_starter = Starter(
        open_saga, aws.state_machine_arn, aws.sfn, ingress.sqs, ingress.dlq_url, aws.ddb, TABLE
    )
    body = json.dumps(case_data(results={"IssueLabel": "forged"}))
    outcome = open_starter.start(body)
    assert (outcome.verdict, outcome.field) == (StartVerdict.INVALID, "results")
    assert "case field 'results' is reserved" in (outcome.reason or "")
    assert ingress.executions() == []


def _revision(number: int) -> str:
    data = case_data()
    data["approval"]["revision"] = number
    return json.dumps(data)


def test_an_earlier_revision_after_a_later_one_is_dead_lettered_as_superseded(
    ingress: Ingress,
) -> None:
    assert ingress.deliver(_revision(2)) == {"batchItemFailures": []}
    later = execution_name("acme", "CASE-1001", 2)
    assert ingress.executions() == [later]
    assert ingress.starter.start(_revision(1)).verdict is StartVerdict.SUPERSEDED
    assert ingress.deliver(_revision(1)) == {"batchItemFailures": []}
    assert ingress.executions() == [later]  # revision 1 never starts
    assert [p.revision for p in case_pointers(ingress.aws.ddb, TABLE, "CASE-1001")] == [2]
    (_, reason), *_ = ingress.dead_letters()
    assert f"revision 2 exists (execution {later}), so this revision is superseded" in reason


def test_a_later_revision_waits_while_an_earlier_one_runs(ingress: Ingress) -> None:
    ingress.deliver(_revision(1))
    body = _revision(2)
    ingress.sqs.send_message(QueueUrl=ingress.queue_url, MessageBody=body)
    (message,) = ingress.sqs.receive_message(QueueUrl=ingress.queue_url)["Messages"]
    record = {"messageId": message["MessageId"], "body": message["Body"]}
    # Not started, not dead-lettered: SQS delivers it again later.
    answer = ingress.starter.handle({"Records": [record]})
    assert answer == {"batchItemFailures": [{"itemIdentifier": message["MessageId"]}]}
    assert ingress.executions() == [NAME]
    assert ingress.dead_letters() == []
    ingress.aws.backend().stop(NAME, by="ops@acme.example", note="customer changed the order")
    assert ingress.starter.handle({"Records": [record]}) == {"batchItemFailures": []}
    assert ingress.executions() == [NAME, execution_name("acme", "CASE-1001", 2)]
