"""Values the engine hands out: statuses, progress notices, delays, waiting tasks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class ExecutionStatus(StrEnum):
    """``DescribeExecution.status`` values."""

    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    ABORTED = "ABORTED"
    PENDING_REDRIVE = "PENDING_REDRIVE"

    @property
    def redrivable(self) -> bool:
        return self in (ExecutionStatus.FAILED, ExecutionStatus.ABORTED, ExecutionStatus.TIMED_OUT)


class TokenStatus(StrEnum):
    """Where a ``.waitForTaskToken`` task's token stands."""

    WAITING = "WAITING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    CANCELLED = "CANCELLED"


class DelayKind(StrEnum):
    RETRY = "retry"
    WAIT = "wait"


@dataclass(frozen=True)
class Delay:
    """A wait the engine chose: before a retry (with the error that caused it) or in a
    ``Wait`` state. ``seconds`` is the delay chosen (what AWS would wait); ``slept`` what
    this process actually slept after ``time_scale``."""

    execution_arn: str
    event_id: int
    state_name: str
    kind: DelayKind
    attempt: int
    error: str | None
    seconds: float
    slept: float
    timestamp: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "executionArn": self.execution_arn,
            "eventId": self.event_id,
            "stateName": self.state_name,
            "kind": self.kind.value,
            "attempt": self.attempt,
            "error": self.error,
            "seconds": self.seconds,
            "slept": self.slept,
            "timestamp": self.timestamp,
        }


@dataclass(frozen=True)
class HistoryRecorded:
    """Progress notice: ``event`` (AWS ``HistoryEvent`` shape) was appended."""

    execution_arn: str
    event: dict[str, Any]


@dataclass(frozen=True)
class DelayChosen:
    """Progress notice: the engine is about to wait ``delay.seconds`` (scaled to
    ``delay.slept``)."""

    delay: Delay


EngineEvent = HistoryRecorded | DelayChosen


@dataclass(frozen=True)
class WaitingTask:
    """A ``.waitForTaskToken`` task waiting for ``send_task_success``/``failure``."""

    task_token: str
    execution_arn: str
    state_name: str
    created: datetime
    deadline: datetime | None
    heartbeat_deadline: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "taskToken": self.task_token,
            "executionArn": self.execution_arn,
            "stateName": self.state_name,
            "created": self.created,
            "deadline": self.deadline,
            "heartbeatDeadline": self.heartbeat_deadline,
        }
