"""The managed policy operators attach: exactly ``access.OPERATOR`` on this deployment's ARNs.

Shipped as the stack output ``OperatorPolicyArn``: an operator role attaches it and runs
``stepsaga --backend aws --stack NAME …``: reads, and decisions as signed requests to the
resolver (``stepsaga.cdk._resolver``), which records the signer as the decider. With
``StageSettings.operator_role`` the stack also creates the role, its session names bound
to the person (``sts:RoleSessionName``), with the policy attached (:class:`OperatorRole`).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from cdk_nag import NagSuppressions
from constructs import Construct

from stepsaga.cdk._access import OPERATOR, OperatorAccess, leading_key_conditions
from stepsaga.cdk._function import executions_arn, state_machine_arn
from stepsaga.cdk._ledger_table import LedgerTable


class OperatorPolicy(Construct):
    """``policy``: the managed policy; one statement per resource kind."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_machine_name: str,
        ledger: LedgerTable,
        resolver: lambda_.IFunction | None = None,
        audit_bucket: s3.IBucket | None = None,
        access: OperatorAccess = OPERATOR,
    ) -> None:
        """``resolver``: the alias whose function URL takes decisions (None: no decisions);
        ``audit_bucket``: the write-once copies ``verify-audit`` compares with."""
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
            ("FindCases", access.state_machine_actions, [machine_arn]),
            ("FollowExecutions", access.execution_actions, [executions]),
            ("ReadTheLedger", access.table_actions, [table]),
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
        sids = ("DecideThroughTheResolverUrl", "InvokeTheResolverOnlyThroughItsUrl")
        decide = (
            [
                iam.PolicyStatement(
                    sid=sid,
                    actions=[action],
                    resources=[resolver.function_arn],
                    conditions={k: dict(v) for k, v in conditions.items()},
                )
                for sid, (action, conditions) in zip(sids, access.resolver_actions, strict=True)
            ]
            if resolver is not None
            else []
        )
        copies = (
            [
                iam.PolicyStatement(
                    sid="ListTheAuditCopies",
                    actions=list(access.audit_bucket_actions),
                    resources=[audit_bucket.bucket_arn],
                ),
                iam.PolicyStatement(
                    sid="ReadTheAuditCopies",
                    actions=list(access.audit_copy_actions),
                    resources=[audit_bucket.arn_for_objects("audit/*")],
                ),
            ]
            if audit_bucket is not None and access.audit_copy_actions
            else []
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
                f"stepsaga operators of {state_machine_name}: status, history, the ledger; "
                "decisions through the resolver (the signer is recorded as the decider)"
            ),
            statements=[
                iam.PolicyStatement(sid=sid, actions=list(actions), resources=resources)
                for sid, actions, resources in statements
                if actions
            ]
            + ([budget] if access.budget_actions else [])
            + pointers
            + decide
            + copies,
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
                        {"regex": "/^Resource::<.*AuditBucket.*\\.Arn>/audit/\\*$/g"},
                    ],
                }
            ],
        )


class OperatorRole(Construct):
    """``role``: assumable by ``trusted`` (an account id or a principal ARN) only with a
    session name equal to ``session_name`` (default ``${aws:username}``: an IAM user assumes
    it only under their own name), the operator policy attached. The resolver records the
    session name as the person (``CallerIdentity.person``), so two people are two sessions
    only when the trust policy binds the name: without it, one person could assume the role
    twice under two names and satisfy dual control alone."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        policy: iam.IManagedPolicy,
        trusted: str,
        session_name: str,
    ) -> None:
        super().__init__(scope, construct_id)
        principal: iam.PrincipalBase = (
            iam.ArnPrincipal(trusted)
            if trusted.startswith("arn:")
            else iam.AccountPrincipal(trusted)
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=principal.with_conditions(
                {"StringEquals": {"sts:RoleSessionName": session_name}}
            ),
            managed_policies=[policy],
            description="stepsaga operators: session names bound to the person",
        )
