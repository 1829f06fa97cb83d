"""Operable (issue #24 item 6) in the reference stack's template: a dashboard, alarms on API
throttling, queue ages, refused auto-redrives and failed compensations that reach the
topic, canary releases of every function's ``live`` alias rolled back by an alarm, tags on
every taggable resource."""

from __future__ import annotations

import json
from typing import Any

from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

from stepsaga._aws import metric_names
from stepsaga.cdk._alarms import (
    AUTO_REDRIVE_QUEUE_AGE_SECONDS,
    INGRESS_QUEUE_AGE_SECONDS,
    THROTTLED_APIS,
    alarm_name,
)
from stepsaga.cdk._dashboard import ROWS
from stepsaga.cdk._ingress import INGRESS_HANDLER
from stepsaga.cdk._settings import Canary
from tests.framework.infra.conftest import Synthesized


def _alarm(synthesized: Synthesized, rule: str) -> dict[str, Any]:
    name = alarm_name("dev", synthesized.saga.name, rule)
    (alarm,) = [
        a["Properties"]
        for a in synthesized.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] == name
    ]
    return dict(alarm)


def _topic(synthesized: Synthesized) -> dict[str, str]:
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    return {"Ref": topic_id}


def _text(value: Any) -> str:
    """A ``Fn::Join`` of strings and references, as text (each reference as ``<ref>``: in
    a dashboard body they sit inside JSON strings)."""
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join(p if isinstance(p, str) else "<ref>" for p in value["Fn::Join"][1])
    return str(value)


def test_the_dashboard_graphs_each_row_and_every_alarm(synthesized: Synthesized) -> None:
    (dashboard,) = synthesized.resources("AWS::CloudWatch::Dashboard").values()
    assert dashboard["Properties"]["DashboardName"] == "stepsaga-dev-replacement-order"
    body = json.loads(_text(dashboard["Properties"]["DashboardBody"]))
    titles = [w["properties"].get("title") for w in body["widgets"]]
    assert titles == [*ROWS, "Alarms"]
    text = json.dumps(body)
    for metric in (
        "ExecutionsSucceeded",  # cases by outcome
        "ExecutionsTimedOut",
        metric_names.RECONCILIATION_OPENED,  # open items
        metric_names.RECONCILIATION_OVERDUE,
        "ThrottledEvents",  # throttles
        "ApproximateAgeOfOldestMessage",  # queue ages
        metric_names.AUTO_REDRIVEN,  # redrives
        metric_names.AUTO_REDRIVE_BACKED_OFF,
    ):
        assert metric in text, metric
    (alarms,) = [w for w in body["widgets"] if w["properties"].get("title") == "Alarms"]
    assert len(alarms["properties"]["alarms"]) == len(
        synthesized.resources("AWS::CloudWatch::Alarm")
    )


def test_api_throttling_alarms_on_the_apis_the_functions_call(synthesized: Synthesized) -> None:
    alarm = _alarm(synthesized, "ApiThrottles")
    assert alarm["AlarmActions"] == [_topic(synthesized)]
    named = [
        m["MetricStat"]["Metric"]
        for m in alarm["Metrics"]
        if "MetricStat" in m and m["MetricStat"]["Metric"]["MetricName"] == "ThrottledEvents"
    ]
    assert sorted(d["Dimensions"][0]["Value"] for d in named) == sorted(THROTTLED_APIS)
    assert {d["Namespace"] for d in named} == {"AWS/States"}


def test_queue_age_alarms_watch_the_ingress_and_redrive_queues(synthesized: Synthesized) -> None:
    queues = synthesized.resources("AWS::SQS::Queue")
    for rule, prefix, threshold in (
        ("IngressQueueAge", "Ingress", INGRESS_QUEUE_AGE_SECONDS),
        ("AutoRedriveQueueAge", "AutoRedrive", AUTO_REDRIVE_QUEUE_AGE_SECONDS),
    ):
        alarm = _alarm(synthesized, rule)
        (queue_id,) = [
            k
            for k, q in queues.items()
            if k.startswith(prefix) and "RedrivePolicy" in q["Properties"]
        ]
        assert alarm["MetricName"] == "ApproximateAgeOfOldestMessage"
        assert alarm["Statistic"] == "Maximum"
        assert alarm["Dimensions"] == [
            {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}
        ]
        assert alarm["Threshold"] == threshold
        assert alarm["AlarmActions"] == [_topic(synthesized)]


