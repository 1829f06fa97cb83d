"""The boto3 clients the AWS backend uses, made in one place so tests can hand in their own
(moto's, or one wrapped in botocore's ``Stubber``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from stepsaga._aws.aws_region import region_from
from stepsaga.backends._aws.errors import aws_call

if TYPE_CHECKING:
    import boto3
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_stepfunctions import SFNClient

    from stepsaga.backends._aws.operators import IdentitySource


class FunctionInvoker(Protocol):
    """What ``lambda:InvokeFunction`` needs of a boto3 Lambda client (``cancel``)."""

    def invoke(self, *, FunctionName: str, Payload: bytes) -> Mapping[str, Any]: ...  # noqa: N803


class Clients(Protocol):
    def cloudformation(self) -> CloudFormationClient: ...

    def stepfunctions(self, region: str) -> SFNClient: ...

    def dynamodb(self, region: str) -> DynamoDBClient: ...

    def sts(self, region: str) -> IdentitySource: ...

    def lambda_(self, region: str) -> FunctionInvoker: ...

    def close(self) -> None: ...


@dataclass
class SessionClients:
    """Clients of one ``boto3.Session()`` (boto3's chain: ``AWS_PROFILE``, the shared config
    files…), made on first use and kept for the command. A client without an explicit
    region (CloudFormation, to read the stack) gets ``stepsaga._aws.aws_region``'s:
    ``$AWS_REGION``, then ``$AWS_DEFAULT_REGION``, then the profile's."""

    session: boto3.Session | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    _made: dict[tuple[str, str | None], object] = field(default_factory=dict)

    def cloudformation(self) -> CloudFormationClient:
        return cast("CloudFormationClient", self._client("cloudformation", None))

    def stepfunctions(self, region: str) -> SFNClient:
        return cast("SFNClient", self._client("stepfunctions", region))

    def dynamodb(self, region: str) -> DynamoDBClient:
        return cast("DynamoDBClient", self._client("dynamodb", region))

    def sts(self, region: str) -> IdentitySource:
        return cast("IdentitySource", self._client("sts", region))

    def lambda_(self, region: str) -> FunctionInvoker:
        return cast("FunctionInvoker", self._client("lambda", region))

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
                region_name = region or region_from(self.environ, self.session.region_name)
                self._made[key] = self.session.client(service, region_name=region_name)  # type: ignore[call-overload]
        return self._made[key]


@dataclass(frozen=True)
class FixedClients:
    """Given clients, whatever the region (tests). Without ``identity``, STS is a boto3
    client of the region (moto's under ``mock_aws``)."""

    sfn: SFNClient
    ddb: DynamoDBClient
    cfn: CloudFormationClient | None = None
    identity: IdentitySource | None = None

    def cloudformation(self) -> CloudFormationClient:
        if self.cfn is None:
            raise LookupError("no CloudFormation client was given")
        return self.cfn

    def stepfunctions(self, region: str) -> SFNClient:
        return self.sfn

    def dynamodb(self, region: str) -> DynamoDBClient:
        return self.ddb

    def sts(self, region: str) -> IdentitySource:
        if self.identity is not None:
            return self.identity
        import boto3

        return cast("IdentitySource", boto3.client("sts", region_name=region))

    def lambda_(self, region: str) -> FunctionInvoker:
        import boto3

        return cast("FunctionInvoker", boto3.client("lambda", region_name=region))

    def close(self) -> None:
        """The clients belong to whoever gave them."""
