"""One Lambda function of the saga: its own role, log group, exactly the framework access its
kind needs (``stepsaga.cdk._access``) and the app's own settings (``FunctionSettings``)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from cdk_nag import NagSuppressions
from constructs import Construct

from stepsaga._aws import metric_names
from stepsaga._aws.secrets import ENV_SECRET_SOURCES, SecretStore
from stepsaga._aws.signing import ENV_SIGNED_APIS
from stepsaga._project import deployment
from stepsaga.cdk._access import (
    APP_WRITE_ACTIONS,
    INVOKE_SIGNED,
    FunctionAccess,
    leading_key_conditions,
)
from stepsaga.cdk._bundling import ARCHITECTURE, RUNTIME
from stepsaga.cdk._ledger_table import LedgerTable
from stepsaga.cdk._settings import (
    DEFAULT_FUNCTION_TIMEOUT_SECONDS,
    DEFAULT_MEMORY_MB,
    FunctionSettings,
)

#: The alias the state machine invokes (and the state machine's own alias).
LIVE_ALIAS = "live"


@dataclass(frozen=True)
class FunctionEnvironment:
    """The typed environment every function gets (names in ``stepsaga._project.deployment``)."""

    stage: str
    table_name: str
    topic_arn: str
    #: The saga deployed: part of the metrics' ``service`` dimension (alarms per saga).
    saga: str | None = None
    log_level: str = "INFO"

    def variables(self) -> dict[str, str]:
        return {
            deployment.ENV_STAGE: self.stage,
            deployment.ENV_LEDGER_TABLE_NAME: self.table_name,
            deployment.ENV_RECONCILIATION_TOPIC_ARN: self.topic_arn,
            "POWERTOOLS_SERVICE_NAME": metric_names.service_name(self.stage, self.saga),
            "POWERTOOLS_METRICS_NAMESPACE": metric_names.NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": self.log_level,
        }


@dataclass(frozen=True)
class SharedResources:
    """What the functions may be granted access to."""

    code: lambda_.Code
    ledger: LedgerTable
    topic: sns.ITopic
    key: kms.IKey
    #: Built from the state machine's fixed name, so granting it adds no dependency cycle.
    state_machine_arn: str
    environment: FunctionEnvironment
    log_retention: logs.RetentionDays
    log_removal_policy: RemovalPolicy
    reserved_concurrency: int | None = None


class SagaFunction(Construct):
    """A function with its own role and log group; ``settings`` is the app's part."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: str,
        access: FunctionAccess,
        shared: SharedResources,
        description: str,
        extra_environment: dict[str, str] | None = None,
        settings: FunctionSettings | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        settings = settings or FunctionSettings()
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"stepsaga {construct_id}: its ledger/topic access and its app grants",
        )
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            retention=shared.log_retention,
            encryption_key=shared.key,
            removal_policy=shared.log_removal_policy,
        )
        self.function = lambda_.Function(
            self,
            "Function",
            description=description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=handler,
            code=shared.code,
            role=self.role,
            log_group=self.log_group,
            tracing=lambda_.Tracing.ACTIVE,
            timeout=Duration.seconds(settings.timeout_seconds or DEFAULT_FUNCTION_TIMEOUT_SECONDS),
            memory_size=settings.memory_mb or DEFAULT_MEMORY_MB,
            environment={
                **shared.environment.variables(),
                **settings.environment,
                **{name: secret.secret_arn for name, secret in settings.secrets.items()},
                **{name: p.parameter_name for name, p in settings.parameters.items()},
                **_secret_sources(settings),
                **{name: api.url for name, api in settings.signed_apis.items()},
                **_signed_apis(settings),
                **(extra_environment or {}),
            },
            reserved_concurrent_executions=settings.reserved_concurrency
            or shared.reserved_concurrency,
        )
        # Every deploy that changes code or configuration publishes a version; the alias
        # moves to it, and the state machine calls the alias, never $LATEST: what runs is
        # always a published, complete release, and a fix reaches cases waiting on it (a
        # redrive calls the alias again). Old versions are not kept: each is a copy of the
        # asset, and rolling back is deploying the previous release.
        self.alias = lambda_.Alias(
            self, "Live", alias_name=LIVE_ALIAS, version=self.function.current_version
        )
        self.log_group.grant_write(self.role)
        self._grant(access, shared)
        for secret in settings.secrets.values():
            secret.grant_read(self.function)
        for parameter in settings.parameters.values():
            parameter.grant_read(self.function)
        for name, api in sorted(settings.signed_apis.items()):
            action, conditions = INVOKE_SIGNED[api.service]
            self.role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="Call" + "".join(part.title() for part in name.split("_")),
                    actions=[action],
                    resources=list(api.resources),
                    conditions=conditions or None,
                )
            )
        if settings.ledger_write_prefixes:
            # The app's own extra writes (``Writes``): an ``Update`` or a ``ConditionCheck``
            # in the ledger's transaction, on its own item kinds only.
            own_kinds = leading_key_conditions(*settings.ledger_write_prefixes)
            self.role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="LedgerWritesOfTheAppsItemKinds",
                    actions=list(APP_WRITE_ACTIONS),
                    resources=[shared.ledger.table.table_arn],
                    conditions={k: dict(v) for k, v in own_kinds.items()},
                )
            )
        if settings.grant is not None:
            settings.grant(self.function)
        NagSuppressions.add_resource_suppressions(
            self.role,
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": (
                        "X-Ray active tracing: xray:PutTraceSegments and "
                        "xray:PutTelemetryRecords support no resource-level permissions, so "
                        "AWS requires Resource '*'."
                    ),
                    "appliesTo": ["Resource::*"],
                }
            ],
            apply_to_children=True,
        )

    def _grant(self, access: FunctionAccess, shared: SharedResources) -> None:
        if access.table_actions:
            self.role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="LedgerTable",
                    actions=list(access.table_actions),
                    resources=[shared.ledger.table.table_arn],
                )
            )
        if access.write_actions:
            # Only the item kinds this function owns (every key of a transaction too).
            conditions = leading_key_conditions(*access.write_prefixes)
            self.role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="LedgerWritesOfItsItemKinds",
                    actions=list(access.write_actions),
                    resources=[shared.ledger.table.table_arn],
                    conditions={k: dict(v) for k, v in conditions.items()},
                )
            )
        if access.index_actions:
            self.role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="LedgerIndexes",
                    actions=list(access.index_actions),
                    resources=[shared.ledger.index_arn_of(index) for index in access.indexes],
                )
            )
        if access.publish_reconciliation:
            self.role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="PublishReconciliation",
                    actions=["sns:Publish"],
                    resources=[shared.topic.topic_arn],
                )
            )
            # Publishing to a KMS-encrypted topic: SNS generates and decrypts a data key
            # with the publisher's permissions.
            self.role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="EncryptReconciliationMessages",
                    actions=["kms:GenerateDataKey", "kms:Decrypt"],
                    resources=[shared.key.key_arn],
                )
            )
        if access.send_task_success:
            self.role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="ResumeWaitingCase",
                    actions=["states:SendTaskSuccess"],
                    resources=[shared.state_machine_arn],
                )
            )


