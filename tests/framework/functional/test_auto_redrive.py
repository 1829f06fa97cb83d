"""The automatic redrive on moto: real executions in moto's Step Functions, a real SQS queue
with its dead-letter queue, the ledger table; every verdict from the redriver's handler.

moto 5.2 has no ``RedriveExecution`` (``NotImplementedError``); ``aws_support.RedrivingSfn``
adds it over moto's executions and passes every other call to moto.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.stepfunctions.models import stepfunctions_backends

from stepsaga import EffectClass
from stepsaga._aws import metric_names
from stepsaga._aws.auto_redrive import (
    ENV_BASE_DELAY_SECONDS,
    ENV_MAX_REDRIVES,
    ENV_QUEUE_URL,
    AutoRedrive,
    Redriver,
    RedriveVerdict,
    event_pattern,
    input_transformer,
)
from stepsaga._handlers.metrics import RecordingMetrics
from stepsaga._project.deployment import ENV_LEDGER_TABLE_NAME, ENV_SAGA, ENV_STATE_MACHINE_ARN
from stepsaga._util.clock import Clock, ManualClock, SystemClock
from stepsaga.backends._assemble import CaseIdentity, planned_actions
from stepsaga.backends._aws.backend import redrive_token
from stepsaga.cdk._auto_redrive import REDRIVER_ACCESS
from stepsaga.errors import InvalidInputError
from stepsaga.ledger import Ledger, LedgerPolicy, Record, Status
from stepsaga.ledger._dynamodb import DynamoDBStore
from tests.framework.functional.aws_support import (
    ACCOUNT,
    REGION,
    TABLE,
    FakeAws,
    RedrivingSfn,
    VisibilityRecorder,
    fake_aws,
)
from tests.framework.functional.cli_support import case_data
from tests.framework.functional.grants_support import Calls, assert_granted_exactly, calls
from workflows.case import parse_case
from workflows.replacement_order import saga

__all__ = ["calls"]  # the fixture

DETAIL_TYPE = "Step Functions Execution Status Change"


@pytest.fixture
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


class Queues:
    def __init__(self) -> None:
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.dead = self.sqs.create_queue(QueueName="redrive-dlq")["QueueUrl"]
        dead_arn = self.sqs.get_queue_attributes(QueueUrl=self.dead, AttributeNames=["QueueArn"])
        self.url = self.sqs.create_queue(
            QueueName="redrive",
            Attributes={
                "RedrivePolicy": json.dumps(
                    {
                        "deadLetterTargetArn": dead_arn["Attributes"]["QueueArn"],
                        "maxReceiveCount": "2",
                    }
                )
            },
        )["QueueUrl"]

    def ruled_by(self, pattern: dict[str, Any]) -> Any:
        """An EventBridge client whose rule sends events matching ``pattern`` to this queue
        through the stack's input transformer (as the stack deploys it)."""
        events = boto3.client("events", region_name=REGION)
        queue_arn = self.sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])
        events.put_rule(Name="failed", EventPattern=json.dumps(pattern))
        events.put_targets(
            Rule="failed",
            Targets=[
                {
                    "Id": "q",
                    "Arn": queue_arn["Attributes"]["QueueArn"],
                    "InputTransformer": _as_moto_needs(input_transformer()),
                }
            ],
        )
        return events

    def delayed(self) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.url, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessagesDelayed"])

    def dead_letters(self) -> list[str]:
        got = self.sqs.receive_message(QueueUrl=self.dead, MaxNumberOfMessages=10)
        return [m["Body"] for m in got.get("Messages", [])]

    def deliver(self, redriver: Redriver) -> dict[str, Any]:
        """What Lambda's SQS event source does: a batch in, the failures left on the queue
        (visible again at once here), the rest deleted."""
        got = self.sqs.receive_message(
            QueueUrl=self.url, MaxNumberOfMessages=10, VisibilityTimeout=0
        ).get("Messages", [])
        records = [
            {"messageId": m["MessageId"], "body": m["Body"], "receiptHandle": m["ReceiptHandle"]}
            for m in got
        ]
        response = redriver.handle({"Records": records})
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        for record in records:
            if record["messageId"] not in failed:
                self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=record["receiptHandle"])
        return response


