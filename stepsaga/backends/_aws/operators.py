"""Who resolves an item on AWS, and the audit record each resolution leaves.

On AWS the decider is not what an operator types: ``resolved_by`` is the caller's IAM
identity (``sts:GetCallerIdentity``, which needs no permission and cannot be forged by the
caller), so the ledger, the decision sent to the waiting case and the audit record all name
the same principal. ``--by`` is ignored there (the CLI says so).

The audit record (``AUDIT#{item_id}`` / ``RESOLUTION``, layout in ``stepsaga.ledger._table``)
is one more ``Put`` (``attribute_not_exists``) in the resolution's own
``TransactWriteItems`` (``DynamoDBStore.resolve``): the decision, every decider (two under
dual control), their notes, the identity's ARN, account and user id (:meth:`CallerIdentity.details`)
and when. No resolution without its audit record, and never a second one.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from stepsaga.backends._aws.errors import aws_call

__all__ = ["CallerIdentity", "IdentitySource", "normalized"]

#: ARN resource types whose last part names a person: an assumed role's session, an IAM
#: user, a federated user (``…:assumed-role/ROLE/SESSION``, ``…:user/PATH/NAME``).
_PERSON_TYPES = ("assumed-role/", "user/", "federated-user/")


def normalized(identity: str) -> str:
    """The form identities are compared and recorded in: NFKC, case-folded, stripped (so
    ``ALICE``, ``alice`` and its full-width form are one person). Comparisons still go
    through ``stepsaga.ledger._approvals.same_person``, the one rule."""
    return unicodedata.normalize("NFKC", identity).casefold().strip()


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

    @classmethod
    def of_request(cls, event: Mapping[str, Any]) -> CallerIdentity | None:
        """The signer of a request to an ``AWS_IAM`` function URL, as Lambda verified it
        (``requestContext.authorizer.iam``); None when the event carries none."""
        context = event.get("requestContext")
        authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
        iam = authorizer.get("iam") if isinstance(authorizer, Mapping) else None
        if not isinstance(iam, Mapping):
            return None
        arn, account, user_id = (iam.get(k) for k in ("userArn", "accountId", "userId"))
        if not all(isinstance(v, str) and v for v in (arn, account, user_id)):
            return None
        return cls(str(arn), str(account), str(user_id))

    @property
    def person(self) -> str:
        """Who decides, for dual control: the role session's name of an assumed role (the
        same person under two roles is one person), an IAM or federated user's name, else
        the whole ARN; :func:`normalized`. A session name names a person only when the
        operator role's trust policy binds it (``sts:RoleSessionName``,
        docs/reference/operating-aws.md)."""
        _, _, resource = self.arn.partition(":" + self.account + ":")
        for kind in _PERSON_TYPES:
            if resource.startswith(kind):
                return normalized(resource.rsplit("/", 1)[-1])
        return normalized(self.arn)

    def details(self) -> dict[str, str]:
        """What the audit record keeps of the identity (attribute names included)."""
        return {
            "caller_arn": self.arn,
            "caller_account": self.account,
            "caller_user_id": self.user_id,
        }
