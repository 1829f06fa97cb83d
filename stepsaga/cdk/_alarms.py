"""CloudWatch alarms of one saga deployment: technical failures page, business outcomes don't.

A compensated case ends in a ``Fail`` state (``Saga.Compensated``), so ``ExecutionsFailed``
counts business outcomes and faults alike. The alarms separate them:

* **technical** (notify the topic, with OK actions): executions that failed or timed out
  *without* entering a ``Saga.*`` ``Fail`` state (``ExecutionsFailed + ExecutionsTimedOut -
  BusinessOutcome``, the last from a metric filter on the state machine's log); Lambda
  errors that are not routed outcomes (``Errors - RoutedError``, the handlers' EMF count of
  the non-retryable errors the machine catches); Lambda throttles; DynamoDB throttles and
  system errors on the ledger; ledger transaction conflicts (the handlers' EMF count,
  per deployment: the tenant rides in metadata); Step Functions execution throttles and
  API throttles (``StartExecution``, ``DescribeExecution``, ``RedriveExecution``); the age
  of the oldest message on the ingress and auto-redrive queues; refused automatic
  redrives; failed compensations (money or stock left half undone: they page, besides the
  reconciler's item notice); and the scheduled overdue check (OPEN items older than the
  threshold, or the check stopped reporting).
* **business** (silent: no actions): unknown outcomes and opened reconciliation items. The
  reconciler already publishes one notice per item to the topic; an alarm on the same
  event would be a second notification.

Every rule is one row of ``RULES``. Alarm names are fixed (``alarm_name``), so the topic's
policy can admit exactly this deployment's alarms by ARN without a reference cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stepsaga._aws import metric_names
from stepsaga.errors import SAGA_COMPENSATED, SAGA_COMPENSATION_FAILED

__all__ = [
    "BUSINESS_FAIL_ERRORS",
    "BUSINESS_OUTCOME",
    "RULES",
    "AlarmRule",
    "SagaAlarms",
    "alarm_name",
    "alarm_name_prefix",
    "business_fail_states",
]

_PERIOD: Final = Duration.minutes(5)
#: Ages of the oldest queued message that alarm (the ingress starts within seconds; the
#: auto-redrive queue holds messages for their backoff, at most 15 minutes each).
INGRESS_QUEUE_AGE_SECONDS: Final = 15 * 60
AUTO_REDRIVE_QUEUE_AGE_SECONDS: Final = 60 * 60
#: The Step Functions APIs the framework's functions call under load (``AWS/States``
#: ``ThrottledEvents`` by ``APIName``).
THROTTLED_APIS: Final = ("StartExecution", "DescribeExecution", "RedriveExecution")
#: Error names of the ``Fail`` states that end a case as a business outcome.
BUSINESS_FAIL_ERRORS: Final = frozenset({SAGA_COMPENSATED, SAGA_COMPENSATION_FAILED})
#: Metric the log filter counts: entries into a business ``Fail`` state.
BUSINESS_OUTCOME: Final = "BusinessOutcome"
#: The ledger operations the functions make (their throttles and system errors alarm).
_LEDGER_OPERATIONS: Final = (
    dynamodb.Operation.GET_ITEM,
    dynamodb.Operation.PUT_ITEM,
    dynamodb.Operation.UPDATE_ITEM,
    dynamodb.Operation.QUERY,
    dynamodb.Operation.SCAN,
    dynamodb.Operation.TRANSACT_WRITE_ITEMS,
)


@dataclass(frozen=True)
class AlarmRule:
    """One alarm: fires when the metric reaches ``threshold`` within one 5-minute period.

    ``notify``: alarm and OK actions on the topic (technical), or none (business: the
    reconciler's item notice is the one notification). ``missing_breaches``: no datapoint
    counts as breaching (a check that stopped reporting).
    """

    threshold: int
    notify: bool
    description: str
    missing_breaches: bool = False


#: Rule name → rule. Thresholds above 1 leave room for what Step Functions' ``Retry``
#: absorbs (a blip of throttles or transient faults); a failed execution alarms on its own.
RULES: Final[Mapping[str, AlarmRule]] = {
    "TechnicalFailures": AlarmRule(
        1,
        True,
        "an execution failed or timed out for a technical reason (not a Saga.* outcome): "
        "fix the cause, then redrive it",
    ),
    "LambdaErrors": AlarmRule(
        5,
        True,
        "functions failed with faults (bugs, timeouts, crashes, exhausted transients), not "
        "with routed outcomes",
    ),
    # What rolls a canary release back (``stepsaga.cdk._releases``): the faults of the
    # functions a release changes, without a notification of its own (``LambdaErrors``
    # notifies). The ingress starter has an alarm of its own: it starts cases on the state
    # machine's alias, which depends on the functions' aliases this alarm guards, so one
    # alarm over both would be a CloudFormation cycle.
    "ReleaseFaults": AlarmRule(
        3,
        False,
        "functions other than the ingress starter failed with faults (not routed outcomes): "
        "a canary release in progress rolls back",
    ),
    "IngressReleaseFaults": AlarmRule(
        3,
        False,
        "the ingress starter failed with faults: its canary release in progress rolls back",
    ),
    "LambdaThrottles": AlarmRule(5, True, "Lambda throttled the saga's functions"),
    "LedgerThrottles": AlarmRule(5, True, "DynamoDB throttled requests to the ledger"),
    "LedgerSystemErrors": AlarmRule(1, True, "DynamoDB answered ledger requests with 5xx"),
    "ExecutionThrottles": AlarmRule(1, True, "Step Functions throttled executions"),
    # Account-wide API quotas (``ThrottledEvents`` has no per-machine dimension): the
    # ingress and the redriver back off (``stepsaga._aws.queue_backoff``), a person raises the
    # quota or slows the producers.
    "ApiThrottles": AlarmRule(
        5,
        True,
        "Step Functions throttled StartExecution, DescribeExecution or RedriveExecution in "
        "this account and region (the ingress and the redriver back off); raise the quota "
        "or slow the producers",
    ),
    "IngressQueueAge": AlarmRule(
        INGRESS_QUEUE_AGE_SECONDS,
        True,
        "approved cases have waited on the ingress queue for 15 minutes or more (starts "
        "throttled or failing, or the starter at its MaximumConcurrency)",
    ),
    "AutoRedriveQueueAge": AlarmRule(
        AUTO_REDRIVE_QUEUE_AGE_SECONDS,
        True,
        "failed-execution events have waited on the automatic redrive's queue for an hour "
        "or more (the redriver throttled or failing)",
    ),
    "AutoRedriveRefused": AlarmRule(
        1,
        True,
        "the automatic redrive refused an execution (its bound, its attempt budget, a later "
        "revision…; the verdict is in the redriver's log): it stays failed for a person",
    ),
    # Each conflict is retried (``Retry`` on ``StoreUnavailableError``); a steady stream
    # means a hot budget (more shards: ``budget_shards``) or a tenant hammered at once.
    "LedgerTransactionConflicts": AlarmRule(
        10,
        True,
        "ledger transactions were cancelled by concurrent ones (TransactionConflict, "
        "retried); the tenant is in the log's metadata: raise its budget shards or spread "
        "its cases",
    ),
    "IngressDeadLetters": AlarmRule(
        1,
        True,
        "approved cases wait in the ingress dead-letter queue (invalid, conflicting, or "
        "failing to start): read their stepsaga-reason attribute",
    ),
    "AutoRedriveDeadLetters": AlarmRule(
        1,
        True,
        "failed-execution events wait in the automatic redrive's dead-letter queue (not "
        "readable, or the redriver kept failing on them): redrive those executions by hand",
    ),
    "ReconciliationOverdue": AlarmRule(
        1,
        True,
        "OPEN reconciliation items are older than the threshold, or the check stopped",
        missing_breaches=True,
    ),
    "OutcomeUnknown": AlarmRule(
        1, False, "an effect's outcome is unknown; the record awaits reconciliation"
    ),
    "CompensationFailed": AlarmRule(
        1,
        True,
        "a compensation exhausted its retries; the saga ended in CompensationFailed and an "
        "effect is left half undone: decide its reconciliation item",
    ),
    "ReconciliationOpened": AlarmRule(
        1, False, "a reconciliation item was opened for a person to decide"
    ),
}


def alarm_name_prefix(stage: str, saga: str) -> str:
    """What every alarm name of this deployment starts with (the topic policy admits it)."""
    return f"{metric_names.service_name(stage, saga)}-"


def alarm_name(stage: str, saga: str, rule: str) -> str:
    return f"{alarm_name_prefix(stage, saga)}{rule}"


def business_fail_states(definition: Mapping[str, object]) -> list[str]:
    """Names of the top-level ``Fail`` states whose error is a business outcome."""
    states = definition.get("States", {})
    assert isinstance(states, Mapping)
    return sorted(
        name
        for name, state in states.items()
        if state.get("Type") == "Fail" and state.get("Error") in BUSINESS_FAIL_ERRORS
    )


class SagaAlarms(Construct):
    """The alarms of ``RULES`` for one deployment (texts name the saga and the stage)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        saga: str,
        stage: str,
        definition: Mapping[str, object],
        state_machine: sfn.IStateMachine,
        state_machine_logs: logs.ILogGroup,
        functions: Iterable[lambda_.IFunction],
        table: dynamodb.ITable,
        topic: sns.ITopic,
        overdue_check_period: Duration,
        dead_letters: sqs.IQueue | None = None,
        redrive_dead_letters: sqs.IQueue | None = None,
        queue: sqs.IQueue | None = None,
        redrive_queue: sqs.IQueue | None = None,
        released: Iterable[lambda_.IFunction] = (),
        released_starter: lambda_.IFunction | None = None,
    ) -> None:
        """``queue``/``dead_letters``: the ingress's; ``redrive_*``: the automatic redrive's
        (each None when that part is not deployed); ``released``: the functions whose
        faults roll a canary release back (``ReleaseFaults``; none: no such alarm);
        ``released_starter``: the ingress starter, when its release is a canary too
        (``IngressReleaseFaults``: its faults alone, no routed outcomes to subtract)."""
        super().__init__(scope, construct_id)
        self._stage = stage
        self._saga = saga
        functions = list(functions)
        fail_states = business_fail_states(definition)
        self.business_outcomes = logs.MetricFilter(
            self,
            "BusinessOutcomes",
            log_group=state_machine_logs,
            # State names are not execution data: logged with include_execution_data off.
            filter_pattern=logs.FilterPattern.literal(_fail_state_pattern(fail_states)),
            metric_namespace=metric_names.NAMESPACE,
            metric_name=f"{BUSINESS_OUTCOME}-{metric_names.service_name(stage, saga)}",
            metric_value="1",
        )
        metrics: dict[str, cloudwatch.IMetric] = {
            "TechnicalFailures": cloudwatch.MathExpression(
                expression="FILL(failed, 0) + FILL(timedout, 0) - FILL(business, 0)",
                using_metrics={
                    "failed": state_machine.metric_failed(period=_PERIOD, statistic="Sum"),
                    "timedout": state_machine.metric_timed_out(period=_PERIOD, statistic="Sum"),
                    "business": self.business_outcomes.metric(period=_PERIOD, statistic="Sum"),
                },
                period=_PERIOD,
                label="technical execution failures",
            ),
            "LambdaErrors": _sum_minus(
                {f"e{i}": f.metric_errors(period=_PERIOD) for i, f in enumerate(functions)},
                self._emf(metric_names.ROUTED_ERROR),
                "faults in functions",
            ),
            **(
                {
                    "ReleaseFaults": _sum_minus(
                        {f"e{i}": f.metric_errors(period=_PERIOD) for i, f in enumerate(released)},
                        self._emf(metric_names.ROUTED_ERROR),
                        "faults in released functions",
                    )
                }
                if released
                else {}
            ),
            **(
                {
                    "IngressReleaseFaults": _sum_minus(
                        {"e0": released_starter.metric_errors(period=_PERIOD)},
                        None,
                        "faults in the ingress starter",
                    )
                }
                if released_starter is not None
                else {}
            ),
            "LambdaThrottles": _sum_minus(
                {f"t{i}": f.metric_throttles(period=_PERIOD) for i, f in enumerate(functions)},
                None,
                "throttled invocations",
            ),
            "LedgerThrottles": table.metric_throttled_requests_for_operations(
                operations=list(_LEDGER_OPERATIONS), period=_PERIOD
            ),
            "LedgerSystemErrors": table.metric_system_errors_for_operations(
                operations=list(_LEDGER_OPERATIONS), period=_PERIOD
            ),
            "ExecutionThrottles": state_machine.metric_throttled(period=_PERIOD, statistic="Sum"),
            "ApiThrottles": _sum_minus(
                {
                    f"api{i}": cloudwatch.Metric(
                        namespace="AWS/States",
                        metric_name="ThrottledEvents",
                        dimensions_map={"APIName": api},
                        statistic="Sum",
                        period=_PERIOD,
                    )
                    for i, api in enumerate(THROTTLED_APIS)
                },
                None,
                "throttled Step Functions API calls",
            ),
            "LedgerTransactionConflicts": self._emf(metric_names.TRANSACTION_CONFLICT),
            # The check reports every run; a missing datapoint means it did not run.
            "ReconciliationOverdue": self._emf(
                metric_names.RECONCILIATION_OVERDUE,
                statistic="Maximum",
                period=Duration.minutes(overdue_check_period.to_minutes() * 2),
            ),
            "OutcomeUnknown": self._emf(metric_names.OUTCOME_UNKNOWN),
            "CompensationFailed": self._emf(metric_names.COMPENSATION_FAILED),
            "ReconciliationOpened": self._emf(metric_names.RECONCILIATION_OPENED),
        }
        if dead_letters is not None:
            metrics["IngressDeadLetters"] = (
                dead_letters.metric_approximate_number_of_messages_visible(
                    period=_PERIOD, statistic="Maximum"
                )
            )
        if redrive_dead_letters is not None:
            metrics["AutoRedriveDeadLetters"] = (
                redrive_dead_letters.metric_approximate_number_of_messages_visible(
                    period=_PERIOD, statistic="Maximum"
                )
            )
            metrics["AutoRedriveRefused"] = self._emf(metric_names.AUTO_REDRIVE_REFUSED)
        for aged, watched in (("IngressQueueAge", queue), ("AutoRedriveQueueAge", redrive_queue)):
            if watched is not None:
                metrics[aged] = watched.metric_approximate_age_of_oldest_message(
                    period=_PERIOD, statistic="Maximum"
                )
        #: What each alarm watches (the dashboard graphs them too).
        self.metrics: Mapping[str, cloudwatch.IMetric] = metrics
        assert set(metrics) <= set(RULES), "one rule per metric"
        action = actions.SnsAction(topic)
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        for name, rule in RULES.items():
            if name not in metrics:
                continue  # the part it watches is not deployed (no ingress, no auto redrive)
            alarm = cloudwatch.Alarm(
                self,
                name,
                alarm_name=alarm_name(stage, saga, name),
                metric=metrics[name],
                alarm_description=f"{saga} ({stage}): {rule.description}.",
                threshold=rule.threshold,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.BREACHING
                if rule.missing_breaches
                else cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            if rule.notify:
                alarm.add_alarm_action(action)
                alarm.add_ok_action(action)
            self.alarms[name] = alarm

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


def _fail_state_pattern(states: list[str]) -> str:
    """A JSON filter matching entries into the given ``Fail`` states (none: never)."""
    if not states:
        return '{ $.type = "FailStateEntered" && $.details.name = "-" }'
    names = " || ".join(f'$.details.name = "{state}"' for state in states)
    return f'{{ $.type = "FailStateEntered" && ({names}) }}'


def _sum_minus(
    summed: Mapping[str, cloudwatch.IMetric], minus: cloudwatch.IMetric | None, label: str
) -> cloudwatch.MathExpression:
    """``FILL(a) + FILL(b) + … - FILL(minus)`` over one period (a negative value, when the
    subtracted count lands a period early, stays below every threshold)."""
    terms = " + ".join(f"FILL({name}, 0)" for name in summed)
    using = dict(summed)
    if minus is not None:
        using["routed"] = minus
        terms = f"{terms} - FILL(routed, 0)"
    return cloudwatch.MathExpression(
        expression=terms, using_metrics=using, period=_PERIOD, label=label
    )
