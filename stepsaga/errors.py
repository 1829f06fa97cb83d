"""The one family of stepsaga errors; their class names are a contract.

A Lambda handler that raises one of these reports ``errorType`` = the class name, and that
is the name Step Functions matches in ``Retry``/``Catch``. Renaming a class is a breaking
change for deployed machines.

**One identity.** An error's name on the wire (``error_name()``: the Lambda ``errorType``,
a ``FAILED`` record's error, a replay, a tool's result) is the nearest *routing class* in
its MRO — a class of :data:`FATES`: a team's ``SeatSoldOutError(BusinessRejectedError)`` is
``BusinessRejectedError`` to the state machine and the ledger, on the first run and after
any replay (``routed`` builds the instance a handler raises). The other classes here (the
engine's and the AWS backend's API errors) route the same way, as their base.

**Every error in one place.** Besides the routing family, this module holds every other
exception stepsaga raises to its users: a saga or definition that is not well formed, a
deployment or template it cannot build, the test kit's errors. Their class names are part
of the API too (``ExecutionDoesNotExist`` is the AWS exception code on both backends).

**One table.** :data:`FATES` gives every routing class two things: what it says about an
effect when a downstream call raised it (its ``ErrorFamily``: the row of the ledger's
``ERROR_TABLE``, ``stepsaga.ledger._outcomes``) and where the state machine sends it
(its :class:`Route`: the ``Retry``/``Catch`` lists ``RETRYABLE``, ``COMPENSATE``,
``RECONCILE`` are derived from it). ``stepsaga.ledger._outcomes`` checks on import that the
two agree for every cell (a ``FAILED`` record's error is caught, an ``UNKNOWN`` one goes to
reconciliation, a ``RELEASED`` one is retried).

**Messages kept.** ``describe(exc)`` is how an unexpected exception is written down
(logs, a history's cause, a reconciliation item's evidence): type, message (bounded, after
the team's redaction hook, ``set_message_redactor``) and the frame that raised it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, ClassVar, Final


class StepSagaError(Exception):
    """Base of every error stepsaga raises on purpose.

    ``retryable`` says whether repeating the same request may succeed; ``data`` carries what
    an operator or a caller needs to act (keys, digests, counts), never personal data.
    """

    retryable: ClassVar[bool] = False
    #: The nearest routing class (of :data:`FATES`) in the MRO: the error's identity (set
    #: on each class of ``FATES`` below, inherited by every other class).
    _routed_as: ClassVar[type[StepSagaError]]

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = data

    @classmethod
    def error_name(cls) -> str:
        """The name Step Functions sees (Lambda's ``errorType``): the nearest routing class
        (of :data:`FATES`) in the MRO, so a team's subclass routes as its base."""
        return cls._routed_as.__name__

    @classmethod
    def routed_class(cls) -> type[StepSagaError]:
        return cls._routed_as

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
    """A caller's extra write (``stepsaga.ledger._writes``) found its item not as its
    condition requires (e.g. the session cursor moved on). Nothing was written; carries
    ``key``, ``pk`` and ``sk``."""


class NotHomeRegionError(StepSagaError):
    """A tenant's claims and outcomes are written only in its home region
    (docs/reference/multi-region.md); this ledger runs elsewhere. Nothing was written; carries
    ``tenant_id``, ``home_region`` and ``region``. Route the call to the home region."""


class RevisionSupersededError(StepSagaError):
    """A later revision of the case has already acted (claimed in the ledger), so this
    revision acts no more; nothing was written (docs/explanation/design.md, "Revisions supersede").
    Carries ``key``, ``case_id``, ``revision`` and ``latest_revision``."""


class BusinessRejectedError(StepSagaError):
    """A downstream service permanently refused the request; no effect happened."""


class NotFoundError(StepSagaError):
    """A record, item or execution named by the caller does not exist."""


class IllegalTransitionError(StepSagaError):
    """A status change the ledger rules forbid, or a conditional write whose status/owner
    precondition no longer holds (another worker won)."""


# --- API errors that route as their base class ------------------------------------------
# Their class names are the AWS Step Functions exception codes, raised by the embedded
# engine and by the AWS backend alike (botocore's code → the class of the same name), so a
# script sees one name on both backends. On the wire (``error_name()``) each is its base:
# a refusal of what the caller asked is ``InvalidInputError`` (exit 2), an unknown name
# ``NotFoundError`` (exit 2).


class InvalidDefinition(InvalidInputError):  # noqa: N818 (the AWS exception code)
    """The ASL definition uses something the engine does not implement, or is invalid.

    ``state`` and ``field`` name where (``state`` is ``None`` for top-level fields).
    """

    def __init__(self, message: str, *, state: str | None = None, field: str | None = None):
        where = f"state {state!r}" if state is not None else "definition"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}", state=state, field=field)
        self.state = state
        self.field = field


