"""The boto3 clients the AWS backend uses, made in one place so tests can hand in their own
(moto's, or one wrapped in botocore's ``Stubber``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from stepsaga.backends.aws.errors import aws_call

if TYPE_CHECKING:
    import boto3
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_stepfunctions import SFNClient


class StsClient(Protocol):
    """The one STS call the backend makes (``whoami``: the console's operator identity)."""

    def get_caller_identity(self) -> Any: ...


class Clients(Protocol):
    def cloudformation(self) -> CloudFormationClient: ...

    def sts(self, region: str) -> StsClient: ...

    def stepfunctions(self, region: str) -> SFNClient: ...

    def dynamodb(self, region: str) -> DynamoDBClient: ...

    def close(self) -> None: ...


@dataclass
class SessionClients:
    """Clients of one ``boto3.Session()`` (boto3's chain: ``AWS_PROFILE``, ``AWS_REGION``,
    the shared config files…), made on first use and kept for the command."""

    session: boto3.Session | None = None
    _made: dict[tuple[str, str | None], object] = field(default_factory=dict)

    def cloudformation(self) -> CloudFormationClient:
        return cast("CloudFormationClient", self._client("cloudformation", None))

    def stepfunctions(self, region: str) -> SFNClient:
        return cast("SFNClient", self._client("stepfunctions", region))

    def sts(self, region: str) -> StsClient:
        return cast(StsClient, self._client("sts", region))

    def dynamodb(self, region: str) -> DynamoDBClient:
        return cast("DynamoDBClient", self._client("dynamodb", region))

    def close(self) -> None:
        """Close the clients made here (their connection pools)."""
        for client in self._made.values():
            client.close()  # type: ignore[attr-defined]
        self._made.clear()

    def _client(self, service: str, region: str | None) -> object:
        key = (service, region)
        if key not in self._made:
            if self.session is None:
                import boto3  # deferred: the local backend never pays for boto3's import

                self.session = boto3.Session()
            with aws_call(f"{service} client"):
                self._made[key] = self.session.client(service, region_name=region)  # type: ignore[call-overload]
        return self._made[key]


@dataclass(frozen=True)
class FixedClients:
    """Given clients, whatever the region (tests)."""

    sfn: SFNClient
    ddb: DynamoDBClient
    cfn: CloudFormationClient | None = None
    sts_client: StsClient | None = None

    def cloudformation(self) -> CloudFormationClient:
        if self.cfn is None:
            raise LookupError("no CloudFormation client was given")
        return self.cfn

    def sts(self, region: str) -> StsClient:
        if self.sts_client is None:
            raise LookupError("no STS client was given")
        return self.sts_client

    def stepfunctions(self, region: str) -> SFNClient:
        return self.sfn

    def dynamodb(self, region: str) -> DynamoDBClient:
        return self.ddb

    def close(self) -> None:
        """The clients belong to whoever gave them."""