@pytest.fixture
def queues(aws: FakeAws) -> Queues:
    return Queues()


def _redriver(
    aws: FakeAws,
    sfn: RedrivingSfn,
    queues: Queues,
    *,
    settings: AutoRedrive | None = None,
    policy: LedgerPolicy | None = None,
    metrics: RecordingMetrics | None = None,
    clock: Clock | None = None,
) -> Redriver:
    return Redriver(
        saga=saga,
        state_machine_arn=aws.state_machine_arn,
        sfn=sfn,  # type: ignore[arg-type]
        sqs=queues.sqs,
        ledger=Ledger(DynamoDBStore(TABLE, aws.ddb), policy=policy),
        queue_url=queues.url,
        metrics=metrics or RecordingMetrics(),
        ddb=aws.ddb,
        table_name=TABLE,
        settings=settings or AutoRedrive(),
        clock=clock or SystemClock(),
    )


def _started(aws: FakeAws, case_id: str, revision: int = 1) -> str:
    data = case_data(case_id)
    data["approval"]["revision"] = revision
    return aws.backend().start(parse_case(data)).name


def _failed(aws: FakeAws, name: str, error: str, *, ago: timedelta = timedelta(0)) -> str:
    aws.set_status(name, "FAILED", error=error, cause="{}")
    execution = stepfunctions_backends[ACCOUNT][REGION].describe_execution(aws.execution_arn(name))
    execution.stop_date = datetime.now(UTC) - ago
    return aws.execution_arn(name)


def _event(aws: FakeAws, execution_arn: str, error: str = "TransientError") -> dict[str, Any]:
    """A ``Step Functions Execution Status Change`` event as EventBridge sends it."""
    return {
        "version": "0",
        "id": "6c9f4b1e-0000-4000-8000-000000000001",
        "detail-type": DETAIL_TYPE,
        "source": "aws.states",
        "account": ACCOUNT,
        "time": "2026-12-01T10:00:00Z",
        "region": REGION,
        "resources": [execution_arn],
        "detail": {
            "executionArn": execution_arn,
            "stateMachineArn": aws.state_machine_arn,
            "name": execution_arn.rsplit(":", 1)[1],
            "status": "FAILED",
            "error": error,
            "cause": "{}",
            "startDate": 1764583200000,
            "stopDate": 1764583260000,
            "input": None,
            "output": None,
        },
    }


def _as_moto_needs(transformer: dict[str, Any]) -> dict[str, Any]:
    """The stack's input transformer for moto's EventBridge: AWS puts a string value in
    quotes where a JSON template names it (``{"executionArn":<detail-executionArn>}``, the
    EventBridge guide's "Input transformation"); moto 5.2 inserts it bare, so here the
    placeholder is quoted (the same message on both)."""
    template = re.sub(r":<([A-Za-z0-9_-]+)>", r':"<\1>"', transformer["InputTemplate"])
    return {**transformer, "InputTemplate": template}


def _one(redriver: Redriver, body: dict[str, Any] | str) -> RedriveVerdict:
    text = body if isinstance(body, str) else json.dumps(body)
    return redriver.decide(text).verdict


LONG_AGO = timedelta(minutes=30)  # past every backoff of the first redrives


