"""What the synthesized template must contain: the shape of every resource the saga needs."""

from __future__ import annotations

import os
from typing import Any

import pytest
from aws_cdk.assertions import Match

from services.dependencies import ENV_SERVICES, ReferenceDependencies
from services.http import HttpPayments
from services.http.config import ENV_TIMEOUTS, ENV_URLS, HttpServicesConfig, HttpTimeouts
from stepsaga import AwsContext
from stepsaga._aws import metric_names
from stepsaga._aws.audit_copy import AUDIT_COPY_HANDLER
from stepsaga._aws.resolver import RESOLVER_HANDLER
from stepsaga._handlers.settings import load_settings
from stepsaga._project import deployment
from stepsaga._util.clock import SystemClock
from stepsaga.cdk._alarms import RULES
from stepsaga.cdk._auto_redrive import AUTO_REDRIVE_HANDLER
from stepsaga.cdk._ingress import INGRESS_HANDLER
from stepsaga.ledger import _table as layout
from tests.framework.infra.conftest import SERVICE_CONTEXT, Synthesized
from tests.framework.infra.test_init_cdk_app import asset_modules_missing

OVERDUE_CHECK_HANDLER = "stepsaga.lambdas.overdue_check"


def _function_by_handler(synthesized: Synthesized) -> dict[str, tuple[str, dict[str, Any]]]:
    return {
        resource["Properties"]["Handler"]: (logical_id, resource)
        for logical_id, resource in synthesized.resources("AWS::Lambda::Function").items()
    }


def test_resource_counts(synthesized: Synthesized) -> None:
    # + the overdue reconciliation check, the ingress starter, the redriver, the resolver,
    # the audit copier
    functions = len(synthesized.saga.functions) + 5
    counts = {
        "AWS::Lambda::Function": functions,
        "AWS::IAM::Role": functions + 2,  # + the state machine's, CodeDeploy's
        "AWS::Logs::LogGroup": functions + 1,  # + the state machine's log group
        "AWS::DynamoDB::Table": 1,
        "AWS::StepFunctions::StateMachine": 1,
        "AWS::SNS::Topic": 1,
        "AWS::KMS::Key": 1,
        "AWS::CloudWatch::Alarm": len(RULES),
        "AWS::Logs::MetricFilter": 1,
        "AWS::Events::Rule": 2,  # the overdue check's schedule, the failed executions'
        "AWS::SQS::Queue": 4,  # the ingress and auto-redrive queues and their dead letters
        "AWS::Lambda::EventSourceMapping": 3,  # + the ledger stream's (audit copies)
        "AWS::S3::Bucket": 1,  # the audit copies (Object Lock)
        "AWS::IAM::ManagedPolicy": 1,  # the operators'
        "AWS::CloudWatch::Dashboard": 1,
        # canary releases: one application and configuration, a group per function
        "AWS::CodeDeploy::Application": 1,
        "AWS::CodeDeploy::DeploymentConfig": 1,
        "AWS::CodeDeploy::DeploymentGroup": functions,
        "AWS::Backup::BackupPlan": 0,  # only when StageSettings.backup asks
        "AWS::Lambda::Url": 1,  # the resolver's (AWS_IAM)
    }
    for type_name, count in counts.items():
        synthesized.template.resource_count_is(type_name, count)


def test_table_layout_ttl_pitr_encryption_and_sparse_index(synthesized: Synthesized) -> None:
    synthesized.template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": {
                "BillingMode": "PAY_PER_REQUEST",
                "KeySchema": [
                    {"AttributeName": layout.PARTITION_KEY, "KeyType": "HASH"},
                    {"AttributeName": layout.SORT_KEY, "KeyType": "RANGE"},
                ],
                "TimeToLiveSpecification": {
                    "AttributeName": layout.TTL_ATTRIBUTE,
                    "Enabled": True,
                },
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                # SSEEnabled without a key id: KMS with the AWS-managed alias/aws/dynamodb.
                "SSESpecification": {"SSEEnabled": True, "KMSMasterKeyId": Match.absent()},
                # Exactly the layout's indexes (the lookups), each projecting everything.
                "GlobalSecondaryIndexes": [
                    {
                        "IndexName": name,
                        "KeySchema": [
                            {"AttributeName": partition, "KeyType": "HASH"},
                            {"AttributeName": sort, "KeyType": "RANGE"},
                        ],
                        "Projection": {"ProjectionType": "ALL"},
                    }
                    for name, (partition, sort) in layout.GSIS.items()
                ],
                # The dev stage: no deletion protection, the table goes with the stack.
                "DeletionProtectionEnabled": False,
            },
            "DeletionPolicy": "Delete",
        },
    )


