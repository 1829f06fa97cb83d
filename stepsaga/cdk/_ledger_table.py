"""The DynamoDB ledger table, in exactly the layout of ``stepsaga.ledger._table``.

Encryption at rest uses the AWS-managed key (``alias/aws/dynamodb``) rather than the stack's
customer key: access to the ledger is already scoped per function by IAM, nothing reads it
from another account, and a customer key would add KMS permissions to every function without
adding a boundary. The AWS-managed key still logs its use in CloudTrail and rotates yearly.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from stepsaga.cdk._access import POINTER_ACTIONS, POINTER_CONDITIONS
from stepsaga.ledger import _table as layout


class LedgerTable(Construct):
    """The ledger table: on demand, TTL, point-in-time recovery, the lookup indexes."""

    def __init__(
        self, scope: Construct, construct_id: str, *, protected: bool, indexes: int | None = None
    ) -> None:
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(
                name=layout.PARTITION_KEY, type=dynamodb.AttributeType.STRING
            ),
            sort_key=dynamodb.Attribute(name=layout.SORT_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute=layout.TTL_ATTRIBUTE,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            # New images feed the write-once audit copy (``stepsaga.cdk._audit``).
            stream=dynamodb.StreamViewType.NEW_IMAGE,
            deletion_protection=protected,
            # A protected (production) ledger outlives its stack; a dev one goes with it.
            removal_policy=RemovalPolicy.RETAIN if protected else RemovalPolicy.DESTROY,
        )
        # One GSI per entry of the layout's table (``lookups.py`` says which listing each
        # serves). CloudFormation adds or deletes one GSI per stack update: a stack from
        # before the lookups adds them over several deploys (docs/reference/lookups.md).
        for name, (partition, sort) in list(layout.GSIS.items())[:indexes]:
            self.table.add_global_secondary_index(
                index_name=name,
                partition_key=dynamodb.Attribute(
                    name=partition, type=dynamodb.AttributeType.STRING
                ),
                sort_key=dynamodb.Attribute(name=sort, type=dynamodb.AttributeType.STRING),
                projection_type=dynamodb.ProjectionType.ALL,
            )

    @property
    def index_arn(self) -> str:
        """The open-items index (the overdue check scans it)."""
        return self.index_arn_of(layout.OPEN_ITEMS_INDEX)

    def index_arn_of(self, index: str) -> str:
        if index not in layout.GSIS:
            raise ValueError(f"{index!r}: not an index of the ledger table")
        return f"{self.table.table_arn}/index/{index}"

    def pointer_statement(
        self, sid: str, actions: Sequence[str] = POINTER_ACTIONS
    ) -> iam.PolicyStatement:
        """``actions`` on case pointer items only (``access.POINTER_CONDITIONS``): a start
        path records pointers without write access to the ledger's other items."""
        return iam.PolicyStatement(
            sid=sid,
            actions=list(actions),
            resources=[self.table.table_arn],
            conditions={k: dict(v) for k, v in POINTER_CONDITIONS.items()},
        )
