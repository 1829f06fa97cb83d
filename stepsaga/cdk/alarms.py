"""CloudWatch alarms of the saga; every alarm notifies the reconciliation topic.

Alarm when: an execution failed (``AWS/States ExecutionsFailed``); a handler reported an
unknown outcome, a failed compensation or a newly opened reconciliation item (EMF metrics,
names in ``stepsaga/metric_names.py``); or the scheduled check counts OPEN items older than
the threshold (or stops reporting).
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stepsaga import metric_names

_PERIOD = Duration.minutes(5)


class SagaAlarms(Construct):
    """The five alarms of one saga deployment (texts name the saga and the stage)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        saga: str,
        stage: str,
        state_machine: sfn.IStateMachine,
        topic: sns.ITopic,
        overdue_check_period: Duration,
    ) -> None:
        super().__init__(scope, construct_id)
        self._action = actions.SnsAction(topic)
        self._stage = stage
        self._saga = saga
        self.alarms: dict[str, cloudwatch.Alarm] = {}

        self._at_least_one(
            "ExecutionsFailed",
            state_machine.metric_failed(period=_PERIOD, statistic="Sum"),
            f"A {saga} execution failed in stage {stage} (transient errors out of retries "
            "end here and can be redriven).",
        )
        self._at_least_one(
            "OutcomeUnknown",
            self._emf(metric_names.OUTCOME_UNKNOWN),
            f"{saga}: an effect's outcome is unknown; the record awaits reconciliation.",
        )
        self._at_least_one(
            "CompensationFailed",
            self._emf(metric_names.COMPENSATION_FAILED),
            f"{saga}: a compensation exhausted its retries; the saga ended in CompensationFailed.",
        )
        self._at_least_one(
            "ReconciliationOpened",
            self._emf(metric_names.RECONCILIATION_OPENED),
            f"{saga}: a reconciliation item was opened for a person to decide.",
        )
        # The check reports every run; a missing datapoint means it did not run or failed,
        # and that must not read as "nothing overdue".
        self._at_least_one(
            "ReconciliationOverdue",
            self._emf(
                metric_names.RECONCILIATION_OVERDUE,
                statistic="Maximum",
                period=Duration.minutes(overdue_check_period.to_minutes() * 2),
            ),
            f"{saga}: OPEN reconciliation items are older than the threshold, or the check "
            "stopped.",
            missing=cloudwatch.TreatMissingData.BREACHING,
        )

    def _emf(
        self, name: str, *, statistic: str = "Sum", period: Duration = _PERIOD
    ) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace=metric_names.NAMESPACE,
            metric_name=name,
            dimensions_map={"service": metric_names.service_name(self._stage, self._saga)},
            statistic=statistic,
            period=period,
        )

    def _at_least_one(
        self,
        construct_id: str,
        metric: cloudwatch.IMetric,
        description: str,
        missing: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
    ) -> None:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            alarm_description=description,
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=missing,
        )
        alarm.add_alarm_action(self._action)
        self.alarms[construct_id] = alarm