def _secret_sources(settings: FunctionSettings) -> dict[str, str]:
    """``STEPSAGA_SECRET_SOURCES``: which store each secret variable names (none: unset)."""
    sources = {name: SecretStore.SECRETS_MANAGER.value for name in settings.secrets}
    sources.update({name: SecretStore.SSM.value for name in settings.parameters})
    if not sources:
        return {}
    return {ENV_SECRET_SOURCES: json.dumps(sources, sort_keys=True, separators=(",", ":"))}


def _signed_apis(settings: FunctionSettings) -> dict[str, str]:
    """``STEPSAGA_SIGNED_APIS``: each signed API's service and, if given, region."""
    if not settings.signed_apis:
        return {}
    declared = {
        name: {"service": api.service.value, **({"region": api.region} if api.region else {})}
        for name, api in settings.signed_apis.items()
    }
    return {ENV_SIGNED_APIS: json.dumps(declared, sort_keys=True, separators=(",", ":"))}


def state_machine_arn(scope: Construct, name: str) -> str:
    """ARN of the stack's state machine from its fixed name (no reference to the resource)."""
    return Stack.of(scope).format_arn(
        service="states",
        resource="stateMachine",
        resource_name=name,
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )


def executions_arn(scope: Construct, name: str) -> str:
    """ARN pattern of every execution of the stack's state machine (``execution:<name>:*``;
    AWS authorizes calls on executions of a version or alias against these ARNs)."""
    return Stack.of(scope).format_arn(
        service="states",
        resource="execution",
        resource_name=f"{name}:*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