def test_refused_redrives_and_failed_compensations_notify(synthesized: Synthesized) -> None:
    for rule, metric in (
        ("AutoRedriveRefused", metric_names.AUTO_REDRIVE_REFUSED),
        ("CompensationFailed", metric_names.COMPENSATION_FAILED),
    ):
        alarm = _alarm(synthesized, rule)
        assert alarm["MetricName"] == metric
        assert alarm["Namespace"] == metric_names.NAMESPACE
        assert alarm["AlarmActions"] == alarm["OKActions"] == [_topic(synthesized)]
        assert alarm["Threshold"] == 1


def test_every_functions_live_alias_is_released_as_a_canary_with_alarm_rollback(
    synthesized: Synthesized,
) -> None:
    canary = Canary()
    (config,) = synthesized.resources("AWS::CodeDeploy::DeploymentConfig").values()
    assert config["Properties"]["ComputePlatform"] == "Lambda"
    assert config["Properties"]["TrafficRoutingConfig"] == {
        "Type": "TimeBasedCanary",
        "TimeBasedCanary": {
            "CanaryPercentage": canary.percent,
            "CanaryInterval": canary.minutes,
        },
    }
    (config_id,) = synthesized.resources("AWS::CodeDeploy::DeploymentConfig")
    (application_id,) = synthesized.resources("AWS::CodeDeploy::Application")
    groups = synthesized.resources("AWS::CodeDeploy::DeploymentGroup")
    alarms = synthesized.resources("AWS::CloudWatch::Alarm").items()

    def alarm_id(rule: str) -> str:
        wanted = alarm_name("dev", synthesized.saga.name, rule)
        return next(k for k, a in alarms if a["Properties"]["AlarmName"] == wanted)

    rollback_id, starter_rollback_id = alarm_id("ReleaseFaults"), alarm_id("IngressReleaseFaults")
    starter_alias = synthesized.live_alias(_starter_id(synthesized))
    starter_group = synthesized.json["Resources"][starter_alias]["UpdatePolicy"][
        "CodeDeployLambdaAliasUpdate"
    ]["DeploymentGroupName"]["Ref"]
    for group_id, properties in ((k, g["Properties"]) for k, g in groups.items()):
        assert properties["ApplicationName"] == {"Ref": application_id}
        assert properties["DeploymentConfigName"] == {"Ref": config_id}
        # Every group rolls back on the functions' faults; the starter's on its own too.
        own = [{"Name": {"Ref": starter_rollback_id}}] if group_id == starter_group else []
        assert properties["AlarmConfiguration"] == {
            "Alarms": [{"Name": {"Ref": rollback_id}}, *own],
            "Enabled": True,
        }
        assert set(properties["AutoRollbackConfiguration"]["Events"]) == {
            "DEPLOYMENT_FAILURE",
            "DEPLOYMENT_STOP_ON_REQUEST",
            "DEPLOYMENT_STOP_ON_ALARM",
        }
    # Every function's ``live`` alias, and only through its own group.
    functions = synthesized.resources("AWS::Lambda::Function")
    aliases = synthesized.resources("AWS::Lambda::Alias")
    assert len(aliases) == len(functions) == len(groups)
    named = set()
    for alias in aliases.values():
        update = alias["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]
        assert update["ApplicationName"] == {"Ref": application_id}
        named.add(update["DeploymentGroupName"]["Ref"])
    assert named == set(groups)


def _starter_id(synthesized: Synthesized) -> str:
    functions = synthesized.resources("AWS::Lambda::Function")
    (starter,) = [k for k, f in functions.items() if f["Properties"]["Handler"] == INGRESS_HANDLER]
    return starter


def _counted(alarm: dict[str, Any]) -> set[str]:
    return {
        m["MetricStat"]["Metric"]["Dimensions"][0]["Value"]["Ref"]
        for m in alarm["Metrics"]
        if "MetricStat" in m and m["MetricStat"]["Metric"]["MetricName"] == "Errors"
    }


def test_every_function_with_a_canary_alias_is_watched_by_a_rollback_alarm_of_its_group(
    synthesized: Synthesized,
) -> None:
    """``ReleaseFaults`` counts every function's faults but the ingress starter's (less the
    routed outcomes); ``IngressReleaseFaults`` counts the starter's, and only its group
    rolls back on it (one alarm over both would be a CloudFormation cycle)."""
    alarm = _alarm(synthesized, "ReleaseFaults")
    assert "AlarmActions" not in alarm  # LambdaErrors notifies; this one rolls back
    functions = synthesized.resources("AWS::Lambda::Function")
    starter = _starter_id(synthesized)
    assert _counted(alarm) == set(functions) - {starter}
    assert any(
        "MetricStat" in m and m["MetricStat"]["Metric"]["MetricName"] == metric_names.ROUTED_ERROR
        for m in alarm["Metrics"]
    )
    own = _alarm(synthesized, "IngressReleaseFaults")
    assert "AlarmActions" not in own
    assert _counted(own) == {starter}
    assert own["Threshold"] == 3
    # Each group's alarms together watch its function.
    alarm_ids = {
        k: a["Properties"] for k, a in synthesized.resources("AWS::CloudWatch::Alarm").items()
    }
    groups = synthesized.resources("AWS::CodeDeploy::DeploymentGroup")
    for function_id in functions:
        alias = synthesized.json["Resources"][synthesized.live_alias(function_id)]
        group_id = alias["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]["DeploymentGroupName"]
        configured = groups[group_id["Ref"]]["Properties"]["AlarmConfiguration"]["Alarms"]
        watched = set().union(*(_counted(alarm_ids[a["Name"]["Ref"]]) for a in configured))
        assert function_id in watched, function_id


def test_every_taggable_resource_carries_the_saga_and_stage(synthesized: Synthesized) -> None:
    """ "Taggable" per CloudFormation's own resource schemas (cfn-lint ships them)."""
    wanted = {"stepsaga:saga": "replacement-order", "stepsaga:stage": "dev"}
    taggable = 0
    for logical_id, resource in synthesized.json["Resources"].items():
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", resource["Type"])
        if "Tags" not in schema.schema.get("properties", {}):
            continue
        taggable += 1
        tags = resource["Properties"].get("Tags", [])
        found = {t["Key"]: t["Value"] for t in tags} if isinstance(tags, list) else dict(tags)
        assert wanted.items() <= found.items(), logical_id
    assert taggable > 50


def test_codedeploy_may_shift_exactly_the_live_aliases_and_read_the_rollback_alarm(
    synthesized: Synthesized,
) -> None:
    (role_id,) = [
        k
        for k, r in synthesized.resources("AWS::IAM::Role").items()
        if "codedeploy.amazonaws.com" in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])
    ]
    statements = [
        s
        for p in synthesized.resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    by_sid = {s["Sid"]: s for s in statements}
    assert set(by_sid) == {"ShiftLiveAliases", "ReadRollbackAlarms"}
    shift = by_sid["ShiftLiveAliases"]
    assert sorted(shift["Action"]) == [
        "lambda:GetAlias",
        "lambda:GetProvisionedConcurrencyConfig",
        "lambda:UpdateAlias",
    ]
    functions = synthesized.resources("AWS::Lambda::Function")
    assert sorted(
        (r["Fn::Join"][1][0]["Fn::GetAtt"][0], r["Fn::Join"][1][1]) for r in shift["Resource"]
    ) == sorted((f, ":live") for f in functions)
    read = by_sid["ReadRollbackAlarms"]
    assert read["Action"] == "cloudwatch:DescribeAlarms"
    rollback_ids = sorted(
        k
        for k, a in synthesized.resources("AWS::CloudWatch::Alarm").items()
        if a["Properties"]["AlarmName"].endswith("ReleaseFaults")
    )
    assert sorted(r["Fn::GetAtt"][0] for r in read["Resource"]) == rollback_ids
    assert len(rollback_ids) == 2
