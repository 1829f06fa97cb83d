"""The automatic redrive in the template: the rule's exact pattern, encrypted TLS-only queues
with a dead-letter queue and its alarm, a redriver that may touch this machine's executions,
one ledger read and its own queue, nothing else."""

from __future__ import annotations

import json
from typing import Any

from stepsaga._aws import auto_redrive
from stepsaga._aws.auto_redrive import AutoRedrive
from stepsaga._project import deployment
from stepsaga.cdk._alarms import alarm_name
from stepsaga.cdk._auto_redrive import AUTO_REDRIVE_HANDLER, MAX_RECEIVES
from tests.framework.infra.conftest import Synthesized

MACHINE_SUFFIX = ":stateMachine:dev-replacement-order"


def _queues(synthesized: Synthesized) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """(failed-executions queue, dead-letter queue), each as (logical id, properties)."""
    queues = {
        k: v["Properties"]
        for k, v in synthesized.resources("AWS::SQS::Queue").items()
        if k.startswith("AutoRedrive")
    }
    (main,) = [(k, p) for k, p in queues.items() if "RedrivePolicy" in p]
    (dead,) = [(k, p) for k, p in queues.items() if "RedrivePolicy" not in p]
    return main, dead


def _redriver(synthesized: Synthesized) -> tuple[str, dict[str, Any]]:
    ((logical_id, function),) = [
        (k, f)
        for k, f in synthesized.resources("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == AUTO_REDRIVE_HANDLER
    ]
    return logical_id, function["Properties"]


def _machine_arn_of(value: Any) -> bool:
    return isinstance(value, dict) and value["Fn::Join"][1][-1] == MACHINE_SUFFIX


def test_the_rule_forwards_failed_technical_executions_of_this_machine(
    synthesized: Synthesized,
) -> None:
    (queue_id, _), (dead_id, _) = _queues(synthesized)
    rules = synthesized.resources("AWS::Events::Rule").values()
    (rule,) = [r["Properties"] for r in rules if "EventPattern" in r["Properties"]]
    pattern = rule["EventPattern"]
    machine, qualified = pattern["detail"]["stateMachineArn"]
    assert _machine_arn_of(machine)
    # ``f"{arn}:"`` of a token: the same join, with ":" appended.
    (joined,) = qualified["prefix"]["Fn::Join"][1][-1:]
    assert joined == f"{MACHINE_SUFFIX}:"
    assert qualified["prefix"]["Fn::Join"][1][:-1] == machine["Fn::Join"][1][:-1]
    assert {k: v for k, v in pattern.items() if k != "detail"} == {
        k: v for k, v in auto_redrive.event_pattern("arn").items() if k != "detail"
    }
    assert pattern["detail"]["$or"] == [
        {"status": ["FAILED"], "error": [{"anything-but": {"prefix": "Saga."}}]},
        {"status": ["TIMED_OUT"]},
    ]
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [dead_id, "Arn"]}}
    # The execution's ARN only: the event's ``detail.input`` (the case, personal data)
    # never reaches the queue. The functional tests deliver exactly this transformer.
    assert target["InputTransformer"] == auto_redrive.input_transformer()


def test_queues_are_encrypted_tls_only_and_redrive_to_the_dead_letters(
    synthesized: Synthesized,
) -> None:
    (queue_id, queue), (dead_id, dead) = _queues(synthesized)
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dead_id, "Arn"]},
        "maxReceiveCount": MAX_RECEIVES,
    }
    for properties in (queue, dead):
        assert properties["SqsManagedSseEnabled"] is True
        assert properties["MessageRetentionPeriod"] == 14 * 24 * 3600
    policies = synthesized.resources("AWS::SQS::QueuePolicy").values()
    statements = {
        json.dumps(p["Properties"]["Queues"]): p["Properties"]["PolicyDocument"]["Statement"]
        for p in policies
    }
    for logical_id in (queue_id, dead_id):
        mine = statements[json.dumps([{"Ref": logical_id}])]
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in mine
        )
        # EventBridge may send, from this rule only.
        (allow,) = [s for s in mine if s["Effect"] == "Allow"]
        assert allow["Principal"] == {"Service": "events.amazonaws.com"}
        assert list(allow["Condition"]["ArnEquals"]) == ["aws:SourceArn"]


def test_the_redriver_reads_the_queue_and_knows_its_machine_and_bounds(
    synthesized: Synthesized,
) -> None:
    redriver_id, redriver = _redriver(synthesized)
    (queue_id, _), _ = _queues(synthesized)
    variables = redriver["Environment"]["Variables"]
    assert variables[deployment.ENV_SAGA] == synthesized.saga.saga_ref
    assert _machine_arn_of(variables[deployment.ENV_STATE_MACHINE_ARN])
    assert variables[auto_redrive.ENV_QUEUE_URL] == {"Ref": queue_id}
    assert variables[auto_redrive.ENV_MAX_REDRIVES] == "3"
    assert variables[auto_redrive.ENV_BASE_DELAY_SECONDS] == "60"
    (mapping,) = [
        m["Properties"]
        for m in synthesized.resources("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    ]
    # The released version (the ``live`` alias), at most ``max_concurrency`` at once.
    assert synthesized.is_live_alias(mapping["FunctionName"], redriver_id)
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": AutoRedrive().max_concurrency}


def test_the_redriver_may_redrive_this_machine_read_the_ledger_and_use_its_queue_only(
    synthesized: Synthesized,
) -> None:
    _, redriver = _redriver(synthesized)
    (queue_id, _), _ = _queues(synthesized)
    (table_id,) = synthesized.resources("AWS::DynamoDB::Table")
    role = redriver["Role"]["Fn::GetAtt"][0]
    granted: dict[str, list[Any]] = {}
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        if {"Ref": role} not in policy["Properties"]["Roles"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            for action in [actions] if isinstance(actions, str) else actions:
                resources = statement["Resource"]
                granted[action] = resources if isinstance(resources, list) else [resources]
    ours = {a: r for a, r in granted.items() if not a.startswith(("xray:", "logs:"))}
    executions = ":execution:dev-replacement-order:*"
    for action in ("states:DescribeExecution", "states:RedriveExecution"):
        (resource,) = ours.pop(action)
        assert resource["Fn::Join"][1][-1] == executions
    assert ours.pop("dynamodb:GetItem") == [{"Fn::GetAtt": [table_id, "Arn"]}]
    assert ours, "the queue's actions"
    for action, resources in ours.items():
        assert action.startswith("sqs:"), action
        assert resources == [{"Fn::GetAtt": [queue_id, "Arn"]}], action


def test_dead_letters_raise_an_alarm_that_notifies(synthesized: Synthesized) -> None:
    _, (dead_id, _) = _queues(synthesized)
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    name = alarm_name("dev", synthesized.saga.name, "AutoRedriveDeadLetters")
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
    assert alarm["OKActions"] == [{"Ref": topic_id}]
    assert alarm["Threshold"] == 1
