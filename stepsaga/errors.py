"""The one family of stepsaga errors; their class names are a contract.

A Lambda handler that raises one of these reports ``errorType`` = the class name, and that
is the name Step Functions matches in ``Retry``/``Catch``. The ASL compiler reads the same
classes (``RETRYABLE``, ``RECONCILE``, ``COMPENSATE``…) so handlers and state machine can
never disagree about a name. Renaming a class is a breaking change for deployed machines.
"""

from __future__ import annotations

from typing import Any, ClassVar


class StepSagaError(Exception):
    """Base of every error stepsaga raises on purpose.

    ``retryable`` says whether repeating the same request may succeed; ``data`` carries what
    an operator or a caller needs to act (keys, digests, counts), never personal data.
    """

    retryable: ClassVar[bool] = False

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = data

    @classmethod
    def error_name(cls) -> str:
        """The name Step Functions sees (Lambda's ``errorType``)."""
        return cls.__name__

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.error_name(), "message": self.message, "data": self.data}


# --- retryable: the same request may succeed later -------------------------------------


class TransientError(StepSagaError):
    """A failure known to have happened before any effect (throttle, 5xx, refused connection)."""

    retryable = True


class ActionInProgressError(StepSagaError):
    """Another attempt holds a live lease on this action; ``retry_after_seconds`` says when
    the lease ends."""

    retryable = True

    def __init__(self, message: str, *, retry_after_seconds: float, **data: Any) -> None:
        super().__init__(message, retry_after_seconds=retry_after_seconds, **data)
        self.retry_after_seconds = retry_after_seconds


class StoreUnavailableError(StepSagaError):
    """The ledger or another store could not be reached or was busy (locked SQLite file,
    DynamoDB throttling). Nothing was written."""

    retryable = True


# --- never retried by the state machine ------------------------------------------------


class InvalidInputError(StepSagaError):
    """An event, case file or flag failed validation; ``field`` names what is wrong."""


class InvalidActionError(InvalidInputError):
    """An action's parameters cannot be canonicalized (e.g. an amount finer than the
    currency's minor unit)."""


class EventMismatchError(InvalidInputError):
    """A handler's event does not fit its event model: the state machine that sent it and
    the deployed handler disagree (a release changed one of them). Nothing was written.

    Deliberately in neither ``COMPENSATE`` nor ``RETRYABLE``: no ``Catch`` matches it, so the
    step fails, the execution fails there and is redriven once both agree again. A
    deployment mismatch must never compensate a live case.
    """


class ActionConflictError(StepSagaError):
    """The action key was reused with different consequential parameters. Nothing changed.

    Carries ``key``, ``stored_digest`` and ``request_digest``.
    """


class OutcomeUnknownError(StepSagaError):
    """The effect may or may not have happened; only reconciliation may decide."""


class AttemptBudgetExhaustedError(StepSagaError):
    """The action used its lifetime attempt budget (counted across retries and redrives)."""


class BudgetExhaustedError(StepSagaError):
    """The tenant's budget cannot cover this action's cost. Nothing was debited."""


class ReplayWindowExpiredError(StepSagaError):
    """The intent was approved longer ago than the retention window: no record protects it
    any more, so the action is refused rather than risked."""


class ConditionFailedError(StepSagaError):
    """A caller's extra write (``stepsaga.ledger.writes``) found its item not as its
    condition requires (e.g. the session cursor moved on). Nothing was written; carries
    ``key``, ``pk`` and ``sk``."""


class NotHomeRegionError(StepSagaError):
    """A tenant's claims and outcomes are written only in its home region
    (docs/multi-region.md); this ledger runs elsewhere. Nothing was written; carries
    ``tenant_id``, ``home_region`` and ``region``. Route the call to the home region."""


class RevisionSupersededError(StepSagaError):
    """A later revision of the case has already acted (claimed in the ledger), so this
    revision acts no more; nothing was written (docs/design.md, "Revisions supersede").
    Carries ``key``, ``case_id``, ``revision`` and ``latest_revision``."""


class BusinessRejectedError(StepSagaError):
    """A downstream service permanently refused the request; no effect happened."""


class NotFoundError(StepSagaError):
    """A record, item or execution named by the caller does not exist."""


class IllegalTransitionError(StepSagaError):
    """A status change the ledger rules forbid, or a conditional write whose status/owner
    precondition no longer holds (another worker won)."""


# --- groupings the ASL compiler and the engine use -------------------------------------

#: Lambda service errors AWS recommends retrying for every lambda:invoke task.
LAMBDA_SERVICE_ERRORS: tuple[str, ...] = (
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.TooManyRequestsException",
)

#: Errors Step Functions reports when a Lambda task ran out of time: the state's
#: ``TimeoutSeconds`` (``States.Timeout``) or the function's own timeout (``Sandbox.Timedout``).
#: Retried: the ledger decides what the lost attempt did (its lease ends with the invocation).
LAMBDA_TIMEOUT_ERRORS: tuple[str, ...] = ("States.Timeout", "Sandbox.Timedout")

#: Handler errors retried with bounded, jittered backoff.
RETRYABLE: tuple[type[StepSagaError], ...] = (
    TransientError,
    ActionInProgressError,
    StoreUnavailableError,
)

#: Outcomes a person (or automatic reconciliation) must decide.
RECONCILE: tuple[type[StepSagaError], ...] = (
    OutcomeUnknownError,
    AttemptBudgetExhaustedError,
    BudgetExhaustedError,
    ActionConflictError,
    ReplayWindowExpiredError,
)

#: Permanent refusals after which completed steps are compensated.
COMPENSATE: tuple[type[StepSagaError], ...] = (
    BusinessRejectedError,
    InvalidInputError,
    InvalidActionError,
)

#: Error names of ``Fail`` states the compiled machines end in.
SAGA_COMPENSATED = "Saga.Compensated"
SAGA_COMPENSATION_FAILED = "Saga.CompensationFailed"
#: Every error name starting with this is a business outcome, never redriven.
SAGA_OUTCOME_PREFIX = "Saga."
#: The error an execution an operator stopped (``stepsaga stop``) ends ABORTED with.
EXECUTION_STOPPED = "Stepsaga.Stopped"


def names(errors: tuple[type[StepSagaError], ...]) -> list[str]:
    """Error names as ``ErrorEquals`` wants them."""
    return [e.error_name() for e in errors]


def is_retryable_name(name: str) -> bool:
    return (
        name in names(RETRYABLE) or name in LAMBDA_SERVICE_ERRORS or name in LAMBDA_TIMEOUT_ERRORS
    )


def is_business_outcome(name: str | None) -> bool:
    """Whether an execution's error is a saga's own ending (``Saga.*``), not a technical
    failure a redrive could fix."""
    return bool(name) and str(name).startswith(SAGA_OUTCOME_PREFIX)
