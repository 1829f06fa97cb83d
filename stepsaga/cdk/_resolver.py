"""The resolver: the function operators' decisions go through (``stepsaga._aws.resolver``).

A ``SagaFunction`` with ``access.RESOLVER`` (the only role besides the saga's reconciler that
writes reconciliation items and audit records), the Step Functions calls a decision makes
(resume, stop, redrive, and the reads that find and check an execution), what ``cancel``'s
undo calls (the definition the execution ran, and invoking the ``live`` aliases of the
saga's compensations and reconciler: ``cancel.undo_functions``), and a function URL
with ``AuthType AWS_IAM`` on its ``live`` alias: Lambda verifies each request's signature
and hands the function the signer, who is the decider. Operators get ``access.INVOKE_RESOLVER``
on that alias (``OperatorPolicy``), nothing else that writes.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from cdk_nag import NagSuppressions
from constructs import Construct

from stepsaga._aws.resolver import RESOLVER_HANDLER
from stepsaga._project import deployment
from stepsaga.backends._aws.decisions import RESOLVER_TIMEOUT_SECONDS
from stepsaga.backends._cancel import undo_functions
from stepsaga.cdk._access import (
    RESOLVER,
    RESOLVER_DEFINITION_ACTIONS,
    RESOLVER_EXECUTION_ACTIONS,
    RESOLVER_STATE_MACHINE_ACTIONS,
    RESOLVER_UNDO_ACTIONS,
)
from stepsaga.cdk._function import (
    LIVE_ALIAS,
    SagaFunction,
    SharedResources,
    executions_arn,
    state_machine_arn,
)
from stepsaga.cdk._saga_deployment import SagaDeployment
from stepsaga.cdk._settings import FunctionSettings

__all__ = ["SagaResolver"]


class SagaResolver(Construct):
    """``function``, ``alias`` (what the URL invokes) and ``url`` (``lambda_.FunctionUrl``)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        saga: SagaDeployment,
        state_machine_name: str,
        shared: SharedResources,
        functions: Mapping[str, lambda_.IFunction],
    ) -> None:
        """``functions``: the saga's functions by logical name; ``cancel`` invokes their
        ``live`` aliases, as the state machine does."""
        super().__init__(scope, construct_id)
        machine_arn = state_machine_arn(self, state_machine_name)
        made = SagaFunction(
            self,
            "Decisions",
            handler=RESOLVER_HANDLER,
            access=RESOLVER,
            shared=shared,
            # A cancel invokes the compensations one after another within one request.
            settings=FunctionSettings(timeout_seconds=RESOLVER_TIMEOUT_SECONDS),
            description=(
                f"{saga.name}: operators' decisions (resolve, approve, stop, cancel, "
                "redrive) as the signed caller"
            ),
            extra_environment={
                deployment.ENV_SAGA: saga.saga_ref,
                deployment.ENV_STATE_MACHINE_ARN: machine_arn,
            },
        )
        self.function: lambda_.Function = made.function
        self.alias: lambda_.Alias = made.alias
        made.role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="FindAndResumeCases",
                actions=list(RESOLVER_STATE_MACHINE_ACTIONS),
                resources=[machine_arn],
            )
        )
        made.role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="StopAndRedriveExecutions",
                actions=list(RESOLVER_EXECUTION_ACTIONS),
                resources=[executions_arn(self, state_machine_name)],
            )
        )
        made.role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ReadTheDefinitionACaseRan",
                actions=list(RESOLVER_DEFINITION_ACTIONS),
                resources=[machine_arn, f"{machine_arn}:*"],
            )
        )
        undone = sorted(undo_functions(saga.definition))
        if undone:
            made.role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="UndoWithTheSagasCompensations",
                    actions=list(RESOLVER_UNDO_ACTIONS),
                    # The alias ARN spelled from the function's (a reference to the alias
                    # resource would make this role wait for the canary's alarms, which
                    # watch this function: a cycle).
                    resources=[f"{functions[name].function_arn}:{LIVE_ALIAS}" for name in undone],
                )
            )
        self.url = self.alias.add_function_url(auth_type=lambda_.FunctionUrlAuthType.AWS_IAM)
        NagSuppressions.add_resource_suppressions(
            made.role,
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": (
                        "Step Functions calls on the executions of this saga's one state "
                        "machine (execution names are the cases'): describe, stop, redrive."
                    ),
                    "appliesTo": [
                        {"regex": "/^Resource::arn:<AWS::Partition>:states:.*:execution:.*:\\*$/g"}
                    ],
                },
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": (
                        "DescribeStateMachine on the versions of this saga's one state "
                        "machine (stateMachine:NAME:VERSION): cancel reads the definition "
                        "the case ran."
                    ),
                    "appliesTo": [
                        {
                            "regex": (
                                "/^Resource::arn:<AWS::Partition>:states:.*:stateMachine:.*:\\*$/g"
                            )
                        }
                    ],
                },
            ],
            apply_to_children=True,
        )
