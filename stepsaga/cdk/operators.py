"""The managed policy operators attach: exactly ``access.OPERATOR`` on this deployment's ARNs.

Shipped as the stack output ``OperatorPolicyArn``: an operator role attaches it and runs
``stepsaga --backend aws --stack NAME …`` without raw write access to anything else. On AWS
the CLI records the caller's IAM identity as the decider (``sts:GetCallerIdentity``).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from cdk_nag import NagSuppressions
from constructs import Construct

from stepsaga.cdk.access import OPERATOR, OperatorAccess, leading_key_conditions
from stepsaga.cdk.function import executions_arn, state_machine_arn
from stepsaga.cdk.ledger_table import LedgerTable


class OperatorPolicy(Construct):
    """``policy``: the managed policy; one statement per resource kind."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_machine_name: str,
        ledger: LedgerTable,
        access: OperatorAccess = OPERATOR,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        machine_arn = state_machine_arn(self, state_machine_name)
        executions = executions_arn(self, state_machine_name)
        stack_arn = stack.format_arn(
            service="cloudformation",
            resource="stack",
            resource_name=f"{stack.stack_name}/*",
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )
        table = ledger.table.table_arn
        statements = [
            ("ReadTheStacksOutputs", access.stack_actions, [stack_arn]),
            ("FindAndResumeCases", access.state_machine_actions, [machine_arn]),
            ("FollowAndRedriveExecutions", access.execution_actions, [executions]),
            ("ReadAndResolveTheLedger", access.table_actions, [table]),
            (
                "QueryTheLedgerIndexes",
                access.index_actions,
                [ledger.index_arn_of(index) for index in access.indexes],
            ),
        ]
        # Budget shards only: the partition key must start with BUDGET# (every key of the
        # request, so a transaction cannot slip a record or an item in).
        budget = iam.PolicyStatement(
            sid="ReplaceTenantBudgets",
            actions=list(access.budget_actions),
            resources=[table],
            conditions={
                k: dict(v) for k, v in leading_key_conditions(access.budget_key_prefix).items()
            },
        )
        pointers = (
            [ledger.pointer_statement("FindCasesByTheirPointers", access.pointer_actions)]
            if access.pointer_actions
            else []
        )
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            description=(
                f"stepsaga operators of {state_machine_name}: status, history, redrive, "
                "reconciliation (the caller's IAM identity is recorded as the decider)"
            ),
            statements=[
                iam.PolicyStatement(sid=sid, actions=list(actions), resources=resources)
                for sid, actions, resources in statements
                if actions
            ]
            + ([budget] if access.budget_actions else [])
            + pointers,
        )
        NagSuppressions.add_resource_suppressions(
            self.policy,
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": (
                        "Resource wildcards name only this deployment's own resources: the "
                        "executions of its one state machine (execution names are the cases') "
                        "and this stack's id suffix; every action "
                        "is listed explicitly."
                    ),
                    "appliesTo": [
                        {"regex": "/^Resource::arn:<AWS::Partition>:states:.*:execution:.*:\\*$/g"},
                        {"regex": "/^Resource::arn:<AWS::Partition>:cloudformation:.*\\/\\*$/g"},
                    ],
                }
            ],
        )