class InvalidName(InvalidInputError):  # noqa: N818 (the AWS exception code)
    """A state machine or execution name breaks the AWS rules (1-80 of ``[A-Za-z0-9_-]``)."""


class InvalidExecutionInput(InvalidInputError):  # noqa: N818 (the AWS exception code)
    """Execution input that is not a JSON text."""


class InvalidOutput(InvalidInputError):  # noqa: N818 (the AWS exception code)
    """``send_task_success`` output that is not a JSON text."""


class InvalidToken(InvalidInputError):  # noqa: N818 (the AWS exception code)
    """A task token that is not one this engine could have issued."""


class ExecutionAlreadyExists(InvalidInputError):  # noqa: N818 (the AWS exception code)
    """An execution with this name exists with a different input (or test case)."""


class ExecutionNotRedrivable(InvalidInputError):  # noqa: N818 (the AWS exception code)
    """Redrive asked for an execution that is running or succeeded."""


class StateMachineAlreadyExists(InvalidInputError):  # noqa: N818 (the AWS exception code)
    """``create_state_machine`` with an existing name and a different definition."""


class TaskTimedOut(InvalidInputError):  # noqa: N818 (the AWS exception code)
    """A callback for a task that no longer waits (timed out, or its execution closed)."""


class ExecutionDoesNotExist(NotFoundError):  # noqa: N818 (the AWS exception code)
    """No execution with that ARN in this store."""


class StateMachineDoesNotExist(NotFoundError):  # noqa: N818 (the AWS exception code)
    """No state machine with that ARN or name in this store."""


class TaskDoesNotExist(NotFoundError):  # noqa: N818 (the AWS exception code)
    """No task token like that was issued by this store."""


class MockConfigError(InvalidInputError):
    """A ``MockConfigFile.json`` that is malformed, or a test case it does not define."""


class AwsCallError(StepSagaError):
    """An AWS call failed for a reason we do not map (carries ``action`` and ``code``)."""


class FunctionFailedError(StepSagaError):
    """A saga function ``cancel`` invoked reported an error (Lambda's ``FunctionError``)."""


class DecisionNotDeliveredError(StepSagaError):
    """The item is resolved, but the execution that waited on it no longer waits (its
    wait timed out, or it was stopped): redrive it and it goes on with the decision."""


# --- errors of building and testing a saga (never raised from a step) -------------------


class SagaDefinitionError(ValueError):
    """A saga, step or retry policy is not well formed; the message says what and where."""


class DefinitionError(ValueError):
    """The definition fails the graph check; ``problems`` lists every finding."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid state machine definition:\n  " + "\n  ".join(problems))
        self.problems = tuple(problems)


class TemplateError(ValueError):
    """A template the engine cannot compile (``Parameters``, a JSONata field, ``Assign``), or
    a CloudFormation template the test kit cannot deploy; ``field`` is the dotted name of
    the field at fault, when there is one."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class DeploymentError(ValueError):
    """The saga cannot be deployed as configured; the message is one line."""


