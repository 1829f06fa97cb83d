"""The SNS topic that announces reconciliation items and receives every alarm."""

from __future__ import annotations

from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct


class ReconciliationTopic(Construct):
    """Encrypted with the stack key, TLS required."""

    def __init__(self, scope: Construct, construct_id: str, *, key: kms.IKey) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name="stepsaga reconciliation items and alarms",
            master_key=key,
            enforce_ssl=True,  # topic policy denies publish/subscribe without TLS
        )