def test_a_technical_failure_past_its_backoff_is_redriven_once(
    aws: FakeAws, queues: Queues
) -> None:
    sfn = RedrivingSfn(aws.sfn)
    metrics = RecordingMetrics()
    arn = _failed(aws, _started(aws, "CASE-1"), "TransientError", ago=LONG_AGO)
    queues.sqs.send_message(QueueUrl=queues.url, MessageBody=json.dumps(_event(aws, arn)))

    response = queues.deliver(_redriver(aws, sfn, queues, metrics=metrics))

    assert response == {"batchItemFailures": []}
    assert sfn.redrives[arn] == 1
    assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
    assert metrics.total(metric_names.AUTO_REDRIVEN) == 1
    assert metrics.flushes == 1
    # The same event again (a duplicate delivery) finds it running: nothing more happens.
    assert _one(_redriver(aws, sfn, queues), _event(aws, arn)) is RedriveVerdict.GONE
    assert sfn.redrives[arn] == 1


def test_the_redrive_carries_the_token_of_this_redrive(aws: FakeAws, queues: Queues) -> None:
    tokens: list[str] = []
    sfn = RedrivingSfn(aws.sfn)
    redrive = sfn.redrive_execution

    def recording(*, executionArn: str, clientToken: str) -> dict[str, Any]:  # noqa: N803
        tokens.append(clientToken)
        return redrive(executionArn=executionArn, clientToken=clientToken)

    sfn.redrive_execution = recording  # type: ignore[method-assign]
    arn = _failed(aws, _started(aws, "CASE-1"), "TransientError", ago=LONG_AGO)
    assert _one(_redriver(aws, sfn, queues), _event(aws, arn)) is RedriveVerdict.REDRIVEN
    assert tokens == [redrive_token(arn, 0)]


def test_a_fresh_failure_waits_on_the_queue_not_in_the_function(
    aws: FakeAws, queues: Queues
) -> None:
    sfn = RedrivingSfn(aws.sfn)
    arn = _failed(aws, _started(aws, "CASE-1"), "TransientError")
    body = json.dumps(_event(aws, arn))

    outcome = _redriver(aws, sfn, queues).decide(body)

    assert outcome.verdict is RedriveVerdict.WAITING
    assert outcome.delay_seconds is not None
    assert 30 <= outcome.delay_seconds <= 60
    assert queues.delayed() == 1
    assert sfn.redrives[arn] == 0


def test_the_wait_doubles_with_each_redrive_up_to_900_seconds(aws: FakeAws, queues: Queues) -> None:
    sfn = RedrivingSfn(aws.sfn)
    arn = _failed(aws, _started(aws, "CASE-1"), "TransientError")
    # "Now" is the failure itself, so each wait is the whole delay (no time has passed).
    stopped = stepfunctions_backends[ACCOUNT][REGION].describe_execution(arn).stop_date
    redriver = _redriver(
        aws, sfn, queues, settings=AutoRedrive(max_redrives=10), clock=ManualClock(stopped)
    )
    delays: list[int] = []
    for count in range(6):
        sfn.redrives[arn] = count
        outcome = redriver.decide(json.dumps(_event(aws, arn)))
        assert outcome.verdict is RedriveVerdict.WAITING
        assert outcome.delay_seconds is not None
        delays.append(outcome.delay_seconds)
    assert delays == sorted(delays)
    assert delays[3] > delays[0] * 4  # 480 s · [0.5, 1] against 60 s · [0.5, 1]
    assert delays[-1] == 900


def test_business_outcomes_are_refused_in_code_too(aws: FakeAws, queues: Queues) -> None:
    """The rule keeps them off the queue; should one arrive anyway, it is not redriven."""
    sfn = RedrivingSfn(aws.sfn)
    metrics = RecordingMetrics()
    redriver = _redriver(aws, sfn, queues, metrics=metrics)
    for case_id, error in (("CASE-1", "Saga.Compensated"), ("CASE-2", "Saga.CompensationFailed")):
        arn = _failed(aws, _started(aws, case_id), error, ago=LONG_AGO)
        assert _one(redriver, _event(aws, arn, error)) is RedriveVerdict.REFUSED_BUSINESS_OUTCOME
    assert sum(sfn.redrives.values()) == 0


