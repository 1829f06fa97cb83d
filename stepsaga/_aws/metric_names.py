"""Names of the EMF metrics the handlers emit and the CDK stack alarms on.

Handlers (Powertools ``Metrics``) and the alarms in ``infra/`` import these constants, so a
renamed metric breaks both at once instead of leaving an alarm that never fires.

Alarm matching is exact: the stack's alarms select namespace :data:`NAMESPACE` and the single
dimension ``service`` (Powertools' default dimension, from ``POWERTOOLS_SERVICE_NAME``, which
the stack sets to :func:`service_name`). Emit these metrics **without extra dimensions**
(put tenant, case or action key in metadata), or CloudWatch files them under another
dimension set and the alarm never sees them.
"""

from __future__ import annotations

from typing import Final

#: CloudWatch namespace (``POWERTOOLS_METRICS_NAMESPACE`` in the stack).
NAMESPACE: Final = "stepsaga"
#: Service name used where no stage applies (the embedded backend, tests).
SERVICE_NAME: Final = "stepsaga"

#: An effect's outcome could not be determined; the record went to ``UNKNOWN``.
OUTCOME_UNKNOWN: Final = "OutcomeUnknown"
#: A compensation failed after its retries and automatic reconciliation could not decide
#: it: an item is open and the saga ends in ``Saga.CompensationFailed``.
COMPENSATION_FAILED: Final = "CompensationFailed"
#: A reconciliation item was opened for a person (automatic reconciliation could not decide).
RECONCILIATION_OPENED: Final = "ReconciliationOpened"
#: A duplicate delivery replayed a recorded outcome instead of repeating the effect.
DUPLICATE_REPLAYED: Final = "DuplicateReplayed"
#: An action key was reused with different consequential parameters.
ACTION_CONFLICT: Final = "ActionConflict"
#: A tenant budget (or an action's attempt budget) could not cover an action.
BUDGET_EXHAUSTED: Final = "BudgetExhausted"
#: A handler raised a non-retryable ``stepsaga`` error on purpose (a refusal, a conflict,
#: an unknown outcome): Lambda counts it in ``Errors``, but the state machine routes it
#: (``Catch``) to compensation or reconciliation. The technical Lambda-errors alarm
#: subtracts it, so only faults (bugs, timeouts, crashes, exhausted transients) remain.
ROUTED_ERROR: Final = "RoutedError"
#: DynamoDB cancelled a ledger transaction because another one touched the same items
#: (``TransactionConflict``); raised as a retryable ``StoreUnavailableError``.
TRANSACTION_CONFLICT: Final = "TransactionConflict"
#: Gauge from the scheduled check: open reconciliation items older than the threshold.
RECONCILIATION_OVERDUE: Final = "ReconciliationOverdue"
#: The automatic redrive (``stepsaga._aws.auto_redrive``), one metric per verdict: it redrove a
#: technically failed execution, made its message wait out the backoff, refused it (the
#: reason in metadata; the execution stays FAILED and ``TechnicalFailures`` has fired),
#: found it gone or no longer failed, or could not read the message.
AUTO_REDRIVEN: Final = "AutoRedriven"
AUTO_REDRIVE_WAITING: Final = "AutoRedriveWaiting"
AUTO_REDRIVE_REFUSED: Final = "AutoRedriveRefused"
AUTO_REDRIVE_GONE: Final = "AutoRedriveGone"
AUTO_REDRIVE_MALFORMED: Final = "AutoRedriveMalformed"
#: AWS throttled the redriver: the message was backed off (``stepsaga._aws.queue_backoff``).
AUTO_REDRIVE_BACKED_OFF: Final = "AutoRedriveBackedOff"

ALL: Final = (
    OUTCOME_UNKNOWN,
    COMPENSATION_FAILED,
    RECONCILIATION_OPENED,
    DUPLICATE_REPLAYED,
    ACTION_CONFLICT,
    BUDGET_EXHAUSTED,
    ROUTED_ERROR,
    TRANSACTION_CONFLICT,
    RECONCILIATION_OVERDUE,
    AUTO_REDRIVEN,
    AUTO_REDRIVE_WAITING,
    AUTO_REDRIVE_REFUSED,
    AUTO_REDRIVE_GONE,
    AUTO_REDRIVE_MALFORMED,
    AUTO_REDRIVE_BACKED_OFF,
)


def service_name(stage: str, saga: str | None = None) -> str:
    """The ``service`` dimension for one deployed stage (two stages may share an account)
    and, given a saga, for that saga's deployment (two sagas of a stage alarm apart)."""
    return f"{SERVICE_NAME}-{stage}" if saga is None else f"{SERVICE_NAME}-{stage}-{saga}"
