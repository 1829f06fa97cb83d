"""Errors of the embedded engine.

Two kinds live here:

* API errors, raised to the caller of :class:`~stepsaga.engine.LocalEngine`. Their class names
  are the AWS Step Functions exception codes (``ExecutionAlreadyExists``,
  ``ExecutionDoesNotExist``…) so the CLI can treat a botocore ``ClientError`` code and a local
  exception alike. They join the ``StepSagaError`` family so the CLI's exit codes apply:
  refusals of what the caller asked are ``InvalidInputError`` (exit 2), unknown names are
  ``NotFoundError`` (exit 2).
* :class:`StatesError`, raised *inside* an execution: an ASL error name plus cause, matched by
  ``Retry``/``Catch`` exactly as Step Functions would.
"""

from __future__ import annotations

from typing import Any

from stepsaga.errors import InvalidInputError, NotFoundError


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


# --- errors inside an execution --------------------------------------------------------

#: Error names Step Functions itself raises.
STATES_ALL = "States.ALL"
STATES_TASK_FAILED = "States.TaskFailed"
STATES_TIMEOUT = "States.Timeout"
STATES_HEARTBEAT_TIMEOUT = "States.HeartbeatTimeout"
STATES_RUNTIME = "States.Runtime"
STATES_RESULT_PATH_MATCH_FAILURE = "States.ResultPathMatchFailure"
STATES_NO_CHOICE_MATCHED = "States.NoChoiceMatched"
STATES_QUERY_EVALUATION_ERROR = "States.QueryEvaluationError"
#: A payload over 256 KiB. Only a retrier or catcher naming it handles it: AWS documents
#: that neither ``States.ALL`` nor ``States.TaskFailed`` matches it.
STATES_DATA_LIMIT_EXCEEDED = "States.DataLimitExceeded"
#: Our own name for an execution whose process died or was interrupted mid-run.
INTERRUPTED = "Stepsaga.Interrupted"


class StatesError(Exception):
    """An ASL error raised while a state runs: ``error`` is what ``ErrorEquals`` matches.

    ``terminal`` errors (``States.Runtime``) fail the execution at once: AWS documents that
    neither ``Retry`` nor ``Catch`` on ``States.ALL`` handles them.
    """

    def __init__(self, error: str, cause: str, *, terminal: bool = False) -> None:
        super().__init__(f"{error}: {cause}")
        self.error = error
        self.cause = cause
        self.terminal = terminal


class QueryEvaluationError(StatesError):
    """``States.QueryEvaluationError``: a JSONata expression failed or gave the wrong type;
    ``location`` is the field (``Output``, ``Arguments.Payload.x``…). ``Retry``/``Catch``
    handle it, unlike ``States.Runtime``."""

    def __init__(self, cause: str, location: str) -> None:
        super().__init__(STATES_QUERY_EVALUATION_ERROR, cause)
        self.location = location


def runtime_error(cause: str) -> StatesError:
    return StatesError(STATES_RUNTIME, cause, terminal=True)


def describe(value: Any, limit: int = 200) -> str:
    """A short JSON-ish rendering of a value for causes."""
    import json

    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
