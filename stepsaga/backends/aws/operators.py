"""Who resolves an item on AWS, and the audit record each resolution leaves.

On AWS the decider is not what an operator types: ``resolved_by`` is the caller's IAM
identity (``sts:GetCallerIdentity``, which needs no permission and cannot be forged by the
caller), so the ledger, the decision sent to the waiting case and the audit record all name
the same principal. ``--by`` is ignored there (the CLI says so).

The audit record (``AUDIT#{item_id}`` / ``RESOLUTION``, layout in ``stepsaga.ledger.table``)
is one more ``Put`` (``attribute_not_exists``) in the resolution's own
``TransactWriteItems`` (``DynamoDBStore.resolve``): the decision, every decider (two under
dual control), their notes, the identity's ARN, account and user id (:meth:`CallerIdentity.details`)
and when. No resolution without its audit record, and never a second one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from stepsaga.backends.aws.errors import aws_call

__all__ = ["CallerIdentity", "IdentitySource"]


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

    def details(self) -> dict[str, str]:
        """What the audit record keeps of the identity (attribute names included)."""
        return {
            "caller_arn": self.arn,
            "caller_account": self.account,
            "caller_user_id": self.user_id,
        }