def test_state_machine_is_standard_named_by_stage_logged_and_traced(
    synthesized: Synthesized,
) -> None:
    (machine,) = synthesized.resources("AWS::StepFunctions::StateMachine").values()
    properties = machine["Properties"]
    assert properties["StateMachineType"] == "STANDARD"
    assert properties["StateMachineName"] == deployment.state_machine_name(
        synthesized.saga.name, "dev"
    )
    assert properties["TracingConfiguration"] == {"Enabled": True}
    logging = properties["LoggingConfiguration"]
    assert logging["Level"] == "ALL"
    (destination,) = logging["Destinations"]
    log_group_id = destination["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]
    log_group = synthesized.json["Resources"][log_group_id]["Properties"]
    assert "KmsKeyId" in log_group
    assert log_group["LogGroupName"].startswith("/aws/vendedlogs/states/")


def test_every_saga_function_runs_the_generic_entry_on_the_current_runtime(
    synthesized: Synthesized,
) -> None:
    saga_functions = synthesized.saga_functions()
    assert set(saga_functions) == set(synthesized.saga.functions)
    for name, (_, function) in saga_functions.items():
        properties = function["Properties"]
        assert properties["Handler"] == deployment.LAMBDA_HANDLER
        variables = properties["Environment"]["Variables"]
        assert variables[deployment.ENV_SAGA] == synthesized.saga.saga_ref
        assert variables[deployment.ENV_DEPENDENCIES] == synthesized.saga.dependencies_ref
        assert variables[deployment.ENV_FUNCTION] == name
    functions = _function_by_handler(synthesized)
    assert set(functions) == {
        deployment.LAMBDA_HANDLER,
        OVERDUE_CHECK_HANDLER,
        INGRESS_HANDLER,
        AUTO_REDRIVE_HANDLER,
        RESOLVER_HANDLER,
        AUDIT_COPY_HANDLER,
    }
    for _, function in [*saga_functions.values(), functions[OVERDUE_CHECK_HANDLER]]:
        properties = function["Properties"]
        assert properties["Runtime"] == "python3.14"
        assert properties["Architectures"] == ["arm64"]
        assert properties["TracingConfig"] == {"Mode": "Active"}
        assert "Ref" in properties["LoggingConfig"]["LogGroup"]
        environment = properties["Environment"]["Variables"]
        assert environment["POWERTOOLS_SERVICE_NAME"] == metric_names.service_name(
            "dev", synthesized.saga.name
        )
        assert environment["POWERTOOLS_METRICS_NAMESPACE"] == metric_names.NAMESPACE
        assert environment["POWERTOOLS_LOG_LEVEL"] == "INFO"
        assert environment[deployment.ENV_STAGE] == "dev"
        assert "Ref" in environment[deployment.ENV_LEDGER_TABLE_NAME]
        assert "Ref" in environment[deployment.ENV_RECONCILIATION_TOPIC_ARN]


def _saga_environments(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    return {
        name: resource["Properties"]["Environment"]["Variables"]
        for name, (_, resource) in synthesized.saga_functions().items()
    }


def test_saga_functions_call_the_configured_services_over_http(
    synthesized: Synthesized,
) -> None:
    for environment in _saga_environments(synthesized).values():
        assert environment[ENV_SERVICES] == "http"
        for key, variable in ENV_URLS.items():
            assert environment[variable] == SERVICE_CONTEXT[key]
        assert set(ENV_TIMEOUTS.values()) <= set(environment)
    overdue = _function_by_handler(synthesized)[OVERDUE_CHECK_HANDLER][1]
    assert ENV_SERVICES not in overdue["Properties"]["Environment"]["Variables"]


def test_the_handlers_settings_read_the_stack_environment(
    synthesized: Synthesized, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The names the stack sets are the ones the handlers read: with a saga function's
    environment (references replaced by example values, as Lambda resolves them), the
    handlers' settings pick HTTP services at exactly these URLs, never the simulated ones."""
    environment = next(iter(_saga_environments(synthesized).values()))
    for name in [n for n in os.environ if n.startswith("STEPSAGA_")]:
        monkeypatch.delenv(name)
    for name, value in environment.items():
        monkeypatch.setenv(name, value if isinstance(value, str) else f"resolved-{name}")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "ReserveStock")

    settings = load_settings()
    clients = ReferenceDependencies().aws(AwsContext(clock=SystemClock(), environ=os.environ))
    try:
        assert isinstance(clients.payments, HttpPayments)
    finally:
        clients.close()
    assert HttpServicesConfig.from_env(os.environ) == HttpServicesConfig(
        inventory_url=SERVICE_CONTEXT["inventory_url"],
        payments_url=SERVICE_CONTEXT["payments_url"],
        shipping_url=SERVICE_CONTEXT["shipping_url"],
        timeouts=HttpTimeouts(),
    )
    assert settings.resolved_ledger_url == (
        f"dynamodb://resolved-{deployment.ENV_LEDGER_TABLE_NAME}"
    )
    assert (settings.saga, settings.dependencies) == (
        synthesized.saga.saga_ref,
        synthesized.saga.dependencies_ref,
    )


def test_every_log_group_has_retention_and_the_stack_key(synthesized: Synthesized) -> None:
    for log_group in synthesized.resources("AWS::Logs::LogGroup").values():
        assert log_group["Properties"]["RetentionInDays"] == 30
        assert "Fn::GetAtt" in log_group["Properties"]["KmsKeyId"]


def test_topic_is_encrypted_and_requires_tls(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::SNS::Topic", {"KmsMasterKeyId": Match.object_like({"Fn::GetAtt": Match.any_value()})}
    )
    synthesized.template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            }
        },
    )


