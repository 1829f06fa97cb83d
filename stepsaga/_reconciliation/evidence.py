"""What an item records so a person (or the audit) can see why it exists.

Evidence holds identifiers and error texts: the request digest, the last error (name and
message, never the stack trace; an unexpected exception's message is kept bounded, after
the team's redaction hook, with the frame that raised it: ``stepsaga.errors.describe``),
the downstream reference, the attempts and what a lookup found.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from stepsaga.ledger import Record

if TYPE_CHECKING:  # the events' models cost every CLI start-up ~20 ms; only handlers need them
    from stepsaga.workflow._events import CaughtError

MAX_MESSAGE = 1000


def failure_of(caught: CaughtError) -> dict[str, str]:
    """``{"error", "message"}`` from a ``Catch``'s ``{Error, Cause}``.

    A Lambda error's ``Cause`` is JSON (``errorMessage``, ``errorType``, ``stackTrace``…);
    only the message is kept. Anything else is kept as text, cut short.
    """
    message = caught.cause
    try:
        decoded = json.loads(caught.cause)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict) and isinstance(decoded.get("errorMessage"), str):
        message = decoded["errorMessage"]
    return {"error": caught.error, "message": message[:MAX_MESSAGE]}


def evidence(
    record: Record | None,
    *,
    last_error: dict[str, str] | None = None,
    lookup: str | None = None,
    **more: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "request_digest": record.digest if record else None,
        "last_error": last_error,
        "downstream_reference": record.reference if record else None,
        "attempts": record.attempts if record else 0,
        "record_status": record.status.value if record else None,
    }
    if lookup is not None:
        out["lookup"] = lookup
    out.update(more)
    return out
