"""The ingress in the template: encrypted queues, a DLQ with an alarm, a starter that may
start and compare executions of this machine and nothing else."""

from __future__ import annotations

from typing import Any

from stepsaga._aws import ingress
from stepsaga._project import deployment
from stepsaga.cdk._alarms import alarm_name
from stepsaga.cdk._ingress import INGRESS_HANDLER, MAX_RECEIVES
from stepsaga.cdk._settings import StageSettings
from tests.framework.infra.conftest import Synthesized


def _queues(
    synthesized: Synthesized,
) -> tuple[tuple[str, dict[str, Any]], tuple[str, dict[str, Any]]]:
    """(cases queue, dead-letter queue), each as (logical id, properties)."""
    queues = {
        k: v["Properties"]
        for k, v in synthesized.resources("AWS::SQS::Queue").items()
        if k.startswith("Ingress")
    }
    (cases,) = [(k, p) for k, p in queues.items() if "RedrivePolicy" in p]
    (dead,) = [(k, p) for k, p in queues.items() if "RedrivePolicy" not in p]
    return cases, dead


def test_queues_are_encrypted_and_redrive_to_the_dead_letters(synthesized: Synthesized) -> None:
    (_, cases), (dead_id, dead) = _queues(synthesized)
    assert cases["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dead_id, "Arn"]},
        "maxReceiveCount": MAX_RECEIVES,
    }
    for properties in (cases, dead):
        assert properties["SqsManagedSseEnabled"] is True
    assert dead["MessageRetentionPeriod"] == 14 * 24 * 3600
    policies = synthesized.resources("AWS::SQS::QueuePolicy")
    tls = [
        s
        for k, p in policies.items()
        if k.startswith("Ingress")
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    ]
    assert len(tls) == 2


def test_the_starter_reads_the_queue_and_knows_its_machine_and_dead_letters(
    synthesized: Synthesized,
) -> None:
    functions = synthesized.resources("AWS::Lambda::Function")
    ((starter_id, starter),) = [
        (k, f) for k, f in functions.items() if f["Properties"]["Handler"] == INGRESS_HANDLER
    ]
    (cases_id, _), (dead_id, _) = _queues(synthesized)
    variables = starter["Properties"]["Environment"]["Variables"]
    assert variables[deployment.ENV_SAGA] == synthesized.saga.saga_ref
    assert variables[ingress.ENV_DEAD_LETTER_QUEUE_URL] == {"Ref": dead_id}
    machine = deployment.state_machine_name(synthesized.saga.name, "dev")
    assert variables[deployment.ENV_STATE_MACHINE_ARN]["Fn::Join"][1][-1] == (
        f":stateMachine:{machine}"
    )
    assert variables[ingress.ENV_QUEUE_URL] == {"Ref": cases_id}  # for the busy back-off
    (mapping,) = [
        m
        for m in synthesized.resources("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [cases_id, "Arn"]}
    ]
    # The queue drives the released version (the ``live`` alias), never $LATEST, and at
    # most ``StageSettings.ingress_max_concurrency`` starters at once.
    assert synthesized.is_live_alias(mapping["Properties"]["FunctionName"], starter_id)
    assert mapping["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["Properties"]["ScalingConfig"] == {
        "MaximumConcurrency": StageSettings().ingress_max_concurrency
    }


def test_the_starter_may_start_and_compare_only(synthesized: Synthesized) -> None:
    role_id = None
    for function in synthesized.resources("AWS::Lambda::Function").values():
        if function["Properties"]["Handler"] == INGRESS_HANDLER:
            role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    actions: set[str] = set()
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} not in policy["Properties"]["Roles"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            action = statement["Action"]
            actions |= {action} if isinstance(action, str) else set(action)
    ours = {a for a in actions if not a.startswith(("xray:", "logs:"))}
    assert ours == {
        "states:StartExecution",
        "states:DescribeExecution",
        # case pointers, on CASE# items only (test_the_starter_writes_only_case_pointers)
        "dynamodb:PutItem",
        "dynamodb:Query",
        # the event source mapping's reads, and the dead letters
        "sqs:ReceiveMessage",
        "sqs:ChangeMessageVisibility",
        "sqs:GetQueueUrl",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "sqs:SendMessage",
    }


def _starter_statements(synthesized: Synthesized) -> list[dict[str, Any]]:
    functions = synthesized.resources("AWS::Lambda::Function").values()
    (role,) = [
        f["Properties"]["Role"]["Fn::GetAtt"][0]
        for f in functions
        if f["Properties"]["Handler"] == INGRESS_HANDLER
    ]
    return [
        statement
        for policy in synthesized.resources("AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_the_starter_writes_only_case_pointers(synthesized: Synthesized) -> None:
    (table_id,) = synthesized.resources("AWS::DynamoDB::Table")
    on_table = [
        s
        for s in _starter_statements(synthesized)
        if any(str(a).startswith("dynamodb:") for a in s["Action"])
    ]
    assert on_table == [
        {
            "Sid": "RecordCasePointers",
            "Effect": "Allow",
            "Action": ["dynamodb:PutItem", "dynamodb:Query"],
            "Resource": {"Fn::GetAtt": [table_id, "Arn"]},
            "Condition": {
                "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["CASE#*"]},
                "Null": {"dynamodb:LeadingKeys": "false"},
            },
        }
    ]


def test_the_starter_knows_the_ledger_table(synthesized: Synthesized) -> None:
    (table_id,) = synthesized.resources("AWS::DynamoDB::Table")
    functions = synthesized.resources("AWS::Lambda::Function").values()
    (variables,) = [
        f["Properties"]["Environment"]["Variables"]
        for f in functions
        if f["Properties"]["Handler"] == INGRESS_HANDLER
    ]
    assert variables[deployment.ENV_LEDGER_TABLE_NAME] == {"Ref": table_id}


def test_dead_letters_raise_an_alarm_that_notifies(synthesized: Synthesized) -> None:
    (_, _), (dead_id, _) = _queues(synthesized)
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    name = alarm_name("dev", synthesized.saga.name, "IngressDeadLetters")
    (alarm,) = [
        a["Properties"]
        for a in synthesized.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] == name
    ]
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": [dead_id, "QueueName"]}}
    ]
    assert alarm["AlarmActions"] == [{"Ref": topic_id}]
    assert alarm["Threshold"] == 1
