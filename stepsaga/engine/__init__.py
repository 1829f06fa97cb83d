"""The embedded Step Functions engine: ASL (JSONPath or JSONata) on SQLite with AWS semantics.

Public API: :class:`LocalEngine` (boto3-flavoured), :class:`MockConfig` (Step Functions Local
mock files), the progress notices for ``on_event``, the error classes, and :data:`REFUSED` /
:data:`STATE_FIELDS`: the one statement of what the engine does not / does implement.
"""

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr
from stepsaga.engine._engine import (
    SYNCHRONOUS_ENV,
    TIME_SCALE_ENV,
    LocalEngine,
    check_name,
    check_time_scale,
    substitute,
    synchronous_from_env,
    time_scale_from_env,
)
from stepsaga.engine._errors import INTERRUPTED
from stepsaga.engine._lambda_invoke import Handler, LambdaContext
from stepsaga.engine._mockconfig import MockConfig, MockedResponse, MockTestCase
from stepsaga.engine._models import (
    Delay,
    DelayChosen,
    DelayKind,
    EngineEvent,
    ExecutionStatus,
    HistoryRecorded,
    WaitingTask,
)
from stepsaga.engine._store import ExecutionPageQuery

if TYPE_CHECKING:
    from stepsaga.engine._definition import (
        LAMBDA_INVOKE,
        LAMBDA_INVOKE_WAIT,
        REFUSED,
        STATE_FIELDS,
        Definition,
        Refusal,
        load,
    )

__all__ = [
    "INTERRUPTED",
    "LAMBDA_INVOKE",
    "LAMBDA_INVOKE_WAIT",
    "REFUSED",
    "STATE_FIELDS",
    "SYNCHRONOUS_ENV",
    "TIME_SCALE_ENV",
    "Definition",
    "Delay",
    "DelayChosen",
    "DelayKind",
    "EngineEvent",
    "ExecutionPageQuery",
    "ExecutionStatus",
    "Handler",
    "HistoryRecorded",
    "LambdaContext",
    "LocalEngine",
    "MockConfig",
    "MockTestCase",
    "MockedResponse",
    "Refusal",
    "WaitingTask",
    "check_name",
    "check_time_scale",
    "load",
    "substitute",
    "synchronous_from_env",
    "time_scale_from_env",
]

#: The ASL parser's names load on first use: an engine opened to describe or list
#: executions (``stepsaga status``) never parses a definition.
__getattr__ = lazy_getattr(
    __name__,
    {
        name: "stepsaga.engine._definition"
        for name in (
            "LAMBDA_INVOKE",
            "LAMBDA_INVOKE_WAIT",
            "REFUSED",
            "STATE_FIELDS",
            "Definition",
            "Refusal",
            "load",
        )
    },
)
