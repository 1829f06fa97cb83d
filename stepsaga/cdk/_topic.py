"""The SNS topic that announces reconciliation items and receives every alarm."""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct


class ReconciliationTopic(Construct):
    """Encrypted with the stack key, TLS required, and open to this deployment's alarms.

    ``enforce_ssl`` creates the topic policy, which *replaces* SNS's default policy: without
    an explicit statement CloudWatch could not publish and every alarm would fire silently.
    The statement admits ``cloudwatch.amazonaws.com`` only for alarms of this account whose
    names start with ``alarm_name_prefix`` (the confused-deputy conditions AWS recommends).
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, key: kms.IKey, alarm_name_prefix: str
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name="stepsaga reconciliation items and alarms",
            master_key=key,
            enforce_ssl=True,  # topic policy denies publish/subscribe without TLS
        )
        self.alarm_arn_pattern = (
            f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:"
            f"{alarm_name_prefix}*"
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsOfThisDeploymentPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {"aws:SourceArn": self.alarm_arn_pattern},
                },
            )
        )