@pytest.mark.parametrize(
    ("prepare", "verdict"),
    [
        ("redriven_3_times", RedriveVerdict.REFUSED_MAX_REDRIVES),
        ("failed_15_days_ago", RedriveVerdict.REFUSED_OUTSIDE_WINDOW),
        ("attempts_used_up", RedriveVerdict.REFUSED_ATTEMPT_BUDGET),
        ("superseded", RedriveVerdict.REFUSED_SUPERSEDED),
    ],
)
def test_the_bounds_refuse_and_the_execution_stays_failed(
    aws: FakeAws, queues: Queues, prepare: str, verdict: RedriveVerdict
) -> None:
    sfn = RedrivingSfn(aws.sfn)
    metrics = RecordingMetrics()
    name = _started(aws, "CASE-1")
    arn = _failed(aws, name, "TransientError", ago=LONG_AGO)
    policy = None
    if prepare == "redriven_3_times":
        sfn.redrives[arn] = 3
    elif prepare == "failed_15_days_ago":
        _failed(aws, name, "TransientError", ago=timedelta(days=15))
    elif prepare == "attempts_used_up":
        policy = LedgerPolicy(attempt_budget=4)
        aws.copy_ledger([_record(CaseIdentity("acme", "CASE-1", 1), attempts=4)], [])
    else:
        _failed(aws, _started(aws, "CASE-1", revision=2), "Saga.Compensated")
    redriver = _redriver(aws, sfn, queues, policy=policy, metrics=metrics)

    assert _one(redriver, _event(aws, arn)) is verdict

    assert sfn.redrives[arn] == (3 if prepare == "redriven_3_times" else 0)
    assert sfn.describe_execution(executionArn=arn)["status"] == "FAILED"
    handled = redriver.handle(
        {"Records": [{"messageId": "m", "body": json.dumps(_event(aws, arn))}]}
    )
    assert handled == {"batchItemFailures": []}
    assert metrics.counted == [
        (metric_names.AUTO_REDRIVE_REFUSED, {"verdict": verdict.value, "execution": name})
    ]


def _record(case: CaseIdentity, *, attempts: int) -> Record:
    action = planned_actions(saga, case)[0]
    now = datetime.now(UTC)
    return Record(
        key=action.action_key,
        tenant_id=case.tenant_id,
        case_id=case.case_id,
        revision=case.revision,
        operation=action.operation,
        effect=EffectClass.KEYED_WRITE,
        digest="0" * 64,
        status=Status.RELEASED,
        owner="worker",
        lease_expires_at=None,
        attempts=attempts,
        result=None,
        error={"reason": "timeout before dispatch"},
        reference=None,
        cost=None,
        created_at=now,
        updated_at=now,
        expires_at=now + timedelta(days=30),
    )


def test_gone_executions_and_a_service_refusal(aws: FakeAws, queues: Queues) -> None:
    sfn = RedrivingSfn(aws.sfn)
    redriver = _redriver(aws, sfn, queues)
    running = aws.execution_arn(_started(aws, "CASE-1"))
    missing = aws.execution_arn("acme-CASE-404-r1")
    assert _one(redriver, _event(aws, running)) is RedriveVerdict.GONE
    assert _one(redriver, _event(aws, missing)) is RedriveVerdict.GONE

    refused = _failed(aws, _started(aws, "CASE-2"), "TransientError", ago=LONG_AGO)

    def not_redrivable(**kwargs: Any) -> dict[str, Any]:
        error = {"Error": {"Code": "ExecutionNotRedrivable", "Message": "Execution is FAILED"}}
        raise ClientError(error, "RedriveExecution")  # type: ignore[arg-type]

    sfn.redrive_execution = not_redrivable  # type: ignore[method-assign]
    assert _one(redriver, _event(aws, refused)) is RedriveVerdict.REFUSED_NOT_REDRIVABLE


