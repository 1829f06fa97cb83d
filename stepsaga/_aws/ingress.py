"""The production ingress: approved cases arrive on an SQS queue, one execution each.

A message body is the case JSON exactly as a case file holds it, or an EventBridge event
whose ``detail`` is that case (an EventBridge rule targeting the queue delivers this form).
For each message the starter (``stepsaga._aws.ingress.handler``, deployed by the construct)
validates the case against the saga's input model, derives the execution name from tenant,
case and revision (``stepsaga.backends._naming``), records the case's pointer in the ledger
table (``stepsaga.backends._aws.pointers``: how ``stepsaga status CASE_ID`` finds it) and
starts it:

==========================  ================================================================
what arrived                what happens
==========================  ================================================================
a new case                  ``StartExecution`` under the derived name (``started``)
the same case again         nothing: the existing execution is the answer (``duplicate``)
an earlier revision after   sent to the dead-letter queue with the reason (``superseded``):
a later one started         a later revision is the case's intent now
a later revision while an   not started: reported as a batch item failure (``waiting``), so
earlier one is still open   SQS delivers it again after the visibility timeout (after
                            ``maxReceiveCount`` it moves to the DLQ; replay it from there)
same name, another input    sent to the dead-letter queue with the reason (``conflict``)
a pointer to another        sent to the dead-letter queue with the reason (``conflict``)
execution (a shared table)
invalid JSON or case        sent to the dead-letter queue with the field named (``invalid``)
AWS throttles (or is        backed off (``stepsaga._aws.queue_backoff``): a batch item failure
unavailable)                whose visibility timeout grows with its receive count, and the
                            rest of the batch is backed off without calling AWS
AWS fails otherwise         reported as a batch item failure: SQS delivers it again, and
                            after the queue's ``maxReceiveCount`` moves it to the DLQ
==========================  ================================================================

The revision rule is the one ``stepsaga start`` applies (``lifecycle.start_refusal``: a
revision starts only when every earlier one is closed, and never after a later one); the
ledger enforces it once more in every claim (``stepsaga.ledger._latest``), for deliveries
that race past this check.

The dead-letter queue has an alarm. Logs carry identifiers only (tenant, case, revision,
execution name, verdict), never the case's contents.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Protocol

from stepsaga._aws.queue_backoff import Backoff, VisibilityChanger, back_off
from stepsaga._model.case import OpenCase, parse_case
from stepsaga._util.clock import Clock, SystemClock
from stepsaga.backends._assemble import CaseIdentity
from stepsaga.backends._aws.errors import aws_call
from stepsaga.backends._aws.locate import case_executions
from stepsaga.backends._aws.pointers import Pointer, record_pointer
from stepsaga.backends._aws.settings import AwsSettings
from stepsaga.backends._lifecycle import Sibling, start_refusal, superseding
from stepsaga.errors import ExecutionAlreadyExists, InvalidInputError, StepSagaError, TransientError
from stepsaga.workflow._saga import Saga

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_stepfunctions import SFNClient

__all__ = [
    "ENV_DEAD_LETTER_QUEUE_URL",
    "ENV_QUEUE_URL",
    "REASON_ATTRIBUTE",
    "StartVerdict",
    "Starter",
    "handler",
]

#: The dead-letter queue the starter sends invalid and conflicting cases to.
ENV_DEAD_LETTER_QUEUE_URL: Final = "STEPSAGA_INGRESS_DLQ_URL"
#: The ingress queue itself: where a throttled message's visibility is extended.
ENV_QUEUE_URL: Final = "STEPSAGA_INGRESS_QUEUE_URL"
#: Where executions start: the state machine's ``live`` alias (default: the machine).
ENV_START_ARN: Final = "STEPSAGA_INGRESS_START_ARN"
#: Message attributes on a dead letter: why, and the verdict.
REASON_ATTRIBUTE: Final = "stepsaga-reason"
VERDICT_ATTRIBUTE: Final = "stepsaga-verdict"
#: SQS message attribute values are at most 256 KiB; a reason stays one short line.
_MAX_REASON: Final = 1000


class StartVerdict(StrEnum):
    STARTED = "started"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"
    INVALID = "invalid"
    SUPERSEDED = "superseded"
    WAITING = "waiting"


@dataclass(frozen=True)
class StartOutcome:
    verdict: StartVerdict
    execution_name: str | None = None
    execution_arn: str | None = None
    #: One line for the dead letter (may quote the case: it never goes to the logs).
    reason: str | None = None
    #: The field an invalid case got wrong (logged).
    field: str | None = None

    @property
    def dead_letter(self) -> bool:
        return self.verdict in (
            StartVerdict.CONFLICT,
            StartVerdict.INVALID,
            StartVerdict.SUPERSEDED,
        )

    @property
    def retry(self) -> bool:
        """SQS must deliver the message again later."""
        return self.verdict is StartVerdict.WAITING


class Sender(VisibilityChanger, Protocol):
    """What the starter needs of a boto3 SQS client."""

    def send_message(self, **kwargs: Any) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Starter:
    """Starts the executions of one saga's state machine from queued cases."""

    saga: Saga
    state_machine_arn: str
    sfn: SFNClient
    sqs: Sender
    dead_letter_queue_url: str
    #: The ledger table, where each start's case pointer is recorded first.
    ddb: DynamoDBClient
    table_name: str
    #: ``StartExecution`` target: an alias or version ARN pins the definition a case runs.
    start_arn: str | None = None
    clock: Clock = field(default_factory=SystemClock)
    #: The ingress queue (None: a busy message just comes back at the queue's timeout).
    queue_url: str | None = None
    backoff: Backoff = field(default_factory=Backoff)

    def start(self, body: str) -> StartOutcome:
        """One message body → its outcome; AWS failures raise (the message is retried)."""
        try:
            case = parse_case(_case_data(body), self.saga.input_model or OpenCase)
            wanted = case.execution_input()
            self.saga.check_input(wanted)  # what ``stepsaga start`` refuses, refused here too
        except InvalidInputError as exc:
            return StartOutcome(
                StartVerdict.INVALID, reason=exc.message, field=str(exc.data.get("field"))
            )
        pointer = Pointer.of(
            self.state_machine_arn,
            case.tenant_id,
            case.case_id,
            case.approval.revision,
            at=self.clock.now(),
        )
        name, arn = pointer.execution_name, pointer.execution_arn
        refused = self._revision_refusal(
            CaseIdentity(case.tenant_id, case.case_id, case.approval.revision)
        )
        if refused is not None:
            verdict, reason = refused
            return StartOutcome(verdict, name, arn, reason=reason)
        try:
            record_pointer(self.ddb, self.table_name, pointer)
        except ExecutionAlreadyExists as exc:
            return StartOutcome(StartVerdict.CONFLICT, name, arn, reason=exc.message)
        try:
            with aws_call("states:StartExecution"):
                started = self.sfn.start_execution(
                    stateMachineArn=self.start_arn or self.state_machine_arn,
                    name=name,
                    input=json.dumps(wanted, sort_keys=True, separators=(",", ":")),
                )
            return StartOutcome(StartVerdict.STARTED, name, started["executionArn"])
        except ExecutionAlreadyExists:
            pass
        with aws_call("states:DescribeExecution"):
            described = self.sfn.describe_execution(executionArn=arn)
        if json.loads(described.get("input", "null")) == wanted:
            return StartOutcome(StartVerdict.DUPLICATE, name, arn)
        return StartOutcome(
            StartVerdict.CONFLICT,
            name,
            arn,
            reason=(
                f"execution {name} already exists ({described['status']}) for case "
                f"{case.case_id} revision {case.approval.revision} with a different input; "
                "approve a new revision to change it"
            ),
        )

    def _revision_refusal(self, case: CaseIdentity) -> tuple[StartVerdict, str] | None:
        """The start rule for revisions (``lifecycle.start_refusal``, as ``stepsaga start``
        applies it): superseded for good, or waiting for an earlier revision to close."""
        settings = AwsSettings(
            state_machine_arn=self.state_machine_arn,
            ledger_table_name=self.table_name,
            source="ingress",
        )
        found = case_executions(self.sfn, self.ddb, settings, case, previous_by_name=True)
        siblings = [Sibling.of(described) for described in found]
        if any(s.identity.revision == case.revision for s in siblings):
            return None  # this revision again: a duplicate or a conflict, decided below
        refusal = start_refusal(case, siblings)
        if refusal is None:
            return None
        later = superseding(case, siblings) is not None
        return (StartVerdict.SUPERSEDED if later else StartVerdict.WAITING), refusal

    def handle(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """An SQS batch → ``batchItemFailures`` (the messages SQS must deliver again)."""
        failures: list[dict[str, str]] = []
        busy: list[Mapping[str, Any]] = []  # once AWS throttles, the rest waits too
        for record in event.get("Records", []):
            message_id = str(record.get("messageId", ""))
            if busy:
                _log("busy", message_id=message_id)
                busy.append(record)
                continue
            try:
                outcome = self.start(str(record.get("body", "")))
                if outcome.retry:
                    failures.append({"itemIdentifier": message_id})
                elif outcome.dead_letter:
                    self._dead_letter(str(record.get("body", "")), outcome)
            except TransientError as exc:
                _log("busy", message_id=message_id, error=exc.error_name())
                busy.append(record)
                continue
            except StepSagaError as exc:
                _log("retry", message_id=message_id, error=exc.error_name())
                failures.append({"itemIdentifier": message_id})
                continue
            _log(
                outcome.verdict.value,
                message_id=message_id,
                execution=outcome.execution_name,
                field=outcome.field,
            )
        if busy and self.queue_url:
            back_off(self.sqs, self.queue_url, busy, self.backoff)
        failures.extend({"itemIdentifier": str(r.get("messageId", ""))} for r in busy)
        return {"batchItemFailures": failures}

    def _dead_letter(self, body: str, outcome: StartOutcome) -> None:
        reason = (outcome.reason or outcome.verdict.value)[:_MAX_REASON]
        with aws_call("sqs:SendMessage"):
            self.sqs.send_message(
                QueueUrl=self.dead_letter_queue_url,
                MessageBody=body or "(empty)",
                MessageAttributes={
                    REASON_ATTRIBUTE: {"DataType": "String", "StringValue": reason},
                    VERDICT_ATTRIBUTE: {"DataType": "String", "StringValue": outcome.verdict},
                },
            )


def _case_data(body: str) -> object:
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"message body: not JSON ({exc.msg})", field="body") from None
    if isinstance(data, dict) and "detail-type" in data and "detail" in data:
        return data["detail"]  # an EventBridge event delivered to the queue
    return data