def test_key_rotates(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


def test_overdue_check_runs_on_a_schedule(synthesized: Synthesized) -> None:
    logical_id, _ = _function_by_handler(synthesized)[OVERDUE_CHECK_HANDLER]
    synthesized.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(15 minutes)",
            # The released version (the ``live`` alias), never $LATEST.
            "Targets": [Match.object_like({"Arn": {"Ref": synthesized.live_alias(logical_id)}})],
        },
    )


def test_outputs_have_stable_keys(synthesized: Synthesized) -> None:
    outputs = synthesized.json["Outputs"]
    assert set(outputs) == {
        deployment.OUTPUT_STATE_MACHINE_ARN,
        deployment.OUTPUT_RESOLVER_URL,
        deployment.OUTPUT_AUDIT_BUCKET_NAME,
        deployment.OUTPUT_LEDGER_TABLE_NAME,
        deployment.OUTPUT_RECONCILIATION_TOPIC_ARN,
        deployment.OUTPUT_OPERATOR_POLICY_ARN,
        deployment.OUTPUT_INGRESS_QUEUE_URL,
        deployment.OUTPUT_INGRESS_DEAD_LETTER_QUEUE_URL,
        deployment.OUTPUT_STATE_MACHINE_ALIAS_ARN,
    }
    (alias_id,) = synthesized.resources("AWS::StepFunctions::StateMachineAlias")
    assert outputs[deployment.OUTPUT_STATE_MACHINE_ALIAS_ARN]["Value"] == {
        "Fn::GetAtt": [alias_id, "Arn"]
    }
    (policy_id,) = synthesized.resources("AWS::IAM::ManagedPolicy")
    assert outputs[deployment.OUTPUT_OPERATOR_POLICY_ARN]["Value"] == {"Ref": policy_id}
    (machine_id,) = synthesized.resources("AWS::StepFunctions::StateMachine")
    (table_id,) = synthesized.resources("AWS::DynamoDB::Table")
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    assert outputs[deployment.OUTPUT_STATE_MACHINE_ARN]["Value"] == {"Ref": machine_id}
    assert outputs[deployment.OUTPUT_LEDGER_TABLE_NAME]["Value"] == {"Ref": table_id}
    assert outputs[deployment.OUTPUT_RECONCILIATION_TOPIC_ARN]["Value"] == {"Ref": topic_id}


def test_every_function_finds_the_modules_it_loads_in_its_asset(
    synthesized: Synthesized,
) -> None:
    assert asset_modules_missing(synthesized.outdir, synthesized.json) == []
