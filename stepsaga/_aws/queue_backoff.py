"""Back off queued messages when AWS is busy, instead of burning their receives.

The framework's queue-fed functions (the ingress starter, the auto redriver) report a
message they could not handle as a batch item failure, and SQS delivers it again once its
visibility timeout passes; after the queue's ``maxReceiveCount`` deliveries it goes to the
dead-letter queue. When the failure is throttling (or the service being briefly
unavailable) retrying at the visibility timeout's pace only adds load, and a backlog after
an outage dead-letters valid messages within minutes. So a busy message gets a longer
visibility timeout (``ChangeMessageVisibility``), growing with its receive count: the few
receives it has are spread over hours, and the rest of the batch, once one call was
throttled, is backed off without calling AWS at all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from stepsaga.backends._aws.errors import aws_call
from stepsaga.errors import StepSagaError

__all__ = ["MAX_VISIBILITY_SECONDS", "Backoff", "VisibilityChanger", "back_off", "receive_count"]

#: SQS's longest visibility timeout (12 hours).
MAX_VISIBILITY_SECONDS: Final = 43_200


@dataclass(frozen=True)
class Backoff:
    """The visibility timeout of a busy message after its n-th receive:
    ``base_seconds * factor**(n - 1)``, drawn in 50-100 % of that (equal jitter from the
    message id: spread across messages, the same for one message), at most 12 hours."""

    base_seconds: int = 120
    factor: int = 4

    def __post_init__(self) -> None:
        if not 1 <= self.base_seconds <= MAX_VISIBILITY_SECONDS or self.factor < 1:
            raise ValueError("base_seconds: 1 to 43200, factor: at least 1")

    def seconds(self, receives: int, message_id: str) -> int:
        digest = hashlib.sha256(f"{message_id}#{receives}".encode()).digest()
        fraction = 0.5 + 0.5 * int.from_bytes(digest[:8], "big") / 2**64
        full = self.base_seconds * self.factor ** min(max(receives, 1) - 1, 20)
        return max(1, min(MAX_VISIBILITY_SECONDS, int(full * fraction)))


class VisibilityChanger(Protocol):
    """What backing off needs of a boto3 SQS client."""

    def change_message_visibility_batch(self, **kwargs: Any) -> Mapping[str, Any]: ...


def receive_count(record: Mapping[str, Any]) -> int:
    """``ApproximateReceiveCount`` of a Lambda SQS event record (1 when absent)."""
    attributes = record.get("attributes") or {}
    try:
        return max(1, int(attributes.get("ApproximateReceiveCount", 1)))
    except (TypeError, ValueError):
        return 1


def back_off(
    sqs: VisibilityChanger,
    queue_url: str,
    records: Sequence[Mapping[str, Any]],
    backoff: Backoff,
) -> dict[str, int]:
    """Give each record its busy visibility timeout (one ``ChangeMessageVisibilityBatch``
    per 10); message id → seconds. The caller still reports them as batch item failures.
    Should the change itself fail, the messages come back at the queue's own timeout: the
    failure is logged, not raised (the batch's other outcomes stand)."""
    timeouts: dict[str, int] = {}
    entries = []
    for index, record in enumerate(records):
        message_id = str(record.get("messageId", ""))
        handle = record.get("receiptHandle")
        if not handle:
            continue
        seconds = backoff.seconds(receive_count(record), message_id)
        timeouts[message_id] = seconds
        entries.append({"Id": str(index), "ReceiptHandle": handle, "VisibilityTimeout": seconds})
    for start in range(0, len(entries), 10):
        try:
            with aws_call("sqs:ChangeMessageVisibilityBatch"):
                sqs.change_message_visibility_batch(
                    QueueUrl=queue_url, Entries=entries[start : start + 10]
                )
        except StepSagaError as exc:
            print(json.dumps({"back_off": "failed", "error": exc.error_name()}), flush=True)
    return timeouts
