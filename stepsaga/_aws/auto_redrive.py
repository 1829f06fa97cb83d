"""Automatic, bounded redrive of technical failures: no person per case after a blip.

An EventBridge rule (``stepsaga.cdk._auto_redrive``) sends the execution ARN of every
``Step Functions Execution Status Change`` event of the saga's state machine with status
``TIMED_OUT``, or ``FAILED`` with an error that is not a business outcome (``Saga.*``), to
an SQS queue (:data:`MESSAGE_TEMPLATE`: the ARN only, never the case's input); the redriver
(``stepsaga._aws.auto_redrive.handler``) reads it in batches. Per message, after one
``DescribeExecution``:

=========================  ==================================================================
verdict                    when
=========================  ==================================================================
``gone``                   the execution no longer exists, or is no longer FAILED or
                           TIMED_OUT (redriven meanwhile, by a person or an earlier message)
``refused:<why>``          :func:`stepsaga.backends._bulk_redrive.decide` says no (business
                           outcome, stopped, not redrivable, outside the 14-day window), or
                           it was already redriven ``max_redrives`` times, or a step used its
                           whole ledger attempt budget, or a later revision superseded it
``waiting``                its backoff has not passed: the message is sent again with
                           ``DelaySeconds`` (never a sleep); the wait after the k-th redrive is
                           ``base_delay_seconds * 2**k``, jittered to 50-100 %, at most 900 s,
                           counted from the execution's ``stopDate``
``redriven``               ``RedriveExecution`` (client token from the ARN and
                           ``redriveCount``: a duplicate message cannot redrive twice)
``malformed``              not an execution event of this state machine: a batch item
                           failure, so SQS delivers it again and then moves it to the DLQ
=========================  ==================================================================

A refused execution stays FAILED, so the stack's ``TechnicalFailures`` alarm (which counts
FAILED executions that did not end in a ``Saga.*`` state) has already fired for it and a
person redrives it (``stepsaga redrive``) once the cause is fixed. AWS throttling, a
failed call or an unexpected error is a batch item failure too (SQS retries that message
alone, then dead-letters it); under throttling the message, and the rest of its batch
without another call, is backed off (``stepsaga._aws.queue_backoff``) so a mass failure that
exhausts ``DescribeExecution``'s quota does not dead-letter the redrives it needs. Whether a
later revision superseded the case is read from that revision's case pointer (one
``GetItem``), not from its execution. Logs carry identifiers
only (message id, execution name, verdict), never the case; each verdict is counted as an
EMF metric (:data:`METRIC_FOR_VERDICT`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stepsaga._aws import metric_names
from stepsaga._aws.queue_backoff import Backoff, VisibilityChanger, back_off
from stepsaga._handlers.metrics import MetricsSink
from stepsaga._util.clock import Clock, SystemClock
from stepsaga.backends._assemble import CaseIdentity, case_records, execution_view
from stepsaga.backends._aws.backend import redrive_token
from stepsaga.backends._aws.errors import aws_call
from stepsaga.backends._aws.locate import Described, describe
from stepsaga.backends._aws.pointers import get_pointer
from stepsaga.backends._bulk_redrive import RedriveDecision, decide
from stepsaga.backends._lifecycle import Sibling, redrive_refusal
from stepsaga.backends._naming import execution_arn
from stepsaga.errors import (
    SAGA_OUTCOME_PREFIX,
    ExecutionDoesNotExist,
    ExecutionNotRedrivable,
    InvalidInputError,
    StepSagaError,
    TransientError,
)
from stepsaga.ledger import Ledger, Status
from stepsaga.workflow._saga import Saga

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_stepfunctions import SFNClient

__all__ = [
    "DEFAULT_BASE_DELAY_SECONDS",
    "DEFAULT_MAX_REDRIVES",
    "ENV_BASE_DELAY_SECONDS",
    "ENV_MAX_REDRIVES",
    "ENV_QUEUE_URL",
    "MAX_DELAY_SECONDS",
    "MESSAGE_TEMPLATE",
    "METRIC_FOR_VERDICT",
    "REDRIVABLE_STATUSES",
    "AutoRedrive",
    "RedriveOutcome",
    "RedriveVerdict",
    "Redriver",
    "event_pattern",
    "handler",
    "input_transformer",
]

ENV_QUEUE_URL: Final = "STEPSAGA_AUTO_REDRIVE_QUEUE_URL"
ENV_MAX_REDRIVES: Final = "STEPSAGA_AUTO_REDRIVE_MAX_REDRIVES"
ENV_BASE_DELAY_SECONDS: Final = "STEPSAGA_AUTO_REDRIVE_BASE_DELAY_SECONDS"
DEFAULT_MAX_REDRIVES: Final = 3
DEFAULT_BASE_DELAY_SECONDS: Final = 60
#: SQS's longest ``DelaySeconds``, and the longest wait between two redrives.
MAX_DELAY_SECONDS: Final = 900
#: The most automatic redrives one may configure (a person should look before more).
MAX_REDRIVES_LIMIT: Final = 10
#: A delayed message may come back a little early; closer than this counts as due.
_EARLY: Final = timedelta(seconds=1)


#: The events the rule forwards: Step Functions' own, for executions that ended FAILED.
SOURCE: Final = "aws.states"
DETAIL_TYPE: Final = "Step Functions Execution Status Change"
#: What the redriver redrives: a technical failure, or the execution's own timeout
#: (``TimeoutSeconds``; the ledger replays what already happened).
REDRIVABLE_STATUSES: Final = ("FAILED", "TIMED_OUT")
#: The message the rule puts on the queue (an EventBridge input transformer): the
#: execution's ARN only. The event itself would carry the case (``detail.input``), i.e.
#: personal data, into a queue that keeps it for days.
MESSAGE_TEMPLATE: Final = {"executionArn": "$.detail.executionArn"}


def input_transformer() -> dict[str, Any]:
    """:data:`MESSAGE_TEMPLATE` as the rule target's ``InputTransformer`` (the form the
    stack synthesizes; ``tests/framework/infra`` checks they are the same)."""
    paths = {path[2:].replace(".", "-"): path for path in MESSAGE_TEMPLATE.values()}
    fields = ",".join(
        f"{json.dumps(name)}:<{path[2:].replace('.', '-')}>"
        for name, path in MESSAGE_TEMPLATE.items()
    )
    return {"InputPathsMap": paths, "InputTemplate": "{" + fields + "}"}


def event_pattern(state_machine_arn: str) -> dict[str, Any]:
    """The EventBridge pattern of the rule: this state machine's TIMED_OUT executions and
    its FAILED ones whose error is not a business outcome (``Saga.*``). The redriver
    refuses those too.

    The machine is matched unqualified or as any of its versions and aliases (``<arn>:…``):
    cases start on the ``live`` alias, and whichever form the event names, it is this
    machine's (the ``:`` keeps ``<arn>-other`` out)."""
    return {
        "source": [SOURCE],
        "detail-type": [DETAIL_TYPE],
        "detail": {
            "stateMachineArn": [state_machine_arn, {"prefix": f"{state_machine_arn}:"}],
            "$or": [
                {
                    "status": ["FAILED"],
                    "error": [{"anything-but": {"prefix": SAGA_OUTCOME_PREFIX}}],
                },
                {"status": ["TIMED_OUT"]},
            ],
        },
    }


