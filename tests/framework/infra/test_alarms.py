"""The alarms reach someone, once per event, and tell technical failures from outcomes."""

from __future__ import annotations

import fnmatch
import json
import re
from typing import Any

from stepsaga._aws import metric_names
from stepsaga._aws.audit_copy import AUDIT_COPY_HANDLER
from stepsaga.cdk._alarms import BUSINESS_FAIL_ERRORS, RULES, alarm_name
from tests.framework.infra.conftest import Synthesized

#: CloudFormation pseudo parameters, as a deployment in one account and region sees them.
PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": "eu-west-1",
    "AWS::AccountId": "123456789012",
}


def _resolve(value: Any) -> Any:
    """A condition value with the pseudo parameters substituted (``Fn::Join``/``Ref``)."""
    if isinstance(value, dict) and "Ref" in value:
        return PSEUDO[value["Ref"]]
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(str(_resolve(p)) for p in parts)
    return value


def _alarms(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    return {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in synthesized.resources("AWS::CloudWatch::Alarm").values()
    }


def _cloudwatch_may_publish(
    synthesized: Synthesized, topic_id: str, alarm_arn: str, account: str
) -> bool:
    """Whether the topic's policy lets CloudWatch publish for ``alarm_arn`` of ``account``:
    an Allow for ``cloudwatch.amazonaws.com`` on ``sns:Publish`` whose conditions hold, and
    no Deny that applies (the TLS deny does not: CloudWatch publishes over TLS)."""
    allowed = False
    for policy in synthesized.resources("AWS::SNS::TopicPolicy").values():
        if {"Ref": topic_id} not in policy["Properties"]["Topics"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Effect"] != "Allow":
                continue
            if statement.get("Principal") != {"Service": "cloudwatch.amazonaws.com"}:
                continue
            if "sns:Publish" not in json.dumps(statement["Action"]):
                continue
            conditions = statement.get("Condition", {})
            source_account = _resolve(conditions["StringEquals"]["aws:SourceAccount"])
            source_arn = _resolve(conditions["ArnLike"]["aws:SourceArn"])
            allowed |= source_account == account and fnmatch.fnmatchcase(alarm_arn, source_arn)
    return allowed


def test_every_alarm_action_topic_accepts_cloudwatch_for_that_alarm(
    synthesized: Synthesized,
) -> None:
    alarms = _alarms(synthesized)
    assert alarms
    notifying = 0
    for name, alarm in alarms.items():
        arn = f"arn:aws:cloudwatch:eu-west-1:123456789012:alarm:{name}"
        for target in [*alarm.get("AlarmActions", []), *alarm.get("OKActions", [])]:
            notifying += 1
            topic_id = target["Ref"]
            assert _cloudwatch_may_publish(synthesized, topic_id, arn, "123456789012"), name
            # Another account's alarm of the same name may not.
            assert not _cloudwatch_may_publish(synthesized, topic_id, arn, "210987654321")
    assert notifying > 0
    other = "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:someone-elses-alarm"
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    assert not _cloudwatch_may_publish(synthesized, topic_id, other, "123456789012")


def test_the_topic_key_lets_cloudwatch_encrypt(synthesized: Synthesized) -> None:
    (key,) = synthesized.resources("AWS::KMS::Key").values()
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    cloudwatch = [
        s for s in statements if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
    ]
    (statement,) = cloudwatch
    assert set(statement["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey"}


def test_technical_alarms_notify_and_recover_business_ones_stay_silent(
    synthesized: Synthesized,
) -> None:
    alarms = _alarms(synthesized)
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    assert set(alarms) == {alarm_name("dev", synthesized.saga.name, r) for r in RULES}
    for rule_name, rule in RULES.items():
        alarm = alarms[alarm_name("dev", synthesized.saga.name, rule_name)]
        expected = [{"Ref": topic_id}] if rule.notify else []
        assert alarm.get("AlarmActions", []) == expected, rule_name
        assert alarm.get("OKActions", []) == expected, rule_name
        assert alarm["Threshold"] == rule.threshold
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    # The reconciler publishes one notice per opened item: an alarm on the same event
    # would be a second notification.
    silent = {n for n, r in RULES.items() if not r.notify}
    # (The *ReleaseFaults roll canary releases back; LambdaErrors notifies the same faults.)
    assert silent == {
        "OutcomeUnknown",
        "ReconciliationOpened",
        "ReleaseFaults",
        "IngressReleaseFaults",
    }
    overdue = alarms[alarm_name("dev", synthesized.saga.name, "ReconciliationOverdue")]
    assert overdue["TreatMissingData"] == "breaching"


def _metrics_of(alarm: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Metric-math id → its ``MetricStat.Metric``."""
    return {
        m["Id"]: m["MetricStat"]["Metric"] for m in alarm.get("Metrics", []) if "MetricStat" in m
    }


def _expression(alarm: dict[str, Any]) -> str:
    (expression,) = [m["Expression"] for m in alarm["Metrics"] if "Expression" in m]
    return str(expression)


def test_compensated_cases_do_not_count_as_technical_failures(
    synthesized: Synthesized,
) -> None:
    definition = synthesized.saga.definition
    business = sorted(
        name
        for name, state in definition["States"].items()
        if state["Type"] == "Fail" and state["Error"] in BUSINESS_FAIL_ERRORS
    )
    assert business == ["Compensated", "CompensationFailed"]
    (metric_filter,) = synthesized.resources("AWS::Logs::MetricFilter").values()
    pattern = metric_filter["Properties"]["FilterPattern"]
    assert re.findall(r'\$\.details\.name = "(\w+)"', pattern) == business
    assert '$.type = "FailStateEntered"' in pattern
    (machine_logs_id,) = [
        logical_id
        for logical_id, group in synthesized.resources("AWS::Logs::LogGroup").items()
        if str(group["Properties"].get("LogGroupName", "")).startswith("/aws/vendedlogs/states/")
    ]
    assert metric_filter["Properties"]["LogGroupName"] == {"Ref": machine_logs_id}
    (transformation,) = metric_filter["Properties"]["MetricTransformations"]

    alarm = _alarms(synthesized)[alarm_name("dev", synthesized.saga.name, "TechnicalFailures")]
    metrics = _metrics_of(alarm)
    assert metrics["failed"]["MetricName"] == "ExecutionsFailed"
    assert metrics["timedout"]["MetricName"] == "ExecutionsTimedOut"
    assert metrics["business"]["MetricName"] == transformation["MetricName"]
    assert metrics["business"]["Namespace"] == transformation["MetricNamespace"]
    assert _expression(alarm) == "FILL(failed, 0) + FILL(timedout, 0) - FILL(business, 0)"


def test_lambda_errors_exclude_routed_outcomes_and_cover_every_function(
    synthesized: Synthesized,
) -> None:
    alarm = _alarms(synthesized)[alarm_name("dev", synthesized.saga.name, "LambdaErrors")]
    metrics = _metrics_of(alarm)
    routed = metrics.pop("routed")
    assert routed["MetricName"] == metric_names.ROUTED_ERROR
    assert routed["Dimensions"] == [
        {"Name": "service", "Value": metric_names.service_name("dev", synthesized.saga.name)}
    ]
    functions = {
        json.dumps(m["Dimensions"][0]["Value"]) for m in metrics.values()
    }  # one Errors metric per function, saga functions and the overdue check
    assert {m["MetricName"] for m in metrics.values()} == {"Errors"}
    all_functions = {
        json.dumps({"Ref": logical_id})
        for logical_id, f in synthesized.resources("AWS::Lambda::Function").items()
        # Not the audit copier: one math expression sums at most 10 metrics (issue 24's
        # alarm work covers it).
        if f["Properties"]["Handler"] != AUDIT_COPY_HANDLER
    }
    assert functions == all_functions
    assert _expression(alarm).endswith("- FILL(routed, 0)")


def test_throttles_and_system_errors_are_watched(synthesized: Synthesized) -> None:
    alarms = _alarms(synthesized)
    saga = synthesized.saga.name
    lambda_throttles = _metrics_of(alarms[alarm_name("dev", saga, "LambdaThrottles")])
    assert {m["MetricName"] for m in lambda_throttles.values()} == {"Throttles"}
    assert len(lambda_throttles) == len(synthesized.resources("AWS::Lambda::Function")) - 1
    for rule, metric in (
        ("LedgerThrottles", "ThrottledRequests"),
        ("LedgerSystemErrors", "SystemErrors"),
    ):
        watched = _metrics_of(alarms[alarm_name("dev", saga, rule)])
        assert {m["MetricName"] for m in watched.values()} == {metric}, rule
        operations = {
            d["Value"]
            for m in watched.values()
            for d in m["Dimensions"]
            if d["Name"] == "Operation"
        }
        assert {"GetItem", "PutItem", "UpdateItem", "TransactWriteItems"} <= operations
    executions = alarms[alarm_name("dev", saga, "ExecutionThrottles")]
    assert executions["MetricName"] == "ExecutionThrottled"
    assert executions["Namespace"] == "AWS/States"


def test_ledger_transaction_conflicts_alarm_like_the_other_technical_alarms(
    synthesized: Synthesized,
) -> None:
    """The handlers' ``TransactionConflict`` count (one per cancelled transaction, the tenant
    in metadata) alarms per deployment: on the ``service`` dimension the functions emit,
    notifying the topic on alarm and on OK, above what ``Retry`` absorbs."""
    saga = synthesized.saga.name
    alarm = _alarms(synthesized)[alarm_name("dev", saga, "LedgerTransactionConflicts")]
    assert alarm["Namespace"] == metric_names.NAMESPACE
    assert alarm["MetricName"] == metric_names.TRANSACTION_CONFLICT
    assert alarm["Dimensions"] == [
        {"Name": "service", "Value": metric_names.service_name("dev", saga)}
    ]
    assert alarm["Statistic"] == "Sum"
    assert alarm["Threshold"] > 1
    assert alarm["TreatMissingData"] == "notBreaching"
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    assert alarm["AlarmActions"] == alarm["OKActions"] == [{"Ref": topic_id}]
    # The functions set that service dimension: the alarm sees what they emit.
    for _, function in synthesized.saga_functions().values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables["POWERTOOLS_SERVICE_NAME"] == metric_names.service_name("dev", saga)
