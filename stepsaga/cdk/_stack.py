"""One saga's deployment: ledger table, functions, state machine, topic, alarms, check.

``SagaResources`` builds it inside any stack; ``SagaStack`` is a stack holding exactly one,
with the outputs the CLI reads (keys in ``stepsaga._project.deployment``).

Physical names derive from stage + saga: the stack ``stepsaga-<stage>-<saga>`` and the state
machine ``<stage>-<saga>``, so stages and sagas share an account. Table, topic and functions
get generated names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Final

from aws_cdk import Aspects, CfnOutput, Duration, RemovalPolicy, Stack, Tags
from aws_cdk import aws_backup as backup
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from cdk_nag import AwsSolutionsChecks, NagSuppressions
from constructs import Construct

from stepsaga._aws import metric_names
from stepsaga._project import deployment
from stepsaga._project.project import Project
from stepsaga._reconciliation import overdue
from stepsaga.cdk._access import OVERDUE_CHECK, FunctionAccess, access_for
from stepsaga.cdk._alarms import SagaAlarms, alarm_name_prefix
from stepsaga.cdk._audit import AuditTrail
from stepsaga.cdk._auto_redrive import SagaAutoRedrive
from stepsaga.cdk._bundling import AssetLayout, lambda_code
from stepsaga.cdk._dashboard import SagaDashboard
from stepsaga.cdk._encryption import StackKey
from stepsaga.cdk._function import (
    FunctionEnvironment,
    SagaFunction,
    SharedResources,
    state_machine_arn,
)
from stepsaga.cdk._ingress import SagaIngress
from stepsaga.cdk._ledger_table import LedgerTable
from stepsaga.cdk._operators import OperatorPolicy, OperatorRole
from stepsaga.cdk._releases import OWN_ROLLBACK_ALARMS, ROLLBACK_ALARMS, CanaryReleases
from stepsaga.cdk._resolver import SagaResolver
from stepsaga.cdk._saga_deployment import SagaDeployment
from stepsaga.cdk._settings import Backup, FunctionSettings, StageSettings
from stepsaga.cdk._state_machine import SagaStateMachine
from stepsaga.cdk._topic import ReconciliationTopic
from stepsaga.errors import DeploymentError

__all__ = [
    "BACKUP_BACKUP_ACTIONS",
    "BACKUP_TABLE_ACTIONS",
    "OVERDUE_CHECK_HANDLER",
    "OVERDUE_CHECK_RATE",
    "SagaResources",
    "SagaStack",
]

OVERDUE_CHECK_RATE: Final = Duration.minutes(15)
OVERDUE_CHECK_HANDLER: Final = "stepsaga.lambdas.overdue_check"


class SagaResources(Construct):
    """Everything one saga needs, inside the caller's stack.

    ``saga`` is a ``SagaDeployment`` (``SagaDeployment.of(project, name)``); ``layout`` says
    what the functions' code asset holds (``AssetLayout.for_saga``), and is checked first:
    a handler, saga or dependencies module missing from the asset fails here, in one line.
    ``functions`` maps logical function names (``Saga.functions``) to the app's settings,
    merged over ``defaults``; a name the saga does not have is refused.

    Attributes: ``key``, ``ledger`` (``.table``), ``topic``, ``functions`` (logical name →
    ``lambda_.Function``), ``access`` (logical name → ``FunctionAccess``),
    ``aliases`` (logical name → the ``live`` alias the machine invokes), ``state_machine``,
    ``state_machine_alias_arn``, ``overdue_check``, ``resolver`` (``SagaResolver``),
    ``audit`` (``AuditTrail``: the stream copy to an Object Lock bucket),
    ``operator_role`` (None unless ``settings.operator_role``), ``ingress`` (None when
    ``settings.ingress`` is off), ``auto_redrive`` (None when ``settings.auto_redrive``
    is), ``operators`` (the operators' managed policy), ``alarms``, ``dashboard``,
    ``releases`` (None when ``settings.canary`` is), ``backup`` (the plan; None unless
    ``settings.backup``).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        saga: SagaDeployment,
        layout: AssetLayout,
        settings: StageSettings,
        functions: Mapping[str, FunctionSettings] | None = None,
        defaults: FunctionSettings | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        functions = dict(functions or {})
        unknown = sorted(set(functions) - set(saga.functions))
        if unknown:
            raise DeploymentError(
                f"settings for {', '.join(unknown)}: saga {saga.name} has no such function "
                f"(its functions: {', '.join(saga.functions)})"
            )
        layout.check(saga.references)
        defaults = defaults or FunctionSettings()

        protected = settings.deletion_protection
        removal = RemovalPolicy.RETAIN if protected else RemovalPolicy.DESTROY
        retention = _RETENTION[settings.log_retention_days]
        self.key = StackKey(self, "Encryption", removal_policy=removal).key
        self.ledger = LedgerTable(
            self, "Ledger", protected=protected, indexes=settings.ledger_indexes
        )
        self.topic = ReconciliationTopic(
            self,
            "Reconciliation",
            key=self.key,
            alarm_name_prefix=alarm_name_prefix(settings.stage, saga.name),
        ).topic
        machine_name = deployment.state_machine_name(saga.name, settings.stage)

        shared = SharedResources(
            code=lambda_code(settings.bundling, layout, saga.references),
            ledger=self.ledger,
            topic=self.topic,
            key=self.key,
            state_machine_arn=state_machine_arn(self, machine_name),
            environment=FunctionEnvironment(
                stage=settings.stage,
                saga=saga.name,
                table_name=self.ledger.table.table_name,
                topic_arn=self.topic.topic_arn,
            ),
            log_retention=retention,
            log_removal_policy=removal,
            reserved_concurrency=settings.reserved_concurrency,
        )
        self.access: Mapping[str, FunctionAccess] = access_for(saga.functions)
        self.functions: dict[str, lambda_.Function] = {}
        self.aliases: dict[str, lambda_.Alias] = {}
        for name, ref in saga.functions.items():
            entry = {deployment.ENV_SAGA: saga.saga_ref, deployment.ENV_FUNCTION: name}
            if saga.dependencies_ref:
                entry[deployment.ENV_DEPENDENCIES] = saga.dependencies_ref
            made = SagaFunction(
                self,
                name,
                handler=deployment.LAMBDA_HANDLER,
                access=self.access[name],
                shared=shared,
                description=f"{saga.name} {name}: {ref}",
                extra_environment=entry,
                settings=functions.get(name, FunctionSettings()).over(defaults),
            )
            self.functions[name] = made.function
            self.aliases[name] = made.alias

        machine = SagaStateMachine(
            self,
            "Saga",
            name=machine_name,
            saga=saga.with_execution_timeout(settings.execution_timeout_seconds),
            functions=self.functions,
            aliases=self.aliases,
            key=self.key,
            log_retention=retention,
            log_removal_policy=removal,
        )
        self.state_machine: sfn.StateMachine = machine.state_machine
        self.state_machine_alias_arn: str = machine.alias_arn

        overdue_check = SagaFunction(
            self,
            "OverdueReconciliationCheck",
            handler=OVERDUE_CHECK_HANDLER,
            access=OVERDUE_CHECK,
            shared=replace(shared, reserved_concurrency=None),
            description=f"{saga.name}: counts OPEN reconciliation items older than the threshold",
            extra_environment={
                overdue.ENV_OVERDUE_AFTER_SECONDS: str(settings.overdue_reconciliation_hours * 3600)
            },
        )
        self.overdue_check = overdue_check.function
        events.Rule(
            self,
            "OverdueReconciliationSchedule",
            description=f"Runs the overdue reconciliation check of {saga.name}",
            schedule=events.Schedule.rate(OVERDUE_CHECK_RATE),
            # The released version (the alias), never $LATEST.
            targets=[targets.LambdaFunction(overdue_check.alias, retry_attempts=0)],
        )

        self.ingress: SagaIngress | None = None
        if settings.ingress:
            self.ingress = SagaIngress(
                self,
                "Ingress",
                saga=saga,
                state_machine_name=machine_name,
                start_arn=machine.alias_arn,
                shared=replace(shared, reserved_concurrency=None),
                max_concurrency=settings.ingress_max_concurrency,
            )

        self.auto_redrive: SagaAutoRedrive | None = None
        if settings.auto_redrive is not None:
            self.auto_redrive = SagaAutoRedrive(
                self,
                "AutoRedrive",
                saga=saga,
                state_machine_name=machine_name,
                shared=replace(shared, reserved_concurrency=None),
                settings=settings.auto_redrive,
            )

        self.audit = AuditTrail(
            self,
            "Audit",
            saga=saga.name,
            shared=replace(shared, reserved_concurrency=None),
            retention_days=settings.audit_retention_days,
        )
        self.resolver = SagaResolver(
            self,
            "Resolver",
            saga=saga,
            state_machine_name=machine_name,
            shared=replace(shared, reserved_concurrency=None),
            functions=self.functions,
        )
        self.operators = OperatorPolicy(
            self,
            "Operators",
            state_machine_name=machine_name,
            ledger=self.ledger,
            resolver=self.resolver.alias,
            audit_bucket=self.audit.bucket,
        ).policy
        self.operator_role: OperatorRole | None = None
        if settings.operator_role is not None:
            self.operator_role = OperatorRole(
                self,
                "OperatorRole",
                policy=self.operators,
                trusted=settings.operator_role.trusted,
                session_name=settings.operator_role.session_name,
            )

        self.alarms = SagaAlarms(
            self,
            "Alarms",
            saga=saga.name,
            stage=settings.stage,
            definition=saga.definition,
            state_machine=self.state_machine,
            state_machine_logs=machine.log_group,
            functions=[
                *self.functions.values(),
                self.overdue_check,
                *([self.ingress.starter] if self.ingress else []),
                *([self.auto_redrive.redriver] if self.auto_redrive else []),
                self.resolver.function,
                # Not the audit copier: the errors alarm sums at most 10 functions' metrics
                # (CloudWatch's limit for one math expression).
            ],
            table=self.ledger.table,
            topic=self.topic,
            dead_letters=self.ingress.dead_letters if self.ingress else None,
            redrive_dead_letters=self.auto_redrive.dead_letters if self.auto_redrive else None,
            queue=self.ingress.queue if self.ingress else None,
            redrive_queue=self.auto_redrive.queue if self.auto_redrive else None,
            overdue_check_period=OVERDUE_CHECK_RATE,
            released=[
                *self.functions.values(),
                self.overdue_check,
                *([self.auto_redrive.redriver] if self.auto_redrive else []),
                self.resolver.function,
                self.audit.copier,
            ]
            if settings.canary is not None
            else [],
            released_starter=self.ingress.starter
            if settings.canary is not None and self.ingress is not None
            else None,
        )
        service = metric_names.service_name(settings.stage, saga.name)
        self.dashboard = SagaDashboard(
            self,
            "Dashboard",
            name=service,
            service=service,
            state_machine=self.state_machine,
            business_outcomes=self.alarms.business_outcomes.metric(
                statistic="Sum", label="business outcomes (Saga.*)"
            ),
            metrics=self.alarms.metrics,
            alarms=list(self.alarms.alarms.values()),
            auto_redrive=self.auto_redrive is not None,
        ).dashboard

        self.releases: CanaryReleases | None = None
        if settings.canary is not None:
            self.releases = CanaryReleases(
                self,
                "Releases",
                aliases={
                    **self.aliases,
                    "OverdueReconciliationCheck": overdue_check.alias,
                    **({"IngressStarter": self.ingress.alias} if self.ingress else {}),
                    **({"AutoRedriver": self.auto_redrive.alias} if self.auto_redrive else {}),
                    "Resolver": self.resolver.alias,
                    "AuditCopier": self.audit.alias,
                },
                canary=settings.canary,
                alarms=[self.alarms.alarms[name] for name in ROLLBACK_ALARMS],
                own_alarms={
                    function: [self.alarms.alarms[name] for name in names]
                    for function, names in OWN_ROLLBACK_ALARMS.items()
                    if all(name in self.alarms.alarms for name in names)
                },
            )

        self.backup: backup.BackupPlan | None = None
        if settings.backup is not None:
            self.backup = _backup_plan(self, settings.backup, self.ledger.table, removal)

        # Every resource of the deployment carries the settings' tags, and its saga and stage.
        _tag(self, settings, saga.name)


def _tag(scope: Construct, settings: StageSettings, saga: str) -> None:
    for key, value in {
        **settings.tags,
        "stepsaga:saga": saga,
        "stepsaga:stage": settings.stage,
    }.items():
        Tags.of(scope).add(key, value)


#: What AWS Backup's role calls to back up the ledger table (a DynamoDB on-demand backup,
#: or an AWS Backup job for an account with advanced DynamoDB backup), on the table; and on
#: the backups it made, to describe them and delete them when the rule's retention ends.
#: The subset of ``AWSBackupServiceRolePolicyForBackup`` a DynamoDB table needs, on one table.
BACKUP_TABLE_ACTIONS: Final = (
    "dynamodb:CreateBackup",
    "dynamodb:DescribeTable",
    "dynamodb:ListTagsOfResource",
    "dynamodb:StartAwsBackupJob",
)
BACKUP_BACKUP_ACTIONS: Final = ("dynamodb:DeleteBackup", "dynamodb:DescribeBackup")


def _backup_plan(
    scope: Construct, settings: Backup, table: dynamodb.ITable, removal: RemovalPolicy
) -> backup.BackupPlan:
    """A daily backup of the ledger table into a vault of its own, kept
    ``settings.retention_days`` (the table's point-in-time recovery stays on regardless).

    The plan's role is ours, with an inline policy naming the table (not AWS's managed
    ``AWSBackupServiceRolePolicyForBackup``, which reaches every table of the account)."""
    vault = backup.BackupVault(scope, "BackupVault", removal_policy=removal)
    plan = backup.BackupPlan(
        scope,
        "Backup",
        backup_vault=vault,
        backup_plan_rules=[
            backup.BackupPlanRule(
                rule_name="DailyLedger",
                schedule_expression=events.Schedule.cron(hour=str(settings.hour_utc), minute="0"),
                delete_after=Duration.days(settings.retention_days),
            )
        ],
    )
    backups = f"{table.table_arn}/backup/*"
    role = iam.Role(
        scope,
        "BackupRole",
        assumed_by=iam.ServicePrincipal("backup.amazonaws.com"),
        description="AWS Backup of the ledger table: this table and its backups only",
        inline_policies={
            "BackupLedger": iam.PolicyDocument(
                statements=[
                    iam.PolicyStatement(
                        sid="BackUpTheLedger",
                        actions=list(BACKUP_TABLE_ACTIONS),
                        resources=[table.table_arn],
                    ),
                    iam.PolicyStatement(
                        sid="ItsBackups",
                        actions=list(BACKUP_BACKUP_ACTIONS),
                        resources=[backups],
                    ),
                ]
            )
        },
    )
    plan.add_selection(
        "Ledger",
        resources=[backup.BackupResource.from_dynamo_db_table(table)],
        allow_restores=False,
        role=role,
        disable_default_backup_policy=True,
    )
    NagSuppressions.add_resource_suppressions(
        role,
        [
            {
                "id": "AwsSolutions-IAM5",
                "reason": (
                    "The backups of the ledger table only (<table ARN>/backup/*): their names "
                    "are made by DynamoDB when AWS Backup runs, so no ARN is known before."
                ),
                "appliesTo": [{"regex": "/^Resource::<.*Arn>/backup/\\*$/g"}],
            }
        ],
    )
    return plan


class SagaStack(Stack):
    """A stack deploying one declared saga of a project.

    Example (a team's ``infra/app.py``)::

        app = App()
        SagaStack(
            app,
            project=Project.load(ROOT),
            saga="subscription-upgrade",
            stage="dev",
            defaults=FunctionSettings(environment={"BILLING_URL": "https://billing.example"}),
            functions={"ChargeCard": FunctionSettings(secrets={"BILLING_TOKEN_ARN": token})},
        )
        app.synth()

    The stack is named ``stepsaga-<stage>-<saga>`` (``construct_id`` defaults to it), so two
    sagas of one stage coexist. ``include``/``exclude``/``requirements`` shape the code
    asset (``AssetLayout.for_saga``). ``nag`` (default on) applies cdk-nag's
    ``AwsSolutionsChecks`` to the stack; every suppression the construct adds says why.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str | None = None,
        *,
        project: Project,
        saga: str,
        stage: str | None = None,
        settings: StageSettings | None = None,
        functions: Mapping[str, FunctionSettings] | None = None,
        defaults: FunctionSettings | None = None,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        requirements: Iterable[str] = (),
        nag: bool = True,
        **stack_options: Any,
    ) -> None:
        if settings is None:
            settings = StageSettings.for_stage(stage or deployment.DEFAULT_STAGE)
        elif stage is not None and stage != settings.stage:
            raise DeploymentError(f"stage {stage!r} differs from settings.stage {settings.stage!r}")
        if project.root is None:
            raise DeploymentError(
                "the project must be loaded from its folder (Project.load(root)): the Lambda "
                "asset is copied from there"
            )
        deployed = SagaDeployment.of(project, saga)
        name = deployment.stack_name(settings.stage, deployed.name)
        stack_options.setdefault("stack_name", name)
        stack_options.setdefault(
            "description", f"stepsaga {deployed.name} saga, stage {settings.stage}"
        )
        super().__init__(scope, construct_id or name, **stack_options)
        self.saga = deployed
        self.settings = settings
        layout = AssetLayout.for_saga(
            project.root,
            deployed,
            include=include,
            exclude=exclude,
            requirements=requirements,
        )
        # "Default": the resources' logical ids are the construct's children's, unprefixed.
        self.resources = SagaResources(
            self,
            "Default",
            saga=deployed,
            layout=layout,
            settings=settings,
            functions=functions,
            defaults=defaults,
        )
        CfnOutput(
            self,
            deployment.OUTPUT_STATE_MACHINE_ARN,
            value=self.resources.state_machine.state_machine_arn,
            description="ARN of the saga's state machine (StartExecution, RedriveExecution)",
        )
        CfnOutput(
            self,
            deployment.OUTPUT_STATE_MACHINE_ALIAS_ARN,
            value=self.resources.state_machine_alias_arn,
            description="The state machine's live alias: start cases here to pin their version",
        )
        CfnOutput(
            self,
            deployment.OUTPUT_LEDGER_TABLE_NAME,
            value=self.resources.ledger.table.table_name,
            description="DynamoDB ledger table (records, reconciliation items, budgets)",
        )
        CfnOutput(
            self,
            deployment.OUTPUT_RECONCILIATION_TOPIC_ARN,
            value=self.resources.topic.topic_arn,
            description="SNS topic for reconciliation items and alarms",
        )
        CfnOutput(
            self,
            deployment.OUTPUT_RESOLVER_URL,
            value=self.resources.resolver.url.url,
            description="The resolver's function URL (IAM auth): operators' decisions go there",
        )
        CfnOutput(
            self,
            deployment.OUTPUT_AUDIT_BUCKET_NAME,
            value=self.resources.audit.bucket.bucket_name,
            description="Write-once copies of the audit records (S3 Object Lock, compliance)",
        )
        CfnOutput(
            self,
            deployment.OUTPUT_OPERATOR_POLICY_ARN,
            value=self.resources.operators.managed_policy_arn,
            description="Managed policy for operators (stepsaga --backend aws --stack ...)",
        )
        if self.resources.ingress is not None:
            CfnOutput(
                self,
                deployment.OUTPUT_INGRESS_QUEUE_URL,
                value=self.resources.ingress.queue.queue_url,
                description=(
                    "SQS queue of approved cases (docs/reference/operating-aws.md: the shape)"
                ),
            )
            CfnOutput(
                self,
                deployment.OUTPUT_INGRESS_DEAD_LETTER_QUEUE_URL,
                value=self.resources.ingress.dead_letters.queue_url,
                description="Cases the starter refused (invalid, conflicting) or kept failing on",
            )
        # The stack is the saga's: the app's own resources in it are tagged too (and the
        # stack itself, which CloudFormation propagates).
        _tag(self, settings, deployed.name)
        if nag:
            Aspects.of(self).add(AwsSolutionsChecks(verbose=True))


#: CloudWatch Logs' retention periods (``StageSettings`` admits only these days).
_RETENTION: Final[dict[int, logs.RetentionDays]] = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    731: logs.RetentionDays.TWO_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}