class StateNotMockedError(Exception):
    """A task invoked a function that neither the mock config nor the test's handlers cover."""


class LocalStackError(RuntimeError):
    """LocalStack is not installed, or would not start (the message says why, in one line
    first, then the end of its log)."""


# --- the one table: what each error means for an effect, and where it is routed --------


class ErrorFamily(StrEnum):
    """What an exception says about the effect when a downstream call raised it (the row
    of the ledger's ``ERROR_TABLE``)."""

    BEFORE_DISPATCH = "before_dispatch"
    """``TransientError``: the adapter failed before sending (throttle, refused connection)."""
    REFUSED = "refused"
    """``BusinessRejectedError``, ``InvalidInputError``, ``NotFoundError``: validation or
    the downstream refused; nothing happened, and replaying must refuse again."""
    KEY_CONFLICT = "key_conflict"
    """``ActionConflictError``: the downstream holds our key with other parameters."""
    KEY_BUSY = "key_busy"
    """``ActionInProgressError``: the downstream is processing our key right now."""
    UNCERTAIN = "uncertain"
    """``OutcomeUnknownError``: sent, but the reply was lost (timeout after dispatch, 5xx)."""
    UNEXPECTED = "unexpected"
    """Anything else (a bug, an unmapped library error): nobody can tell whether the
    request left."""


class Route(StrEnum):
    """Where the state machine sends an error that leaves a step's handler."""

    RETRY = "retry"
    """``Retry`` (bounded, jittered); once retries are exhausted it is *not* caught: the
    execution fails at the step and is redriven."""
    COMPENSATE = "compensate"
    """``Catch``: the completed steps are compensated (a permanent refusal)."""
    RECONCILE = "reconcile"
    """``Catch``: a person (or automatic reconciliation) decides."""
    FAIL = "fail"
    """Neither: the execution fails at the step, to be redriven once the cause is fixed
    (a deployment mismatch, a region, a superseded revision: never compensated)."""


@dataclass(frozen=True)
class Fate:
    family: ErrorFamily
    route: Route


_F, _R = ErrorFamily, Route
#: Every class of this module: its family (the ledger's row) and its route (the ASL's).
FATES: Final[Mapping[type[StepSagaError], Fate]] = MappingProxyType(
    {
        StepSagaError: Fate(_F.UNEXPECTED, _R.FAIL),
        TransientError: Fate(_F.BEFORE_DISPATCH, _R.RETRY),
        ActionInProgressError: Fate(_F.KEY_BUSY, _R.RETRY),
        StoreUnavailableError: Fate(_F.UNEXPECTED, _R.RETRY),
        OutcomeUnknownError: Fate(_F.UNCERTAIN, _R.RECONCILE),
        AttemptBudgetExhaustedError: Fate(_F.UNEXPECTED, _R.RECONCILE),
        BudgetExhaustedError: Fate(_F.UNEXPECTED, _R.RECONCILE),
        ActionConflictError: Fate(_F.KEY_CONFLICT, _R.RECONCILE),
        ReplayWindowExpiredError: Fate(_F.UNEXPECTED, _R.RECONCILE),
        BusinessRejectedError: Fate(_F.REFUSED, _R.COMPENSATE),
        InvalidInputError: Fate(_F.REFUSED, _R.COMPENSATE),
        InvalidActionError: Fate(_F.REFUSED, _R.COMPENSATE),
        NotFoundError: Fate(_F.REFUSED, _R.COMPENSATE),
        EventMismatchError: Fate(_F.UNEXPECTED, _R.FAIL),
        ConditionFailedError: Fate(_F.UNEXPECTED, _R.FAIL),
        NotHomeRegionError: Fate(_F.UNEXPECTED, _R.FAIL),
        RevisionSupersededError: Fate(_F.UNEXPECTED, _R.FAIL),
        IllegalTransitionError: Fate(_F.UNEXPECTED, _R.FAIL),
    }
)
for _cls in FATES:
    _cls._routed_as = _cls
