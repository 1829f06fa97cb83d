"""Case → execution pointers: how a case id finds its executions in O(1) AWS calls.

Every start path (``AwsBackend.start``, which the CLI and the console use, and the ingress
starter) puts one pointer item in the ledger table **before** ``StartExecution``:
``CASE#{case_id}`` / ``{tenant}#{revision:06d}`` (``stepsaga.ledger._table``) naming the
execution and when its start was recorded. One ``Query`` on ``CASE#{case_id}`` then gives
every tenant and revision of the case, however many executions the state machine has.

* **Idempotent**: the put is conditional on the item being absent; a re-start finds the
  same pointer (the first ``started_at`` is kept); a pointer naming another execution (a
  table shared with another state machine) is never overwritten: the start is refused.
* **Not started**: a crash between the put and ``StartExecution`` leaves a pointer whose
  ``DescribeExecution`` says ``ExecutionDoesNotExist``; readers treat it as not started
  (starting the case again is safe) and say so (:func:`why_missing`).
* **Forgotten by AWS**: AWS keeps closed executions 90 days; the pointer has no
  ``expires_at``, so it still names them, and :func:`why_missing` says that instead of
  "not found".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from stepsaga._util.timestamps import iso_z_seconds
from stepsaga.backends._assemble import CaseIdentity
from stepsaga.backends._aws.errors import aws_call, error_code
from stepsaga.backends._naming import execution_arn, execution_name
from stepsaga.errors import ExecutionAlreadyExists
from stepsaga.ledger._codec import parse_time, time_text
from stepsaga.ledger._table import CASE_PREFIX, PARTITION_KEY, POINTER_REVISION_DIGITS, SORT_KEY

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "AWS_KEEPS_CLOSED",
    "Pointer",
    "case_pointers",
    "get_pointer",
    "record_pointer",
    "why_missing",
]

#: How long Step Functions keeps a closed standard execution (its documented quota).
AWS_KEEPS_CLOSED: Final = timedelta(days=90)

Item = dict[str, Any]


@dataclass(frozen=True)
class Pointer:
    """One started revision of one tenant's case, and the execution that runs it."""

    tenant_id: str
    case_id: str
    revision: int
    execution_name: str
    execution_arn: str
    #: When the start was recorded (just before ``StartExecution``).
    started_at: datetime

    @classmethod
    def of(
        cls, state_machine_arn: str, tenant_id: str, case_id: str, revision: int, *, at: datetime
    ) -> Pointer:
        """The pointer a start of this revision on ``state_machine_arn`` writes."""
        name = execution_name(tenant_id, case_id, revision)
        return cls(tenant_id, case_id, revision, name, execution_arn(state_machine_arn, name), at)

    @property
    def identity(self) -> CaseIdentity:
        return CaseIdentity(self.tenant_id, self.case_id, self.revision)

    @staticmethod
    def key(tenant_id: str, case_id: str, revision: int) -> Item:
        """The table key of the pointer of this revision of this tenant's case."""
        return {
            PARTITION_KEY: {"S": CASE_PREFIX + case_id},
            SORT_KEY: {"S": f"{tenant_id}#{revision:0{POINTER_REVISION_DIGITS}d}"},
        }

    def item(self) -> Item:
        return {
            **self.key(self.tenant_id, self.case_id, self.revision),
            "tenant_id": {"S": self.tenant_id},
            "case_id": {"S": self.case_id},
            "revision": {"N": str(self.revision)},
            "execution_name": {"S": self.execution_name},
            "execution_arn": {"S": self.execution_arn},
            "started_at": {"S": time_text(self.started_at)},
        }

    @classmethod
    def from_item(cls, item: Item) -> Pointer:
        return cls(
            item["tenant_id"]["S"],
            item["case_id"]["S"],
            int(item["revision"]["N"]),
            item["execution_name"]["S"],
            item["execution_arn"]["S"],
            parse_time(item["started_at"]["S"]),
        )


def record_pointer(ddb: DynamoDBClient, table: str, pointer: Pointer) -> Pointer:
    """Put ``pointer`` unless one exists (one ``PutItem``); the stored pointer. A stored
    pointer naming another execution raises ``ExecutionAlreadyExists``, nothing written."""
    with aws_call("dynamodb:PutItem"):
        try:
            ddb.put_item(
                TableName=table,
                Item=pointer.item(),
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": PARTITION_KEY},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            old: Item = dict(exc.response.get("Item") or {})  # type: ignore[call-overload]
            stored = Pointer.from_item(old)
            if stored.execution_arn != pointer.execution_arn:
                raise ExecutionAlreadyExists(
                    f"case {pointer.case_id} revision {pointer.revision} of tenant "
                    f"{pointer.tenant_id} already runs as {stored.execution_arn} (ledger "
                    f"table {table}), not on this state machine; nothing was started",
                    field="case_id",
                    execution_arn=stored.execution_arn,
                ) from None
            return stored
    return pointer


def get_pointer(
    ddb: DynamoDBClient, table: str, tenant_id: str, case_id: str, revision: int
) -> Pointer | None:
    """The pointer of one revision of one tenant's case, if its start was recorded (one
    strongly consistent ``GetItem``)."""
    with aws_call("dynamodb:GetItem"):
        answer = ddb.get_item(
            TableName=table, Key=Pointer.key(tenant_id, case_id, revision), ConsistentRead=True
        )
    found = answer.get("Item")
    return Pointer.from_item(dict(found)) if found else None


def case_pointers(ddb: DynamoDBClient, table: str, case_id: str) -> list[Pointer]:
    """Every pointer of ``case_id``, all tenants and revisions: one strongly consistent
    ``Query`` (another page only past 1 MB, i.e. thousands of revisions)."""
    pointers: list[Pointer] = []
    paginator = ddb.get_paginator("query")
    with aws_call("dynamodb:Query"):
        for page in paginator.paginate(
            TableName=table,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": PARTITION_KEY},
            ExpressionAttributeValues={":pk": {"S": CASE_PREFIX + case_id}},
            ConsistentRead=True,
        ):
            pointers.extend(Pointer.from_item(item) for item in page.get("Items", []))
    return sorted(pointers, key=lambda p: (p.tenant_id, p.revision))


def why_missing(pointer: Pointer, now: datetime) -> str:
    """One line for a pointer whose execution ``DescribeExecution`` does not know."""
    what = (
        f"case {pointer.case_id} revision {pointer.revision} of tenant {pointer.tenant_id}: "
        f"execution {pointer.execution_name}"
    )
    if now - pointer.started_at > AWS_KEEPS_CLOSED:
        return (
            f"{what} (started {_shown(pointer.started_at)}) closed more than 90 days ago "
            "(AWS keeps 90 days)"
        )
    return (
        f"{what} was recorded at {_shown(pointer.started_at)} but never started (the "
        "start was interrupted before StartExecution); start the case again"
    )


def _shown(when: datetime) -> str:
    return iso_z_seconds(when)