def _log(verdict: str, **fields: object) -> None:
    """One JSON line per message: identifiers only."""
    shown = {k: v for k, v in fields.items() if v is not None}
    print(json.dumps({"ingress": verdict, **shown}, separators=(",", ":")), flush=True)


_starter: Starter | None = None


def _from_environment() -> Starter:
    import boto3

    from stepsaga._aws.aws_region import region_from
    from stepsaga._project.deployment import ENV_LEDGER_TABLE_NAME, ENV_SAGA, ENV_STATE_MACHINE_ARN
    from stepsaga.workflow._loader import load_saga

    region = region_from(os.environ)
    return Starter(
        saga=load_saga(os.environ[ENV_SAGA], ENV_SAGA),
        state_machine_arn=os.environ[ENV_STATE_MACHINE_ARN],
        sfn=boto3.client("stepfunctions", region_name=region),
        sqs=boto3.client("sqs", region_name=region),
        dead_letter_queue_url=os.environ[ENV_DEAD_LETTER_QUEUE_URL],
        ddb=boto3.client("dynamodb", region_name=region),
        table_name=os.environ[ENV_LEDGER_TABLE_NAME],
        start_arn=os.environ.get(ENV_START_ARN) or None,
        queue_url=os.environ.get(ENV_QUEUE_URL) or None,
    )


def handler(event: Mapping[str, Any], context: object) -> dict[str, Any]:
    """The starter function's entry point (an SQS event source with batch item failures)."""
    global _starter
    if _starter is None:
        _starter = _from_environment()
    return _starter.handle(event)