def test_a_malformed_message_fails_alone_then_goes_to_the_dead_letters(
    aws: FakeAws, queues: Queues
) -> None:
    sfn = RedrivingSfn(aws.sfn)
    metrics = RecordingMetrics()
    redriver = _redriver(aws, sfn, queues, metrics=metrics)
    good = _failed(aws, _started(aws, "CASE-1"), "TransientError", ago=LONG_AGO)
    other_machine = _event(aws, good)
    other_machine["detail"]["executionArn"] = (
        f"arn:aws:states:{REGION}:{ACCOUNT}:execution:someone-else:x"
    )
    bodies = ["not json", json.dumps({"detail": "nope"}), json.dumps(other_machine)]
    for body in [*bodies, json.dumps(_event(aws, good))]:
        queues.sqs.send_message(QueueUrl=queues.url, MessageBody=body)

    first = queues.deliver(redriver)

    assert len(first["batchItemFailures"]) == 3
    assert sfn.redrives[good] == 1
    assert metrics.total(metric_names.AUTO_REDRIVE_MALFORMED) == 3
    queues.deliver(redriver)  # the second receive: maxReceiveCount is 2
    queues.deliver(redriver)  # SQS moves them on this receive
    assert sorted(queues.dead_letters()) == sorted(bodies)


def test_aws_trouble_is_a_batch_item_failure(aws: FakeAws, queues: Queues) -> None:
    sfn = RedrivingSfn(aws.sfn)
    arn = _failed(aws, _started(aws, "CASE-1"), "TransientError", ago=LONG_AGO)

    def broken(**kwargs: Any) -> dict[str, Any]:
        error = {"Error": {"Code": "SomethingElse", "Message": "no"}}
        raise ClientError(error, "DescribeExecution")  # type: ignore[arg-type]

    sfn.describe_execution = broken  # type: ignore[method-assign]
    event = {"Records": [{"messageId": "m1", "body": json.dumps(_event(aws, arn))}]}
    response = _redriver(aws, sfn, queues).handle(event)
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}


def test_under_throttling_the_batch_backs_off_and_is_redriven_after(
    aws: FakeAws, queues: Queues
) -> None:
    """A mass failure exhausts ``DescribeExecution``'s quota: the first throttled call
    backs off its message and the rest of the batch, with no further call, for longer
    than the queue's own timeout; once the quota refills every execution is redriven."""
    sfn = RedrivingSfn(aws.sfn)
    metrics = RecordingMetrics()
    arns = [
        _failed(aws, _started(aws, f"CASE-{n}"), "TransientError", ago=LONG_AGO) for n in range(4)
    ]
    for arn in arns:
        queues.sqs.send_message(QueueUrl=queues.url, MessageBody=json.dumps({"executionArn": arn}))
    describe = sfn.describe_execution

    def throttled(**kwargs: Any) -> dict[str, Any]:
        sfn.calls["throttled"] += 1
        error = {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}
        raise ClientError(error, "DescribeExecution")  # type: ignore[arg-type]

    sfn.describe_execution = throttled  # type: ignore[method-assign]
    recorder = VisibilityRecorder(queues.sqs)
    redriver = _redriver(aws, sfn, queues, metrics=metrics)
    redriver = replace(redriver, sqs=recorder)
    got = queues.sqs.receive_message(
        QueueUrl=queues.url, MaxNumberOfMessages=10, AttributeNames=["All"]
    )["Messages"]
    records = [
        {
            "messageId": m["MessageId"],
            "body": m["Body"],
            "receiptHandle": m["ReceiptHandle"],
            "attributes": m["Attributes"],
        }
        for m in got
    ]

    response = redriver.handle({"Records": records})

    assert len(response["batchItemFailures"]) == 4
    assert sfn.calls["throttled"] == 1  # the other three were not even tried
    assert len(recorder.timeouts) == 4
    assert all(60 <= t <= 120 for t in recorder.timeouts)  # first receive: 120 s · [0.5, 1]
    assert metrics.total(metric_names.AUTO_REDRIVE_BACKED_OFF) == 4
    # They really are invisible now (the queue's own timeout would have been 0 here).
    assert queues.sqs.receive_message(QueueUrl=queues.url).get("Messages", []) == []

    sfn.describe_execution = describe  # type: ignore[method-assign]
    for record in records:  # time passes: SQS shows them again
        queues.sqs.change_message_visibility(
            QueueUrl=queues.url, ReceiptHandle=record["receiptHandle"], VisibilityTimeout=0
        )
    assert queues.deliver(redriver) == {"batchItemFailures": []}
    assert [sfn.redrives[arn] for arn in arns] == [1, 1, 1, 1]


