"""Errors inside an execution of the embedded engine.

:class:`StatesError` is raised *inside* an execution: an ASL error name plus cause, matched
by ``Retry``/``Catch`` exactly as Step Functions would. The API errors the engine raises to
its caller (``ExecutionDoesNotExist``…) are in :mod:`stepsaga.errors`.
"""

from __future__ import annotations

from typing import Any

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
