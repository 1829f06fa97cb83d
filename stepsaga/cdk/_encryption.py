"""The stack's customer-managed KMS key, for the SNS topic and the log groups.

Why a customer-managed key here (and not for the table): CloudWatch alarms cannot publish to
a topic encrypted with the AWS-managed ``alias/aws/sns`` key (its key policy cannot grant
``cloudwatch.amazonaws.com``), and CloudWatch Logs encrypts log groups only with a customer
key whose policy admits the regional logs service. One key serves both: one key's cost, one
policy to review, yearly rotation on.
"""

from __future__ import annotations

from aws_cdk import Aws, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

#: Every explicit action the CloudWatch Logs documentation lists (as ``Encrypt*``,
#: ``Decrypt*``, ``ReEncrypt*``, ``GenerateDataKey*``, ``Describe*``), written out.
_LOGS_KEY_ACTIONS = [
    "kms:Encrypt",
    "kms:Decrypt",
    "kms:ReEncryptFrom",
    "kms:ReEncryptTo",
    "kms:GenerateDataKey",
    "kms:GenerateDataKeyWithoutPlaintext",
    "kms:DescribeKey",
]


class StackKey(Construct):
    """The customer-managed key of the topic and the log groups (rotation on)."""

    def __init__(self, scope: Construct, construct_id: str, *, removal_policy: RemovalPolicy):
        super().__init__(scope, construct_id)
        # The default key policy's only statement lets the account's IAM policies govern the
        # key (principal: the account root, all kms actions). It is the AWS-recommended
        # default; without it nobody could administer the key through IAM.
        self.key = kms.Key(
            self,
            "Key",
            description="stepsaga: SNS reconciliation topic and log groups",
            enable_key_rotation=True,
            removal_policy=removal_policy,
        )
        # In a key policy, Resource "*" means "this key" (AWS requires that form).
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchLogsEncryptsThisStacksLogGroups",
                principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
                actions=_LOGS_KEY_ACTIONS,
                resources=["*"],
                conditions={
                    "ArnLike": {
                        "kms:EncryptionContext:aws:logs:arn": (
                            f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:*"
                        )
                    }
                },
            )
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublishToTheEncryptedTopic",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],
                # As in the CloudWatch documentation's example: no source condition (the
                # alarm service does not send one through SNS); the topic policy already
                # limits who may publish.
            )
        )