def test_a_timed_out_execution_is_redriven(aws: FakeAws, queues: Queues) -> None:
    """``TimeoutSeconds`` ended the case: its status-change event reaches the queue through
    the rule (ARN only) and the redriver continues it where it stopped."""
    sfn = RedrivingSfn(aws.sfn)
    name = _started(aws, "CASE-1")
    arn = aws.execution_arn(name)
    aws.set_status(name, "TIMED_OUT")
    execution = stepfunctions_backends[ACCOUNT][REGION].describe_execution(arn)
    execution.stop_date = datetime.now(UTC) - LONG_AGO
    events = queues.ruled_by(event_pattern(aws.state_machine_arn))
    detail = _event(aws, arn)["detail"] | {"status": "TIMED_OUT", "error": None, "cause": None}
    events.put_events(
        Entries=[
            {
                "Source": "aws.states",
                "DetailType": DETAIL_TYPE,
                "Detail": json.dumps(detail),
                "Resources": [arn],
            }
        ]
    )

    assert queues.deliver(_redriver(aws, sfn, queues)) == {"batchItemFailures": []}

    assert sfn.redrives[arn] == 1
    assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"


def test_the_redriver_calls_exactly_its_grants(calls: Calls, aws: FakeAws, queues: Queues) -> None:
    """A redrive, then a refusal for a later revision: the attempt-budget check reads the
    case's records, the revision check its pointer, both ``GetItem``; no write, no index
    (``REDRIVER_ACCESS``, every grant used)."""
    sfn = RedrivingSfn(aws.sfn)
    name = _started(aws, "CASE-1")
    arn = _failed(aws, name, "TransientError", ago=LONG_AGO)
    calls.clear()
    with calls.role("redriver"):
        assert _one(_redriver(aws, sfn, queues), {"executionArn": arn}) is RedriveVerdict.REDRIVEN
    _failed(aws, name, "TransientError", ago=LONG_AGO)
    _started(aws, "CASE-1", revision=2)
    with calls.role("redriver"):
        refused = _one(_redriver(aws, sfn, queues), {"executionArn": arn})
    assert refused is RedriveVerdict.REFUSED_SUPERSEDED
    assert_granted_exactly(calls, "redriver", REDRIVER_ACCESS)


def test_the_later_revision_is_read_from_its_pointer_not_described(
    aws: FakeAws, queues: Queues
) -> None:
    """One ``DescribeExecution`` per due message: whether the case has a later revision is
    its pointer (``GetItem``), so a mass failure spends the Step Functions quota once."""
    sfn = RedrivingSfn(aws.sfn)
    name = _started(aws, "CASE-1")
    arn = _failed(aws, name, "TransientError", ago=LONG_AGO)
    redriver = _redriver(aws, sfn, queues)
    assert _one(redriver, {"executionArn": arn}) is RedriveVerdict.REDRIVEN
    assert sfn.calls["describe_execution"] == 1

    _failed(aws, name, "TransientError", ago=LONG_AGO)  # it failed again
    _started(aws, "CASE-1", revision=2)  # and the case was approved anew meanwhile
    sfn.calls.clear()
    assert _one(redriver, {"executionArn": arn}) is RedriveVerdict.REFUSED_SUPERSEDED
    assert sfn.calls["describe_execution"] == 1  # this execution only, not revision 2's


