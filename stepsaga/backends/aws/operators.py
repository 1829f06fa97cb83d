"""Who resolves an item on AWS, and the audit record each resolution leaves.

On AWS the decider is not what an operator types: ``resolved_by`` is the caller's IAM
identity (``sts:GetCallerIdentity``, which needs no permission and cannot be forged by the
caller), so the ledger, the decision sent to the waiting case and the audit record all name
the same principal. ``--by`` is ignored there (the CLI says so).

The audit record (``AUDIT#{item_id}`` / ``RESOLUTION``, layout in ``stepsaga.ledger.table``)
is written once per item with a conditional put: it keeps the decision, the identity's
ARN, account and user id, and when it was recorded. Resolving again the same way (to resume
a case) writes it only if the first attempt could not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from stepsaga.backends.aws.errors import aws_call, error_code
from stepsaga.ledger import ReconItem
from stepsaga.ledger.table import AUDIT_PREFIX, AUDIT_SORT, PARTITION_KEY, SORT_KEY

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["CallerIdentity", "IdentitySource", "read_resolution_audit", "record_resolution"]


class IdentitySource(Protocol):
    """What ``sts:GetCallerIdentity`` needs of a boto3 STS client."""

    def get_caller_identity(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class CallerIdentity:
    """The IAM principal making the calls (an assumed role's session, a user…)."""

    arn: str
    account: str
    user_id: str

    @classmethod
    def of(cls, sts: IdentitySource) -> CallerIdentity:
        with aws_call("sts:GetCallerIdentity"):
            answer = sts.get_caller_identity()
        return cls(str(answer["Arn"]), str(answer["Account"]), str(answer["UserId"]))


def record_resolution(
    client: DynamoDBClient, table: str, item: ReconItem, caller: CallerIdentity, *, at: datetime
) -> bool:
    """Write the audit record of the resolved ``item``; False when it already exists."""
    record = {
        PARTITION_KEY: {"S": AUDIT_PREFIX + item.item_id},
        SORT_KEY: {"S": AUDIT_SORT},
        "item_id": {"S": item.item_id},
        "tenant_id": {"S": item.tenant_id},
        "case_id": {"S": item.case_id},
        "step": {"S": item.step},
        "action_key": {"S": item.record_key},
        "outcome": {"S": item.outcome.value if item.outcome else ""},
        "resolved_by": {"S": item.resolved_by or ""},
        "caller_arn": {"S": caller.arn},
        "caller_account": {"S": caller.account},
        "caller_user_id": {"S": caller.user_id},
        "note": {"S": item.note or ""},
        "recorded_at": {"S": at.isoformat()},
    }
    with aws_call("dynamodb:PutItem"):
        try:
            client.put_item(
                TableName=table,
                Item=record,
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": PARTITION_KEY},
            )
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
    return True


def read_resolution_audit(
    client: DynamoDBClient, table: str, item_id: str
) -> dict[str, str] | None:
    """The audit record of ``item_id`` as plain strings, or None."""
    with aws_call("dynamodb:GetItem"):
        answer = client.get_item(
            TableName=table,
            Key={PARTITION_KEY: {"S": AUDIT_PREFIX + item_id}, SORT_KEY: {"S": AUDIT_SORT}},
            ConsistentRead=True,
        )
    raw = answer.get("Item")
    if raw is None:
        return None
    return {name: str(value.get("S", "")) for name, value in raw.items()}
