"""The stepsaga stack: ledger table, saga functions, state machine, topic, alarms, outputs.

Physical names: the state machine is ``<stage>-<saga name>`` (e.g. ``dev-replacement-order``)
so stages can share an account; the CLI does not rely on names but on the stack outputs
(keys in ``stepsaga/deployment.py``). Table, topic and functions get generated names.
"""

from __future__ import annotations

from dataclasses import replace

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from constructs import Construct

from infra.bundling import lambda_code
from infra.config import StageConfig
from infra.constructs.alarms import SagaAlarms
from infra.constructs.encryption import StackKey
from infra.constructs.ledger_table import LedgerTable
from infra.constructs.saga_function import (
    FunctionEnvironment,
    SagaFunction,
    SharedResources,
    state_machine_arn,
)
from infra.constructs.state_machine import SagaStateMachine
from infra.constructs.topic import ReconciliationTopic
from infra.permissions import OVERDUE_CHECK
from infra.runtime import overdue_reconciliation
from infra.saga_deployment import SagaDeployment, lambda_handler
from stepsaga import deployment

#: Top-level packages the code asset contains (see ``infra/bundling.py``).
_BUNDLED_PACKAGES = frozenset({"stepsaga", "tasks", "compensations", "workflows", "services"})
OVERDUE_CHECK_RATE = Duration.minutes(15)


class StepSagaStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, saga: SagaDeployment, config: StageConfig
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            description=f"stepsaga {saga.name} saga, stage {config.stage}",
        )
        removal = RemovalPolicy.RETAIN if config.deletion_protection else RemovalPolicy.DESTROY
        key = StackKey(self, "Encryption", removal_policy=removal).key
        ledger = LedgerTable(self, "Ledger", protected=config.deletion_protection)
        topic = ReconciliationTopic(self, "Reconciliation", key=key).topic
        machine_name = deployment.state_machine_name(saga.name, config.stage)

        shared = SharedResources(
            code=lambda_code(config.bundling),
            ledger=ledger,
            topic=topic,
            key=key,
            state_machine_arn=state_machine_arn(self, machine_name),
            environment=FunctionEnvironment(
                stage=config.stage, table_name=ledger.table.table_name, topic_arn=topic.topic_arn
            ),
            log_retention=config.log_retention,
            log_removal_policy=removal,
            reserved_concurrency=config.reserved_concurrency,
        )
        functions = {}
        for name, path in saga.functions.items():
            handler = lambda_handler(path)
            if handler.split(".", 1)[0] not in _BUNDLED_PACKAGES:
                raise ValueError(f"{name}: handler {path!r} is outside the bundled packages")
            entry = {deployment.ENV_SAGA: saga.saga_ref, deployment.ENV_FUNCTION: name}
            if saga.dependencies_ref:
                entry[deployment.ENV_DEPENDENCIES] = saga.dependencies_ref
            functions[name] = SagaFunction(
                self,
                name,
                handler=deployment.LAMBDA_HANDLER,
                access=saga.access[name],
                shared=shared,
                description=f"{saga.name} {name}: {path}",
                # Only the saga's handlers call the downstream services.
                extra_environment={**entry, **config.services.environment()},
            ).function

        machine = SagaStateMachine(
            self,
            "Saga",
            name=machine_name,
            saga=saga,
            functions=functions,
            key=key,
            log_retention=config.log_retention,
            log_removal_policy=removal,
        ).state_machine

        overdue_check = SagaFunction(
            self,
            "OverdueReconciliationCheck",
            handler=f"{overdue_reconciliation.__name__}.handler",
            access=OVERDUE_CHECK,
            shared=replace(shared, reserved_concurrency=None),
            description="Counts OPEN reconciliation items older than the threshold",
            extra_environment={
                overdue_reconciliation.ENV_OVERDUE_AFTER_SECONDS: str(
                    config.overdue_reconciliation_hours * 3600
                )
            },
        ).function
        events.Rule(
            self,
            "OverdueReconciliationSchedule",
            description="Runs the overdue reconciliation check",
            schedule=events.Schedule.rate(OVERDUE_CHECK_RATE),
            targets=[targets.LambdaFunction(overdue_check, retry_attempts=0)],
        )

        SagaAlarms(
            self,
            "Alarms",
            stage=config.stage,
            state_machine=machine,
            topic=topic,
            overdue_check_period=OVERDUE_CHECK_RATE,
        )

        CfnOutput(
            self,
            deployment.OUTPUT_STATE_MACHINE_ARN,
            value=machine.state_machine_arn,
            description="ARN of the saga's state machine (StartExecution, RedriveExecution)",
        )
        CfnOutput(
            self,
            deployment.OUTPUT_LEDGER_TABLE_NAME,
            value=ledger.table.table_name,
            description="DynamoDB ledger table (records, reconciliation items, budgets)",
        )
        CfnOutput(
            self,
            deployment.OUTPUT_RECONCILIATION_TOPIC_ARN,
            value=topic.topic_arn,
            description="SNS topic for reconciliation items and alarms",
        )