class AutoRedrive(BaseModel):
    """How far the automatic redrive goes (``StageSettings.auto_redrive``; None: off)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    #: Redrives per execution (its ``redriveCount``, manual ones included) after which it
    #: is left FAILED for a person.
    max_redrives: int = Field(default=DEFAULT_MAX_REDRIVES, ge=1, le=MAX_REDRIVES_LIMIT)
    #: The wait before the first redrive; it doubles with each redrive (at most 900 s).
    base_delay_seconds: int = Field(default=DEFAULT_BASE_DELAY_SECONDS, ge=1, le=MAX_DELAY_SECONDS)
    #: The most concurrent redrivers its queue drives (the event source's
    #: ``MaximumConcurrency``, 2 to 1000): a mass failure is redriven at a pace the
    #: Step Functions API quotas and the saga's functions can take.
    max_concurrency: int = Field(default=2, ge=2, le=1000)

    def environment(self) -> dict[str, str]:
        """The variables the redriver reads (``from_environment``)."""
        return {
            ENV_MAX_REDRIVES: str(self.max_redrives),
            ENV_BASE_DELAY_SECONDS: str(self.base_delay_seconds),
        }

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> AutoRedrive:
        """The settings, each variable validated (one error naming the bad one)."""
        values: dict[str, int] = {}
        for variable, name in (
            (ENV_MAX_REDRIVES, "max_redrives"),
            (ENV_BASE_DELAY_SECONDS, "base_delay_seconds"),
        ):
            text = environ.get(variable)
            if text is None or text == "":
                continue
            try:
                values[name] = int(text)
            except ValueError:
                raise InvalidInputError(
                    f"{variable}: {text!r} is not a whole number", field=variable
                ) from None
            try:
                cls.model_validate({name: values[name]})
            except ValidationError as exc:
                reason = exc.errors()[0]["msg"]
                raise InvalidInputError(f"{variable}: {reason}", field=variable) from None
        return cls.model_validate(values)

    def delay(self, redrive_count: int, execution_arn: str) -> timedelta:
        """The wait before redrive ``redrive_count + 1``: ``base * 2**k`` at 50-100 %
        (equal jitter, so the wait still grows with k; drawn from the ARN and k, so every
        delivery of the same message waits for the same moment), at most 900 s."""
        digest = hashlib.sha256(f"{execution_arn}#{redrive_count}".encode()).digest()
        fraction = 0.5 + 0.5 * int.from_bytes(digest[:8], "big") / 2**64
        seconds = self.base_delay_seconds * 2 ** min(redrive_count, 30) * fraction
        return timedelta(seconds=min(float(MAX_DELAY_SECONDS), seconds))


class RedriveVerdict(StrEnum):
    REDRIVEN = "redriven"
    WAITING = "waiting"
    GONE = "gone"
    MALFORMED = "malformed"
    REFUSED_BUSINESS_OUTCOME = "refused:business_outcome"
    REFUSED_STOPPED = "refused:stopped"
    REFUSED_NOT_REDRIVABLE = "refused:not_redrivable"
    REFUSED_OUTSIDE_WINDOW = "refused:outside_window"
    REFUSED_MAX_REDRIVES = "refused:max_redrives"
    REFUSED_ATTEMPT_BUDGET = "refused:attempt_budget"
    REFUSED_SUPERSEDED = "refused:superseded"

    @property
    def refused(self) -> bool:
        return self.value.startswith("refused:")


#: ``bulk_redrive.decide``'s refusals as verdicts (the rule itself lives there).
_FROM_DECISION: Final[Mapping[RedriveDecision, RedriveVerdict]] = {
    RedriveDecision.SKIPPED_BUSINESS_OUTCOME: RedriveVerdict.REFUSED_BUSINESS_OUTCOME,
    RedriveDecision.SKIPPED_STOPPED: RedriveVerdict.REFUSED_STOPPED,
    RedriveDecision.SKIPPED_NOT_REDRIVABLE: RedriveVerdict.REFUSED_NOT_REDRIVABLE,
    RedriveDecision.SKIPPED_OUTSIDE_WINDOW: RedriveVerdict.REFUSED_OUTSIDE_WINDOW,
    RedriveDecision.SKIPPED_OTHER_ERROR: RedriveVerdict.REFUSED_NOT_REDRIVABLE,  # no --error here
    RedriveDecision.REFUSED: RedriveVerdict.REFUSED_NOT_REDRIVABLE,
}

#: The metric each verdict counts (refusals share one; the reason rides as metadata).
METRIC_FOR_VERDICT: Final[Mapping[RedriveVerdict, str]] = {
    verdict: (
        metric_names.AUTO_REDRIVE_REFUSED
        if verdict.refused
        else {
            RedriveVerdict.REDRIVEN: metric_names.AUTO_REDRIVEN,
            RedriveVerdict.WAITING: metric_names.AUTO_REDRIVE_WAITING,
            RedriveVerdict.GONE: metric_names.AUTO_REDRIVE_GONE,
            RedriveVerdict.MALFORMED: metric_names.AUTO_REDRIVE_MALFORMED,
        }[verdict]
    )
    for verdict in RedriveVerdict
}


@dataclass(frozen=True)
class RedriveOutcome:
    verdict: RedriveVerdict
    execution_name: str | None = None
    #: ``waiting``: seconds until the message comes back.
    delay_seconds: int | None = None
    #: ``redriven``: the redrive this was (``redriveCount`` after it).
    redrive: int | None = None


class Sender(VisibilityChanger, Protocol):
    """What the redriver needs of a boto3 SQS client."""

    def send_message(self, **kwargs: Any) -> Mapping[str, Any]: ...


class _MalformedError(Exception):
    """The message is not an execution event of this machine (its arg: the field)."""


@dataclass(frozen=True)
class Redriver:
    """Redrives the technical failures of one saga's state machine, bounded."""

    saga: Saga
    state_machine_arn: str
    sfn: SFNClient
    sqs: Sender
    ledger: Ledger
    queue_url: str
    metrics: MetricsSink
    #: The ledger table's client and name: the case pointers (superseded or not).
    ddb: DynamoDBClient
    table_name: str
    settings: AutoRedrive = field(default_factory=AutoRedrive)
    clock: Clock = field(default_factory=SystemClock)
    backoff: Backoff = field(default_factory=Backoff)

    def decide(self, body: str) -> RedriveOutcome:
        """One message body → its outcome; AWS failures raise (the message is retried)."""
        arn = self._execution_arn(body)
        try:
            described = describe(self.sfn, arn)
        except ExecutionDoesNotExist:
            return RedriveOutcome(RedriveVerdict.GONE)
        name = str(described["name"])
        if described.get("status") not in REDRIVABLE_STATUSES:
            return RedriveOutcome(RedriveVerdict.GONE, name)
        verdict = self._refusal(described)
        if verdict is not None:
            return RedriveOutcome(verdict, name)
        count = int(described.get("redriveCount", 0))
        stop = described.get("stopDate")
        now = self.clock.now()
        # Counted from the failure, so a late delivery waits less; a closed execution always
        # has a stopDate (without one, waiting from "now" would never end: redrive).
        due = stop + self.settings.delay(count, arn) if isinstance(stop, datetime) else now
        if due - now > _EARLY:
            delay = min(MAX_DELAY_SECONDS, math.ceil((due - now).total_seconds()))
            with aws_call("sqs:SendMessage"):
                self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body, DelaySeconds=delay)
            return RedriveOutcome(RedriveVerdict.WAITING, name, delay_seconds=delay)
        try:
            with aws_call("states:RedriveExecution"):
                self.sfn.redrive_execution(executionArn=arn, clientToken=redrive_token(arn, count))
        except ExecutionNotRedrivable:
            return RedriveOutcome(RedriveVerdict.REFUSED_NOT_REDRIVABLE, name)
        return RedriveOutcome(RedriveVerdict.REDRIVEN, name, redrive=count + 1)

    def handle(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """An SQS batch → ``batchItemFailures`` (the messages SQS must deliver again)."""
        failures: list[dict[str, str]] = []
        busy: list[Mapping[str, Any]] = []  # once AWS throttles, the rest waits too
        try:
            for record in event.get("Records", []):
                message_id = str(record.get("messageId", ""))
                if busy:
                    busy.append(record)
                    _log(None, message_id=message_id, retry="busy")
                    continue
                try:
                    outcome = self.decide(str(record.get("body", "")))
                except _MalformedError as exc:
                    outcome = RedriveOutcome(RedriveVerdict.MALFORMED)
                    _log(outcome, message_id=message_id, field=str(exc))
                    self._count(outcome)
                    failures.append({"itemIdentifier": message_id})
                    continue
                except TransientError as exc:
                    _log(None, message_id=message_id, retry=exc.error_name())
                    busy.append(record)
                    continue
                except Exception as exc:  # AWS trouble, or a bug: one message never fails all
                    name = (
                        exc.error_name() if isinstance(exc, StepSagaError) else type(exc).__name__
                    )
                    _log(None, message_id=message_id, retry=name)
                    failures.append({"itemIdentifier": message_id})
                    continue
                _log(outcome, message_id=message_id, delay_seconds=outcome.delay_seconds)
                self._count(outcome)
            if busy:
                back_off(self.sqs, self.queue_url, busy, self.backoff)
                failures.extend({"itemIdentifier": str(r.get("messageId", ""))} for r in busy)
                for record in busy:
                    metadata = {"message_id": str(record.get("messageId", ""))}
                    self.metrics.count(metric_names.AUTO_REDRIVE_BACKED_OFF, metadata)
        finally:
            self.metrics.flush()
        return {"batchItemFailures": failures}

    # --- the parts -----------------------------------------------------------------------

    def _execution_arn(self, body: str) -> str:
        """The execution the message names: ``{"executionArn": …}`` (:data:`MESSAGE_TEMPLATE`),
        or a whole status-change event (``detail.executionArn``: what the rule sent before
        it forwarded the ARN only)."""
        try:
            event = json.loads(body)
        except json.JSONDecodeError:
            raise _MalformedError("body") from None
        if isinstance(event, dict) and "executionArn" in event:
            arn = event["executionArn"]
            field = "executionArn"
        else:
            detail = event.get("detail") if isinstance(event, dict) else None
            if not isinstance(detail, dict):
                raise _MalformedError("detail")
            arn, field = detail.get("executionArn"), "detail.executionArn"
        mine = execution_arn(self.state_machine_arn, "")
        if not isinstance(arn, str) or not arn.startswith(mine):
            raise _MalformedError(field)
        return arn

    def _refusal(self, described: Described) -> RedriveVerdict | None:
        """Why not to redrive, first match: the bulk rule, the redrive bound, the attempt
        budget, a later revision."""
        case = CaseIdentity.from_input(described["input"])
        records = case_records(self.ledger, self.saga, case)
        view = execution_view(described, saga=self.saga, records=records)
        decision, _ = decide(view, error=None, now=self.clock.now())
        if decision is not RedriveDecision.REDRIVEN:
            return _FROM_DECISION[decision]
        if view.redrive_count >= self.settings.max_redrives:
            return RedriveVerdict.REFUSED_MAX_REDRIVES
        budget = self.ledger.policy.attempt_budget
        if any(r.status is not Status.COMPLETED and r.attempts >= budget for r in records.values()):
            return RedriveVerdict.REFUSED_ATTEMPT_BUDGET
        if redrive_refusal(described, lambda: self._later_revision(case)) is not None:
            return RedriveVerdict.REFUSED_SUPERSEDED
        return None

    def _later_revision(self, case: CaseIdentity) -> list[Sibling]:
        """The next revision, if its start was recorded: its case pointer (one ``GetItem``
        on the ledger table; ``DescribeExecution``'s quota is what a mass failure uses up).
        A revision starts only once the one before it is closed, so a later one implies the
        next; a pointer is written just before its ``StartExecution``."""
        found = get_pointer(
            self.ddb, self.table_name, case.tenant_id, case.case_id, case.revision + 1
        )
        if found is None or found.execution_arn != execution_arn(
            self.state_machine_arn, found.execution_name
        ):
            return []
        return [Sibling(found.identity, found.execution_name, _RECORDED)]

    def _count(self, outcome: RedriveOutcome) -> None:
        metadata = {"verdict": outcome.verdict.value}
        if outcome.execution_name is not None:
            metadata["execution"] = outcome.execution_name
        self.metrics.count(METRIC_FOR_VERDICT[outcome.verdict], metadata)


#: A sibling known from its pointer: started (or about to), status not read.
_RECORDED: Final = "RECORDED"


def _log(outcome: RedriveOutcome | None, **fields: object) -> None:
    """One JSON line per message: identifiers only."""
    shown: dict[str, object] = {"auto_redrive": outcome.verdict.value if outcome else "retry"}
    if outcome is not None and outcome.execution_name is not None:
        shown["execution"] = outcome.execution_name
    if outcome is not None and outcome.redrive is not None:
        shown["redrive"] = outcome.redrive
    shown.update({k: v for k, v in fields.items() if v is not None})
    print(json.dumps(shown, separators=(",", ":")), flush=True)


_redriver: Redriver | None = None


def _from_environment(environ: Mapping[str, str]) -> Redriver:
    import boto3

    from stepsaga._aws.aws_region import region_from
    from stepsaga._handlers.metrics import EmfMetrics
    from stepsaga._project.deployment import ENV_LEDGER_TABLE_NAME, ENV_SAGA, ENV_STATE_MACHINE_ARN
    from stepsaga.ledger._dynamodb import DynamoDBStore
    from stepsaga.workflow._loader import load_saga

    settings = AutoRedrive.from_environment(environ)
    missing = [
        v
        for v in (ENV_SAGA, ENV_STATE_MACHINE_ARN, ENV_LEDGER_TABLE_NAME, ENV_QUEUE_URL)
        if not environ.get(v)
    ]
    if missing:
        raise InvalidInputError(f"{missing[0]}: not set", field=missing[0])
    region = region_from(environ)
    clock = SystemClock()
    ddb = boto3.client("dynamodb", region_name=region)
    return Redriver(
        saga=load_saga(environ[ENV_SAGA], ENV_SAGA),
        state_machine_arn=environ[ENV_STATE_MACHINE_ARN],
        sfn=boto3.client("stepfunctions", region_name=region),
        sqs=boto3.client("sqs", region_name=region),
        ledger=Ledger(DynamoDBStore(environ[ENV_LEDGER_TABLE_NAME], ddb), clock=clock),
        ddb=ddb,
        table_name=environ[ENV_LEDGER_TABLE_NAME],
        queue_url=environ[ENV_QUEUE_URL],
        metrics=EmfMetrics(
            metric_names.NAMESPACE,
            environ.get("POWERTOOLS_SERVICE_NAME", metric_names.SERVICE_NAME),
        ),
        settings=settings,
        clock=clock,
    )


def handler(event: Mapping[str, Any], context: object) -> dict[str, Any]:
    """The redriver function's entry point (an SQS event source with batch item failures)."""
    global _redriver
    if _redriver is None:
        _redriver = _from_environment(os.environ)
    return _redriver.handle(event)
