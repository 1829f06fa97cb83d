"""The SQS queue that feeds a framework function (ingress, auto redrive), with its DLQ.

One shape for both: SQS-managed encryption, TLS only, a dead-letter queue after
``max_receives`` deliveries, and the visibility timeout AWS advises for a Lambda event
source (at least six times the function's timeout).
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_sqs as sqs
from constructs import Construct

__all__ = ["FeedQueues"]


class FeedQueues:
    """``queue`` (named ``name``) and its ``dead_letters``, created in ``scope``."""

    def __init__(
        self,
        scope: Construct,
        name: str,
        *,
        function_timeout: Duration,
        max_receives: int,
        retention: Duration | None = None,
    ) -> None:
        self.dead_letters = sqs.Queue(
            scope,
            "DeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        self.queue = sqs.Queue(
            scope,
            name,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(function_timeout.to_seconds() * 6),
            retention_period=retention,
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letters, max_receive_count=max_receives
            ),
        )
