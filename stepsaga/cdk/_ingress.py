"""The ingress: an SQS queue of approved cases, its dead-letter queue, and the starter.

Producers send each approved case to the queue (``IngressQueueUrl``), directly or through
an EventBridge rule that targets it; the starter (``stepsaga._aws.ingress.handler``) starts one
execution per case. The queue redrives a message the starter could not handle after
``MAX_RECEIVES`` deliveries; the starter itself dead-letters invalid and conflicting cases at
once. Before each start it records the case's pointer in the ledger table: its only access
to the table, limited to ``CASE#`` items (``access.POINTER_CONDITIONS``). The queue drives
the starter's ``live`` alias with at most ``max_concurrency`` concurrent invocations; a
throttled start extends its message's visibility (``stepsaga._aws.queue_backoff``). Both queues are
encrypted (SQS-managed keys) and refuse non-TLS requests. The
dead-letter queue keeps messages 14 days (SQS's maximum) and has an alarm (``SagaAlarms``).
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from cdk_nag import NagSuppressions
from constructs import Construct

from stepsaga._aws import ingress
from stepsaga._project import deployment
from stepsaga.cdk._access import INGRESS_POINTER_ACTIONS, FunctionAccess
from stepsaga.cdk._function import (
    SagaFunction,
    SharedResources,
    executions_arn,
    state_machine_arn,
)
from stepsaga.cdk._queues import FeedQueues
from stepsaga.cdk._saga_deployment import SagaDeployment

__all__ = ["INGRESS_HANDLER", "MAX_RECEIVES", "SagaIngress"]

INGRESS_HANDLER: Final = "stepsaga.lambdas.ingress"
#: Deliveries before SQS moves a message the starter kept failing on to the DLQ.
MAX_RECEIVES: Final = 5
_STARTER_TIMEOUT: Final = Duration.seconds(30)


class SagaIngress(Construct):
    """``queue``, ``dead_letters`` and ``starter`` (the function)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        saga: SagaDeployment,
        state_machine_name: str,
        shared: SharedResources,
        start_arn: str | None = None,
        max_concurrency: int = 5,
    ) -> None:
        """``start_arn``: where cases start (the state machine's ``live`` alias), else the
        state machine itself; ``max_concurrency``: the event source's ``MaximumConcurrency``."""
        super().__init__(scope, construct_id)
        queues = FeedQueues(
            self, "Cases", function_timeout=_STARTER_TIMEOUT, max_receives=MAX_RECEIVES
        )
        self.dead_letters, self.queue = queues.dead_letters, queues.queue
        machine_arn = state_machine_arn(self, state_machine_name)
        function = SagaFunction(
            self,
            "Starter",
            handler=INGRESS_HANDLER,
            access=FunctionAccess(),  # of the ledger, only case pointers (below)
            shared=shared,
            description=f"{saga.name}: starts one execution per approved case from the queue",
            extra_environment={
                deployment.ENV_SAGA: saga.saga_ref,
                deployment.ENV_STATE_MACHINE_ARN: machine_arn,
                ingress.ENV_START_ARN: start_arn or machine_arn,
                ingress.ENV_DEAD_LETTER_QUEUE_URL: self.dead_letters.queue_url,
                ingress.ENV_QUEUE_URL: self.queue.queue_url,
            },
        )
        self.starter: lambda_.Function = function.function
        self.alias: lambda_.Alias = function.alias
        function.role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="StartCases",
                actions=["states:StartExecution"],
                resources=sorted({machine_arn, start_arn or machine_arn}, key=str),
            )
        )
        function.role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="CompareDuplicates",
                actions=["states:DescribeExecution"],
                resources=[executions_arn(self, state_machine_name)],
            )
        )
        function.role.add_to_principal_policy(
            shared.ledger.pointer_statement("RecordCasePointers", INGRESS_POINTER_ACTIONS)
        )
        self.dead_letters.grant_send_messages(self.starter)
        # The released version runs (the alias), never $LATEST.
        self.alias.add_event_source(
            sources.SqsEventSource(
                self.queue,
                batch_size=10,
                report_batch_item_failures=True,
                max_concurrency=max_concurrency,
            )
        )
        NagSuppressions.add_resource_suppressions(
            function.role,
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": (
                        "states:DescribeExecution on the executions of this saga's one state "
                        "machine (execution names are the cases'), to tell a duplicate case "
                        "from a conflicting one."
                    ),
                    "appliesTo": [
                        {"regex": "/^Resource::arn:<AWS::Partition>:states:.*:execution:.*:\\*$/g"}
                    ],
                }
            ],
            apply_to_children=True,
        )