def test_the_rule_sends_technical_failures_of_this_machine_only(
    aws: FakeAws, queues: Queues
) -> None:
    """The pattern the stack deploys, matched by moto's EventBridge (``TestEventPattern`` is a
    stub in moto 5.2; a rule with an SQS target is its real matcher)."""
    events = queues.ruled_by(event_pattern(aws.state_machine_arn))
    arn = aws.execution_arn("acme-CASE-1-r1")
    other = _event(aws, arn)
    other["detail"]["stateMachineArn"] = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:other"
    on_alias = _event(aws, arn, "TransientError")
    on_alias["detail"]["stateMachineArn"] = f"{aws.state_machine_arn}:live"
    lookalike = _event(aws, arn, "TransientError")
    lookalike["detail"]["stateMachineArn"] = f"{aws.state_machine_arn}-other"
    succeeded = _event(aws, arn)
    succeeded["detail"].update(status="SUCCEEDED", error=None)
    timed_out = _event(aws, aws.execution_arn("acme-CASE-2-r1"))
    timed_out["detail"].update(status="TIMED_OUT", error=None, cause=None)
    sent = {
        "TransientError": _event(aws, arn, "TransientError"),
        "States.Timeout": _event(aws, arn, "States.Timeout"),
        "Saga.Compensated": _event(aws, arn, "Saga.Compensated"),
        "Saga.CompensationFailed": _event(aws, arn, "Saga.CompensationFailed"),
        "other machine": other,
        "on the alias": on_alias,
        "a lookalike machine": lookalike,
        "succeeded": succeeded,
        "timed out": timed_out,
    }
    for event in sent.values():
        events.put_events(
            Entries=[
                {
                    "Source": event["source"],
                    "DetailType": event["detail-type"],
                    "Detail": json.dumps(event["detail"]),
                    "Resources": event["resources"],
                }
            ]
        )
    got = queues.sqs.receive_message(QueueUrl=queues.url, MaxNumberOfMessages=10)
    bodies = [json.loads(m["Body"]) for m in got.get("Messages", [])]
    # TransientError, States.Timeout, on the alias, timed out: the execution's ARN only
    # (the event's input, the case with its personal data, never reaches the queue).
    assert sorted(bodies, key=json.dumps) == sorted(
        [{"executionArn": arn}] * 3 + [{"executionArn": aws.execution_arn("acme-CASE-2-r1")}],
        key=json.dumps,
    )


def test_settings_come_from_the_environment_checked(aws: FakeAws, queues: Queues) -> None:
    from stepsaga._aws import auto_redrive

    environ = {
        ENV_SAGA: "workflows.replacement_order:saga",
        ENV_STATE_MACHINE_ARN: aws.state_machine_arn,
        ENV_LEDGER_TABLE_NAME: TABLE,
        ENV_QUEUE_URL: queues.url,
        ENV_MAX_REDRIVES: "2",
        ENV_BASE_DELAY_SECONDS: "30",
        "AWS_DEFAULT_REGION": REGION,
    }
    redriver = auto_redrive._from_environment(environ)
    assert redriver.settings == AutoRedrive(max_redrives=2, base_delay_seconds=30)
    assert redriver.saga.name == saga.name


@pytest.mark.parametrize("variable", [ENV_QUEUE_URL, ENV_SAGA, ENV_MAX_REDRIVES])
def test_a_missing_or_bad_variable_stops_the_start_naming_it(
    aws: FakeAws, queues: Queues, variable: str
) -> None:
    from stepsaga._aws import auto_redrive

    environ = {
        ENV_SAGA: "workflows.replacement_order:saga",
        ENV_STATE_MACHINE_ARN: aws.state_machine_arn,
        ENV_LEDGER_TABLE_NAME: TABLE,
        ENV_QUEUE_URL: queues.url,
        "AWS_DEFAULT_REGION": REGION,
    }
    if variable == ENV_MAX_REDRIVES:
        environ[variable] = "-1"
    else:
        del environ[variable]
    with pytest.raises(InvalidInputError) as caught:
        auto_redrive._from_environment(environ)
    assert caught.value.message.startswith(f"{variable}: ")