del _cls


def fate_of(error: type[BaseException] | BaseException) -> Fate:
    """The row of :data:`FATES` for an error class or instance (anything that is not a
    ``StepSagaError`` is unexpected)."""
    cls = error if isinstance(error, type) else type(error)
    if not issubclass(cls, StepSagaError):
        return FATES[StepSagaError]
    return FATES[cls.routed_class()]


def _routed(route: Route) -> tuple[type[StepSagaError], ...]:
    return tuple(cls for cls, fate in FATES.items() if fate.route is route)


def routed(error: StepSagaError) -> StepSagaError:
    """``error`` as an instance of its routing class (itself when it is one), with the
    same message, data and attributes: what a handler raises, so Lambda's ``errorType``
    (the raised class's name) is ``error.error_name()``."""
    cls = error.routed_class()
    if type(error) is cls:
        return error
    same = cls.__new__(cls)
    Exception.__init__(same, *error.args)
    same.__dict__.update(error.__dict__)
    return same


# --- keeping an unexpected exception's message ------------------------------------------

#: The longest message of an unexpected exception kept (after redaction).
MAX_MESSAGE: Final = 300
MessageRedactor = Callable[[str], str]
_redactor: MessageRedactor | None = None
_SPACE = re.compile(r"\s+")


def set_message_redactor(redactor: MessageRedactor | None) -> None:
    """Install a team's hook that removes what must not be kept (personal data, secrets)
    from an unexpected exception's message before it is logged or stored; ``None`` keeps
    messages as raised (bounded). Call it where every process imports it (the module of
    the project's ``Dependencies``). A hook that fails drops the whole message."""
    global _redactor
    _redactor = redactor


def describe(exc: BaseException) -> str:
    """``RuntimeError: timeout talking to PSP (at tasks/refund.py:42 in perform)``: the
    type, the message (redacted, one line, at most ``MAX_MESSAGE`` characters) and the
    frame that raised it."""
    message = exc.message if isinstance(exc, StepSagaError) else str(exc)
    if _redactor is not None:
        try:
            message = str(_redactor(message))
        except Exception:  # a broken hook must not leak what it was meant to hide
            message = "(message withheld: the redaction hook failed)"
    message = _SPACE.sub(" ", message).strip()
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    described = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    frame = raised_at(exc)
    return f"{described} (at {frame})" if frame else described


def raised_at(exc: BaseException) -> str | None:
    """``path/file.py:42 in function`` of the innermost frame of ``exc``'s traceback; the
    path relative to the working directory when under it (the Lambda task root, the
    project), else the file's name alone (no home directories in logs)."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    path = code.co_filename
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        relative = os.path.basename(path)
    shown = os.path.basename(path) if relative.startswith("..") else relative
    return f"{shown}:{tb.tb_lineno} in {code.co_name}"


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

#: Handler errors retried with bounded, jittered backoff (from :data:`FATES`).
RETRYABLE: Final[tuple[type[StepSagaError], ...]] = _routed(Route.RETRY)
#: Outcomes a person (or automatic reconciliation) must decide (from :data:`FATES`).
RECONCILE: Final[tuple[type[StepSagaError], ...]] = _routed(Route.RECONCILE)
#: Permanent refusals after which completed steps are compensated (from :data:`FATES`).
COMPENSATE: Final[tuple[type[StepSagaError], ...]] = _routed(Route.COMPENSATE)

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


#: The public names: every exception class above, and the team's redaction hook (the
#: routing table and its helpers are what the compiler, the ledger and the handlers share).
__all__ = sorted(
    [
        name
        for name, value in list(globals().items())
        if isinstance(value, type) and issubclass(value, BaseException) and name[0] != "_"
    ]
    + ["set_message_redactor"]
)
