"""Reading an execution's history: all of it (``history``), or what is new since the last
look (the progress notices while ``start``/``redrive``/``recon resolve`` follow a case)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stepsaga.backends._aws.errors import aws_call
from stepsaga.backends._progress import ProgressListener, from_history_event

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient


def all_events(sfn: SFNClient, execution_arn: str) -> list[dict[str, Any]]:
    """Every ``GetExecutionHistory`` event, oldest first, across all pages."""
    events: list[dict[str, Any]] = []
    paginator = sfn.get_paginator("get_execution_history")
    with aws_call("states:GetExecutionHistory"):
        for page in paginator.paginate(
            executionArn=execution_arn,
            reverseOrder=False,
            includeExecutionData=True,
            PaginationConfig={"PageSize": 1000},
        ):
            events.extend(dict(event) for event in page["events"])
    return events


@dataclass
class ProgressFeed:
    """Turns the events after ``seen`` (an event id) into progress notices, once each."""

    sfn: SFNClient
    execution_arn: str
    listener: ProgressListener
    seen: int = 0

    def report(self) -> None:
        fresh = [e for e in all_events(self.sfn, self.execution_arn) if int(e["id"]) > self.seen]
        for event in sorted(fresh, key=lambda e: int(e["id"])):
            self.seen = int(event["id"])
            notice = from_history_event(self.execution_arn, event)
            if notice is not None:
                self.listener(notice)


def last_event_id(sfn: SFNClient, execution_arn: str) -> int:
    """The newest event's id (0 for none): notices start after it."""
    return max((int(event["id"]) for event in all_events(sfn, execution_arn)), default=0)
