"""One CloudWatch dashboard per saga deployment: what an operator looks at first.

Rows, each a graph of metrics the stack already has (the alarms' own, ``SagaAlarms.metrics``,
so a graph and its alarm never disagree): cases by outcome, reconciliation items (opened,
and the overdue check's gauge), technical failures, throttles, queue ages and dead letters,
automatic redrives; then the state of every alarm. Named ``stepsaga-<stage>-<saga>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stepsaga._aws import metric_names

__all__ = ["ROWS", "SagaDashboard"]

_PERIOD: Final = Duration.minutes(5)

#: Row title → the alarm metrics (``SagaAlarms.metrics`` keys) it graphs besides its own.
ROWS: Final[Mapping[str, tuple[str, ...]]] = {
    "Cases by outcome": (),
    "Reconciliation items": ("ReconciliationOpened", "ReconciliationOverdue", "OutcomeUnknown"),
    "Technical failures": ("TechnicalFailures", "LambdaErrors", "CompensationFailed"),
    "Throttles": ("ExecutionThrottles", "ApiThrottles", "LambdaThrottles", "LedgerThrottles"),
    "Queue ages and dead letters": (
        "IngressQueueAge",
        "AutoRedriveQueueAge",
        "IngressDeadLetters",
        "AutoRedriveDeadLetters",
    ),
    "Automatic redrives": ("AutoRedriveRefused",),
}

#: The redriver's verdict counts (EMF), graphed in "Automatic redrives".
_REDRIVE_COUNTS: Final = (
    metric_names.AUTO_REDRIVEN,
    metric_names.AUTO_REDRIVE_WAITING,
    metric_names.AUTO_REDRIVE_GONE,
    metric_names.AUTO_REDRIVE_BACKED_OFF,
)


class SagaDashboard(Construct):
    """``dashboard``: the rows of :data:`ROWS`, then an alarm status widget."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        service: str,
        state_machine: sfn.IStateMachine,
        business_outcomes: cloudwatch.IMetric,
        metrics: Mapping[str, cloudwatch.IMetric],
        alarms: Sequence[cloudwatch.IAlarm],
        auto_redrive: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=name, default_interval=Duration.hours(3)
        )
        outcomes: list[cloudwatch.IMetric] = [
            state_machine.metric_started(period=_PERIOD, statistic="Sum", label="started"),
            state_machine.metric_succeeded(period=_PERIOD, statistic="Sum", label="succeeded"),
            state_machine.metric_failed(period=_PERIOD, statistic="Sum", label="failed (all)"),
            state_machine.metric_timed_out(period=_PERIOD, statistic="Sum", label="timed out"),
            state_machine.metric_aborted(period=_PERIOD, statistic="Sum", label="stopped"),
            business_outcomes,
        ]
        redrives = [
            cloudwatch.Metric(
                namespace=metric_names.NAMESPACE,
                metric_name=counted,
                dimensions_map={"service": service},
                statistic="Sum",
                period=_PERIOD,
                label=counted,
            )
            for counted in _REDRIVE_COUNTS
        ]
        for title, names in ROWS.items():
            shown = [metrics[n] for n in names if n in metrics]
            if title == "Cases by outcome":
                shown = outcomes
            elif title == "Automatic redrives":
                if not auto_redrive:
                    continue
                shown = [*redrives, *shown]
            if not shown:
                continue
            self.dashboard.add_widgets(
                cloudwatch.GraphWidget(title=title, left=shown, width=24, height=6)
            )
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=list(alarms), width=24)
        )
