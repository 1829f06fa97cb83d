"""Structured logs with correlation fields, and nothing personal in them.

Each invocation gets its own ``InvocationLog``: fields learned along the way (tenant, case,
action key, attempt, decision) are bound once and added to every line, without touching the
shared logger (so concurrent invocations never mix their fields). The logger itself is
injected: Powertools' ``Logger`` on Lambda (JSON to stdout, which CloudWatch keeps), the
same on stderr locally, a capturing one in tests.

Never bind the event, the params or a request: shipment params hold a name and an address.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Protocol, TextIO

from aws_lambda_powertools import Logger

#: Field names the stdlib ``LogRecord`` reserves; binding one would raise inside logging.
_RESERVED = frozenset(
    {
        "args",
        "asctime",
        "created",
        "exc_info",
        "exc_text",
        "filename",
        "funcName",
        "levelname",
        "levelno",
        "lineno",
        "message",
        "module",
        "msecs",
        "msg",
        "name",
        "pathname",
        "process",
        "processName",
        "relativeCreated",
        "stack_info",
        "thread",
        "threadName",
        "taskName",
    }
)

#: The fields also attached to metrics (as EMF metadata, never as dimensions).
CORRELATION_FIELDS = ("tenant_id", "case_id", "action_key", "attempt", "decision", "step")

LogValue = str | int | float | bool | None


class StructuredLogger(Protocol):
    """What handlers need of a logger (Powertools ``Logger`` and ``logging.Logger`` fit)."""

    def info(self, msg: object, *, extra: Mapping[str, object] | None = None) -> None: ...

    def warning(self, msg: object, *, extra: Mapping[str, object] | None = None) -> None: ...

    def error(self, msg: object, *, extra: Mapping[str, object] | None = None) -> None: ...


class _Execution(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def retry_count(self) -> int: ...


class CaseEvent(Protocol):
    """What ``bind_event`` reads from a validated task event."""

    @property
    def tenant_id(self) -> str: ...
    @property
    def case_id(self) -> str: ...
    @property
    def execution(self) -> _Execution: ...


class InvocationLog:
    """One invocation's log: bound fields plus the injected logger."""

    def __init__(self, logger: StructuredLogger, **fields: LogValue) -> None:
        self._logger = logger
        self._fields: dict[str, LogValue] = {}
        self.bind(**fields)

    def bind(self, **fields: LogValue) -> None:
        for name, value in fields.items():
            if name in _RESERVED:
                raise ValueError(f"log field {name!r} is reserved by the logging module")
            self._fields[name] = value

    def bind_event(self, event: CaseEvent) -> None:
        """The correlation fields every step and compensation event carries."""
        self.bind(
            tenant_id=event.tenant_id,
            case_id=event.case_id,
            execution=event.execution.name,
            retry_count=event.execution.retry_count,
        )

    @property
    def fields(self) -> dict[str, LogValue]:
        return dict(self._fields)

    def correlation(self) -> dict[str, str]:
        """The correlation fields that are set, as strings (EMF metadata)."""
        return {
            name: str(self._fields[name])
            for name in CORRELATION_FIELDS
            if self._fields.get(name) is not None
        }

    def info(self, msg: str, **fields: LogValue) -> None:
        self._logger.info(msg, extra=self._merge(fields))

    def warning(self, msg: str, **fields: LogValue) -> None:
        self._logger.warning(msg, extra=self._merge(fields))

    def error(self, msg: str, **fields: LogValue) -> None:
        self._logger.error(msg, extra=self._merge(fields))

    def _merge(self, fields: Mapping[str, LogValue]) -> dict[str, object]:
        merged: dict[str, object] = dict(self._fields)
        for name, value in fields.items():
            merged[f"{name}_" if name in _RESERVED else name] = value
        return merged


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time of each record (a CLI or test may
    swap it after the process-wide Powertools logger was configured)."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def powertools_logger(service: str, level: str = "INFO", *, to_stderr: bool = False) -> Logger:
    """Powertools' JSON logger. On Lambda it writes to stdout (CloudWatch); locally pass
    ``to_stderr`` so logs never mix with a command's ``--json`` output.

    Powertools configures one stdlib logger per service name, once per process: the first
    call for a name decides where its lines go; the level is set on every call (the last
    one wins), or a quiet first caller would silence every later one."""
    if to_stderr:
        logger = Logger(service=service, level=level, logger_handler=_CurrentStderr())
    else:
        logger = Logger(service=service, level=level)
    logger.setLevel(level)
    return logger
