"""The automatic redrive: an EventBridge rule, its queue and dead-letter queue, the redriver.

The rule forwards the execution ARN (``stepsaga._aws.auto_redrive.MESSAGE_TEMPLATE``, an input
transformer: never the case's input) of this state machine's ``Step Functions Execution
Status Change`` events with status TIMED_OUT, or FAILED with an error that is not ``Saga.*``
(``stepsaga._aws.auto_redrive.event_pattern``), to the queue; the queue drives the redriver's
``live`` alias with at most ``AutoRedrive.max_concurrency`` concurrent invocations; the
redriver (``stepsaga._aws.auto_redrive.handler``) decides and redrives with backoff (the message
waits on the queue, ``DelaySeconds``). Both queues are encrypted (SQS-managed keys) and
refuse non-TLS requests; a message the redriver kept failing on (malformed, or AWS failing)
moves to the dead-letter queue after ``MAX_RECEIVES`` deliveries, as does an event
EventBridge could not deliver; the DLQ has an alarm.

The redriver may ``DescribeExecution`` and ``RedriveExecution`` the executions of this one
state machine (``execution:<name>:*``; AWS authorizes calls on executions of a version or
alias against the unqualified ARNs, so the ``live`` alias needs no form of its own), read
ledger records and case pointers (``GetItem``: the attempt budget, a later revision) and
send to its own queue (the backoff).
Nothing else.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from cdk_nag import NagSuppressions
from constructs import Construct

from stepsaga._aws import auto_redrive
from stepsaga._aws.auto_redrive import AutoRedrive
from stepsaga._project import deployment
from stepsaga.cdk._access import GET_ITEM, FunctionAccess
from stepsaga.cdk._function import (
    SagaFunction,
    SharedResources,
    executions_arn,
    state_machine_arn,
)
from stepsaga.cdk._queues import FeedQueues
from stepsaga.cdk._saga_deployment import SagaDeployment

__all__ = ["AUTO_REDRIVE_HANDLER", "MAX_RECEIVES", "REDRIVER_ACCESS", "SagaAutoRedrive"]

AUTO_REDRIVE_HANDLER: Final = "stepsaga.lambdas.auto_redrive"
#: Deliveries before SQS moves a message the redriver kept failing on to the DLQ.
MAX_RECEIVES: Final = 5
#: The ledger reads of the attempt-budget check.
REDRIVER_ACCESS: Final = FunctionAccess(table_actions=(GET_ITEM,))
_TIMEOUT: Final = Duration.seconds(30)


class SagaAutoRedrive(Construct):
    """``rule``, ``queue``, ``dead_letters`` and ``redriver`` (the function)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        saga: SagaDeployment,
        state_machine_name: str,
        shared: SharedResources,
        settings: AutoRedrive,
    ) -> None:
        super().__init__(scope, construct_id)
        queues = FeedQueues(
            self,
            "FailedExecutions",
            function_timeout=_TIMEOUT,
            max_receives=MAX_RECEIVES,
            # Events of the last 14 days: past that, Step Functions refuses the redrive.
            retention=Duration.days(14),
        )
        self.dead_letters, self.queue = queues.dead_letters, queues.queue
        machine_arn = state_machine_arn(self, state_machine_name)
        pattern = auto_redrive.event_pattern(machine_arn)
        self.rule = events.Rule(
            self,
            "FailedExecutionsRule",
            description=f"{saga.name}: technical failures (not Saga.*) to the redriver",
            event_pattern=events.EventPattern(
                source=pattern["source"],
                detail_type=pattern["detail-type"],
                detail=pattern["detail"],
            ),
            targets=[
                targets.SqsQueue(
                    self.queue,
                    dead_letter_queue=self.dead_letters,
                    message=events.RuleTargetInput.from_object(
                        {
                            name: events.EventField.from_path(path)
                            for name, path in auto_redrive.MESSAGE_TEMPLATE.items()
                        }
                    ),
                )
            ],
        )
        function = SagaFunction(
            self,
            "Redriver",
            handler=AUTO_REDRIVE_HANDLER,
            access=REDRIVER_ACCESS,
            shared=shared,
            description=f"{saga.name}: redrives technical failures with backoff, bounded",
            extra_environment={
                deployment.ENV_SAGA: saga.saga_ref,
                deployment.ENV_STATE_MACHINE_ARN: machine_arn,
                auto_redrive.ENV_QUEUE_URL: self.queue.queue_url,
                **settings.environment(),
            },
        )
        self.redriver: lambda_.Function = function.function
        self.alias: lambda_.Alias = function.alias
        function.role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="RedriveExecutions",
                actions=["states:DescribeExecution", "states:RedriveExecution"],
                resources=[executions_arn(self, state_machine_name)],
            )
        )
        self.queue.grant_send_messages(self.redriver)  # the backoff: the message waits there
        # The released version runs (the alias), never $LATEST.
        self.alias.add_event_source(
            sources.SqsEventSource(
                self.queue,
                batch_size=10,
                report_batch_item_failures=True,
                max_concurrency=settings.max_concurrency,
            )
        )
        NagSuppressions.add_resource_suppressions(
            function.role,
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": (
                        "states:DescribeExecution and states:RedriveExecution on the executions "
                        "of this saga's one state machine: which execution failed is known only "
                        "when its event arrives (execution names are the cases')."
                    ),
                    "appliesTo": [
                        {"regex": "/^Resource::arn:<AWS::Partition>:states:.*:execution:.*:\\*$/g"}
                    ],
                }
            ],
            apply_to_children=True,
        )
