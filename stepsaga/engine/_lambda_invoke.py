"""The ``lambda:invoke`` integration, run against in-process handlers.

A handler is any ``Callable[[event, context], result]`` — the same signature as a Lambda
handler. The task result has the shape of the real integration's output, so definitions
written for AWS (``ResultSelector {"x.$": "$.Payload"}``) work unchanged. A handler exception
becomes ``error = type(exc).__name__`` and ``cause`` = the JSON Lambda's Python runtime
reports (``errorMessage``, ``errorType``, ``requestId``, ``stackTrace``).
"""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import format_datetime
from typing import Any

Handler = Callable[[Any, Any], Any]

#: Error names Lambda uses that the engine reproduces.
RESOURCE_NOT_FOUND = "Lambda.ResourceNotFoundException"
MARSHAL_ERROR = "Runtime.MarshalError"
_MAX_CAUSE = 32_768
_ARN = re.compile(
    r"^(?:arn:aws[\w-]*:lambda:[\w-]+:\d{12}:function:|\d{12}:function:)?([\w-]+)(?::[\w$-]+)?$"
)


@dataclass
class LambdaContext:
    """The attributes of Lambda's context object that handlers (and Powertools) read."""

    function_name: str
    aws_request_id: str
    invoked_function_arn: str
    remaining_millis: int
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 128
    log_group_name: str = ""
    log_stream_name: str = ""
    client_context: Any = None
    identity: Any = None
    extras: dict[str, Any] = field(default_factory=dict)

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_millis


def resolve(registry: Mapping[str, Handler], function_name: str) -> Handler | None:
    """The handler for ``FunctionName``: an exact registry key, else the function name inside
    a Lambda ARN (``arn:aws:lambda:…:function:NAME[:qualifier]``)."""
    handler = registry.get(function_name)
    if handler is not None:
        return handler
    match = _ARN.match(function_name)
    return registry.get(match.group(1)) if match else None


@dataclass(frozen=True)
class Invocation:
    """What one invocation produced: ``payload_json`` on success, else ``error``/``cause``."""

    ok: bool
    payload_json: str = "null"
    error: str = ""
    cause: str = ""


def invoke(handler: Handler, event: Any, context: LambdaContext) -> Invocation:
    try:
        result = handler(event, context)
    except Exception as exc:
        return failure(
            type(exc).__name__,
            str(exc),
            context.aws_request_id,
            traceback.format_tb(exc.__traceback__.tb_next if exc.__traceback__ else None),
        )
    try:
        return Invocation(
            ok=True, payload_json=json.dumps(result, separators=(",", ":"), ensure_ascii=False)
        )
    except (TypeError, ValueError) as exc:
        return failure(
            MARSHAL_ERROR, f"Unable to marshal response: {exc}", context.aws_request_id, []
        )


def failure(error_type: str, message: str, request_id: str, stack: list[str]) -> Invocation:
    cause = json.dumps(
        {
            "errorMessage": message,
            "errorType": error_type,
            "requestId": request_id,
            "stackTrace": stack,
        },
        ensure_ascii=False,
    )
    if len(cause) > _MAX_CAUSE:
        cause = json.dumps(
            {
                "errorMessage": message[:4096],
                "errorType": error_type,
                "requestId": request_id,
                "stackTrace": [],
            },
            ensure_ascii=False,
        )
    return Invocation(ok=False, error=error_type, cause=cause)


def not_found(function_name: str, region: str, account: str) -> Invocation:
    message = (
        f"Function not found: arn:aws:lambda:{region}:{account}:function:{function_name} "
        "(Service: Lambda, Status Code: 404, Error Code: ResourceNotFoundException)"
    )
    return Invocation(ok=False, error=RESOURCE_NOT_FOUND, cause=message)


def output(
    payload_json: str, request_id: str, when: datetime, version: str = "$LATEST"
) -> dict[str, Any]:
    """The ``lambda:invoke`` task result AWS returns (before ``ResultSelector``)."""
    date = format_datetime(when, usegmt=True)
    length = str(len(payload_json.encode()))
    headers = {
        "Connection": "keep-alive",
        "Content-Length": length,
        "Content-Type": "application/json",
        "Date": date,
        "X-Amz-Executed-Version": version,
        "x-amzn-Remapped-Content-Length": "0",
        "x-amzn-RequestId": request_id,
    }
    return {
        "ExecutedVersion": version,
        "Payload": json.loads(payload_json),
        "SdkHttpMetadata": {
            "AllHttpHeaders": {k: [v] for k, v in headers.items()},
            "HttpHeaders": headers,
            "HttpStatusCode": 200,
        },
        "SdkResponseMetadata": {"RequestId": request_id},
        "StatusCode": 200,
    }
