"""Step Functions' quotas that change an execution's outcome: the one table the engine
checks them against (docs/reference/engine.md lists them, and the ones it does not enforce)."""

from __future__ import annotations

from stepsaga.engine._errors import STATES_DATA_LIMIT_EXCEEDED, StatesError

#: "Maximum input or output size for a task, state, or execution: 256 KiB of data as a
#: UTF-8 encoded string" — also each ``Assign`` (all its variables together).
PAYLOAD_BYTES = 256 * 1024

#: "Restarts unsuccessful executions of Standard workflows that didn't complete successfully
#: in the last 14 days" (RedriveExecution): counted from the execution's stop date.
REDRIVABLE_SECONDS = 14 * 24 * 3600
REDRIVABLE_PERIOD_EXCEEDED = "Execution redrivable period exceeded."


def redrive_period_over(stop_date: float | None, now: float) -> bool:
    """True once an execution that stopped at ``stop_date`` may no longer be redriven."""
    return stop_date is not None and now - stop_date > REDRIVABLE_SECONDS


def utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def over_payload_limit(text: str) -> int | None:
    """The size of ``text`` in UTF-8 bytes when it is over :data:`PAYLOAD_BYTES`."""
    if len(text) * 4 <= PAYLOAD_BYTES:  # cheap: no character takes more than 4 bytes
        return None
    size = utf8_bytes(text)
    return size if size > PAYLOAD_BYTES else None


def check_payload(text: str, subject: str) -> None:
    """``States.DataLimitExceeded`` when ``text`` (a JSON value as the engine stores it) is
    over the quota. ``subject`` starts the cause, as AWS words it ("The state/task 'X'
    returned a result")."""
    if over_payload_limit(text) is not None:
        raise StatesError(
            STATES_DATA_LIMIT_EXCEEDED,
            f"{subject} with a size exceeding the maximum number of bytes service limit.",
        )
