"""The saga's Standard state machine, from the compiled ASL (never string-joined), with a
published version per release and a ``live`` alias."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from cdk_nag import NagSuppressions
from constructs import Construct

from stepsaga.cdk._function import LIVE_ALIAS
from stepsaga.cdk._saga_deployment import SagaDeployment


class SagaStateMachine(Construct):
    """The Standard state machine: logged (without execution data), traced, and allowed to
    invoke exactly the saga's functions."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        saga: SagaDeployment,
        functions: Mapping[str, lambda_.IFunction],
        aliases: Mapping[str, lambda_.IFunction] | None = None,
        key: kms.IKey,
        log_retention: logs.RetentionDays,
        log_removal_policy: RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        # The /aws/vendedlogs/ prefix keeps CloudWatch Logs' resource policy for log
        # delivery from growing with every state machine (AWS's recommendation).
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            log_group_name=f"/aws/vendedlogs/states/{name}",
            retention=log_retention,
            encryption_key=key,
            removal_policy=log_removal_policy,
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=name,
            state_machine_type=sfn.StateMachineType.STANDARD,
            # One plain JSON string; CloudFormation substitutes ${…FunctionArn}.
            definition_body=sfn.DefinitionBody.from_string(saga.definition_json()),
            # Tasks invoke each function's ``live`` alias (a published version), not $LATEST.
            definition_substitutions=saga.definition_substitutions(
                lambda function_name: (aliases or functions)[function_name].function_arn
            ),
            logs=sfn.LogOptions(
                destination=self.log_group,
                level=sfn.LogLevel.ALL,
                # Every event, but without inputs/outputs: cases may carry personal data,
                # and personal data stays out of logs (execution history still has it).
                include_execution_data=False,
            ),
            tracing_enabled=True,
        )
        for function in functions.values():
            # lambda:InvokeFunction on the function's ARN and its versions (ARN:*), only.
            function.grant_invoke(self.state_machine)

        # Each definition change publishes a version (retained: an execution keeps the
        # version it started on, and can be redriven on it); ``live`` points at the newest.
        self.version = sfn.CfnStateMachineVersion(
            self,
            "Version",
            state_machine_arn=self.state_machine.state_machine_arn,
            state_machine_revision_id=self.state_machine.state_machine_revision_id,
            description=f"{name}: published by the stack",
        )
        self.version.apply_removal_policy(RemovalPolicy.RETAIN)
        self.alias = sfn.CfnStateMachineAlias(
            self,
            "Live",
            name=LIVE_ALIAS,
            description=f"{name}: the version new cases start on",
            routing_configuration=[
                sfn.CfnStateMachineAlias.RoutingConfigurationVersionProperty(
                    state_machine_version_arn=self.version.attr_arn, weight=100
                )
            ],
        )
        self.alias_arn: str = self.alias.attr_arn

        NagSuppressions.add_resource_suppressions(
            self.state_machine.role,
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": (
                        "Resource '*' as AWS requires it: Step Functions log delivery "
                        "(logs:CreateLogDelivery, GetLogDelivery, UpdateLogDelivery, "
                        "DeleteLogDelivery, ListLogDeliveries, PutResourcePolicy, "
                        "DescribeResourcePolicies, DescribeLogGroups) and X-Ray "
                        "(xray:PutTraceSegments, PutTelemetryRecords, GetSamplingRules, "
                        "GetSamplingTargets) support no resource-level permissions."
                    ),
                    "appliesTo": ["Resource::*"],
                },
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": (
                        "lambda:InvokeFunction on '<function ARN>:*' covers the versions and "
                        "aliases of the saga's own functions only (CDK grantInvoke), so a "
                        "qualified FunctionName still works; no other function is reachable."
                    ),
                    "appliesTo": [{"regex": "/^Resource::<.+\\.Arn>:\\*$/g"}],
                },
            ],
            apply_to_children=True,
        )
