"""Telling a person that a reconciliation item waits for them.

A ``Notice`` carries identifiers only (item, tenant, case, step, action key, reason) —
never params, addresses or free text from downstream services. On AWS ``SnsNotifier``
publishes it to the stack's reconciliation topic; locally ``NullNotifier`` (or
``RecordingNotifier`` in tests) stands in. Notifying is best effort: the scheduled
overdue check alarms on open items nobody looked at, whatever happened to a message.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from stepsaga.ledger import ReconItem

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

#: SNS subjects: ASCII, one line, at most 100 characters.
MAX_SUBJECT = 100


@dataclass(frozen=True)
class Notice:
    item_id: str
    tenant_id: str
    case_id: str
    step: str
    action_key: str
    reason: str
    #: Whether an execution is parked until the item is resolved.
    waiting: bool

    @classmethod
    def of(cls, item: ReconItem, *, waiting: bool) -> Notice:
        return cls(
            item_id=item.item_id,
            tenant_id=item.tenant_id,
            case_id=item.case_id,
            step=item.step,
            action_key=item.record_key,
            reason=item.reason,
            waiting=waiting,
        )

    @property
    def subject(self) -> str:
        what = "waits for a decision" if self.waiting else "needs a look"
        text = f"stepsaga: {self.tenant_id}/{self.case_id} {self.step} {what}"
        return text.encode("ascii", "replace").decode()[:MAX_SUBJECT]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Notifier(Protocol):
    def notify(self, notice: Notice) -> None: ...


class NullNotifier:
    def notify(self, notice: Notice) -> None:
        return None


@dataclass
class RecordingNotifier:
    notices: list[Notice] = field(default_factory=list)

    def notify(self, notice: Notice) -> None:
        self.notices.append(notice)


class SnsNotifier:
    """Publishes each notice to the reconciliation topic (JSON body, short subject)."""

    def __init__(self, client: SNSClient, topic_arn: str) -> None:
        self._client = client
        self._topic_arn = topic_arn

    def notify(self, notice: Notice) -> None:
        self._client.publish(
            TopicArn=self._topic_arn,
            Subject=notice.subject,
            Message=json.dumps(notice.to_json(), sort_keys=True),
            MessageAttributes={
                "tenant_id": {"DataType": "String", "StringValue": notice.tenant_id},
            },
        )
