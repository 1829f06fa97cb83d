"""Calling the app's own AWS-fronted services signed with SigV4, from the function's role.

An API Gateway API (``execute-api``) or a Lambda function URL (``lambda``) with IAM auth
accepts a request only if it is signed with AWS credentials allowed to invoke it. The
construct (``FunctionSettings.signed_apis``) puts each API's base URL in a variable, its
service and region in ``STEPSAGA_SIGNED_APIS``, and grants the function's role
``execute-api:Invoke`` / ``lambda:InvokeFunctionUrl`` on exactly that API. Inside the
function::

    def aws(self, ctx: AwsContext) -> Clients:
        payments = ctx.signed_apis.client("PAYMENTS_API_URL", timeout=10.0)

Every request is then signed by botocore's own ``SigV4Auth`` with the role's credentials,
read from botocore's chain for each request (refreshed by botocore when they expire). No
key is ever in a variable, in this module's state or in its messages. The body's SHA-256
is sent as ``X-Amz-Content-SHA256`` (function URLs require it for a body) and signed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

import httpx

from stepsaga._aws.aws_region import region_from, valid_region
from stepsaga.errors import InvalidInputError, TransientError

if TYPE_CHECKING:
    from botocore.credentials import ReadOnlyCredentials

__all__ = [
    "CONTENT_SHA256",
    "ENV_SIGNED_APIS",
    "AwsSigV4",
    "SignedApis",
    "SignedService",
    "SignedTarget",
]

#: JSON object: variable (holding the base URL) → ``{"service": …, "region": …}``.
ENV_SIGNED_APIS: Final = "STEPSAGA_SIGNED_APIS"
CONTENT_SHA256: Final = "X-Amz-Content-SHA256"
#: What is signed besides the ``X-Amz-*`` headers: headers a transport or proxy does not
#: rewrite (``Host`` always; ``Content-Type`` when the request has one).
_SIGNED_HEADERS: Final = ("host", "content-type")
#: Headers the signer adds, copied onto the outgoing request.
_SIGNATURE_HEADERS: Final = ("Authorization", "X-Amz-Date", "X-Amz-Security-Token", CONTENT_SHA256)


class SignedService(StrEnum):
    """The signing name of what fronts the app's service."""

    EXECUTE_API = "execute-api"  # API Gateway (REST or HTTP API) with IAM auth
    LAMBDA = "lambda"  # a Lambda function URL with AuthType AWS_IAM


#: Credentials for one request: botocore's frozen triple (key, secret, token).
CredentialSource = Callable[[], "ReadOnlyCredentials"]


def _botocore_credentials() -> CredentialSource:
    """The function's role credentials from botocore's chain, frozen per request (a
    refreshable set refreshes itself before it expires)."""
    import botocore.session

    credentials = botocore.session.get_session().get_credentials()
    if credentials is None:
        raise TransientError("signed call: no AWS credentials in this environment")
    return credentials.get_frozen_credentials


class AwsSigV4(httpx.Auth):
    """An httpx ``Auth`` signing each request with botocore's ``SigV4Auth``."""

    requires_request_body = True

    def __init__(
        self, service: SignedService, region: str, credentials: CredentialSource | None = None
    ) -> None:
        self.service = SignedService(service)
        self.region = region
        self._credentials = credentials

    def __repr__(self) -> str:  # never the credentials
        return f"AwsSigV4(service={self.service.value!r}, region={self.region!r})"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        self.sign(request)
        yield request

    def sign(self, request: httpx.Request) -> None:
        """Add ``Authorization``, ``X-Amz-Date``, the token and the body hash to ``request``."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        if self._credentials is None:
            self._credentials = _botocore_credentials()
        body = request.content
        headers = {
            name: request.headers[name] for name in _SIGNED_HEADERS if name in request.headers
        }
        headers[CONTENT_SHA256] = hashlib.sha256(body).hexdigest()
        signed = AWSRequest(method=request.method, url=str(request.url), data=body, headers=headers)
        SigV4Auth(self._credentials(), self.service.value, self.region).add_auth(signed)
        for name in _SIGNATURE_HEADERS:
            if name in signed.headers:
                request.headers[name] = signed.headers[name]


@dataclass(frozen=True)
class SignedTarget:
    """One signed API as the function sees it: its base URL, signing name and region."""

    url: str
    service: SignedService
    region: str


@dataclass(frozen=True)
class SignedApis:
    """The signed APIs one function may call, by the variable that holds each base URL."""

    targets: Mapping[str, SignedTarget]
    credentials: CredentialSource | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_environ(
        cls, environ: Mapping[str, str], credentials: CredentialSource | None = None
    ) -> SignedApis:
        raw = environ.get(ENV_SIGNED_APIS, "").strip() or "{}"
        try:
            declared: dict[str, Any] = dict(json.loads(raw))
            parsed = {
                str(name): (SignedService(spec["service"]), spec.get("region"))
                for name, spec in declared.items()
            }
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidInputError(
                f"{ENV_SIGNED_APIS}: not a JSON object of variable → "
                '{"service": "execute-api"|"lambda", "region": …}',
                field=ENV_SIGNED_APIS,
            ) from exc
        targets = {}
        for name, (service, region) in parsed.items():
            url = environ.get(name, "").strip()
            if not url.startswith("https://"):
                raise InvalidInputError(
                    f"signed API {name}: the variable must hold an https:// base URL",
                    field=name,
                )
            where = region or region_from(environ)
            if not where or not valid_region(where):
                raise InvalidInputError(
                    f"signed API {name}: no region (set AWS_REGION)", field=name
                )
            targets[name] = SignedTarget(url, service, where)
        return cls(targets, credentials)

    def target(self, variable: str) -> SignedTarget:
        found = self.targets.get(variable)
        if found is None:
            granted = ", ".join(sorted(self.targets)) or "none"
            raise InvalidInputError(
                f"signed API {variable}: not configured for this function (its signed APIs: "
                f"{granted})",
                field=variable,
            )
        return found

    def auth(self, variable: str) -> AwsSigV4:
        """The signer for the API ``variable`` names (for a client the app builds itself)."""
        target = self.target(variable)
        return AwsSigV4(target.service, target.region, self.credentials)

    def client(self, variable: str, **options: Any) -> httpx.Client:
        """An ``httpx.Client`` on the API's base URL whose every request is signed;
        ``options`` are httpx's (``timeout``, ``transport``, ``headers``…)."""
        return httpx.Client(base_url=self.target(variable).url, auth=self.auth(variable), **options)
