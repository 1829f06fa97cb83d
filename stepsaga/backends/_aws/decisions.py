"""The operator's decisions on AWS go through the stack's resolver function.

Resolving an item (dual control included), stopping, cancelling and redriving an execution are
**requests** to the resolver (``stepsaga._aws.resolver``), a Lambda function URL with
``AuthType AWS_IAM``: Lambda checks the request's SigV4 signature and hands the function the
signer's identity in the request context, so the decider is who signed, never a field of the
body. The operator policy grants reads plus invoking that URL; only the resolver's role writes
reconciliation items and audit records.

Why a function URL rather than ``lambda:InvokeFunction``: a plain invocation gives the
function no caller identity, and its whole event (a made-up ``requestContext`` included) is
the caller's to write. The operator policy therefore grants ``lambda:InvokeFunction`` only
with ``lambda:InvokedViaFunctionUrl`` (AWS requires it next to ``lambda:InvokeFunctionUrl``
for URLs created since October 2025), so the URL is the only door.

:class:`DecisionRequest` is the one body both sides read (unknown fields refused: a request
that names a decider, a first approval or an identity is refused whole). :class:`Resolver`
signs and sends it with botocore's ``SigV4Auth`` (``stepsaga._aws.signing``) and turns an error
answer back into the stepsaga error it reports.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, overload

import httpx
from pydantic import ValidationError

from stepsaga._aws.signing import AwsSigV4, CredentialSource, SignedService
from stepsaga._model.case import StrictModel
from stepsaga._model.inputs import describe_validation_error
from stepsaga._project.deployment import ENV_RESOLVER_URL
from stepsaga.errors import InvalidInputError, StepSagaError, TransientError
from stepsaga.ledger._models import ReconOutcome

__all__ = [
    "ENV_RESOLVER_URL",
    "RESOLVER_TIMEOUT_SECONDS",
    "DecisionRequest",
    "ResolverClient",
    "error_from_answer",
]

#: Where requests go in tests (an in-process function URL); None: the network.
default_transport: httpx.BaseTransport | None = None
#: The resolver function's own timeout (the construct sets it): a ``cancel`` runs the
#: saga's compensations one after another inside one request.
RESOLVER_TIMEOUT_SECONDS = 300
#: Seconds to wait for the resolver's answer (it decides, resumes or undoes; it never
#: follows): a little longer than the function may run.
TIMEOUT_SECONDS = RESOLVER_TIMEOUT_SECONDS + 10.0

Action = Literal["resolve", "stop", "cancel", "redrive"]


class DecisionRequest(StrictModel):
    """What an operator asks the resolver; who asks is never part of it."""

    action: Action
    #: ``resolve``: the item, the outcome and the note.
    item_id: str | None = None
    outcome: ReconOutcome | None = None
    #: ``stop``/``cancel``/``redrive``: the execution reference (name, ARN or case id)
    #: and its tenant.
    ref: str | None = None
    tenant: str | None = None
    #: ``resolve``/``stop``/``cancel``: why.
    note: str | None = None

    @overload
    def given(self, name: Literal["outcome"]) -> ReconOutcome: ...
    @overload
    def given(self, name: Literal["item_id", "ref", "note"]) -> str: ...
    def given(self, name: str) -> object:
        """The field ``name``, required by this action (else one line naming it)."""
        value = getattr(self, name)
        if value is None:
            raise InvalidInputError(f"{name}: required for {self.action}", field=name)
        return value

    @classmethod
    def parse(cls, body: str | bytes) -> DecisionRequest:
        """The request in ``body`` (JSON), or one ``InvalidInputError`` naming the field."""
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            raise InvalidInputError("body: not JSON", field="body") from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            field, line = describe_validation_error(exc, "body")
            raise InvalidInputError(line, field=field) from None


def _error_classes() -> dict[str, type[StepSagaError]]:
    """Every stepsaga error class by its own name (not its routing name, which a subclass
    shares with its base)."""
    found: dict[str, type[StepSagaError]] = {}
    pending: list[type[StepSagaError]] = [StepSagaError]
    while pending:
        cls = pending.pop()
        found.setdefault(cls.__name__, cls)
        pending.extend(cls.__subclasses__())
    return found


def error_from_answer(status: int, answer: Mapping[str, Any]) -> StepSagaError:
    """The error the resolver reported (its class, ``type``, else its routing name
    ``error``; its message and data), as raised here."""
    name = str(answer.get("type") or answer.get("error", ""))
    message, data = str(answer.get("message", "")), answer.get("data")
    cls = _error_classes().get(name)
    if cls is None or not message:
        return TransientError(f"resolver answered HTTP {status}: {message or 'no message'}")
    return cls(message, **(dict(data) if isinstance(data, Mapping) else {}))


class ResolverClient:
    """Sends :class:`DecisionRequest` s to the resolver's function URL, signed (SigV4,
    signing name ``lambda``) with the caller's own credentials (boto3's chain)."""

    def __init__(
        self,
        url: str,
        region: str,
        *,
        credentials: CredentialSource | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not url.startswith("https://"):
            raise InvalidInputError(
                f"resolver URL {url!r}: must be an https:// function URL", field="resolver_url"
            )
        self.url = url
        self._client = httpx.Client(
            auth=AwsSigV4(SignedService.LAMBDA, region, credentials),
            timeout=TIMEOUT_SECONDS,
            transport=transport or default_transport,
        )

    def send(self, request: DecisionRequest) -> dict[str, Any]:
        """The resolver's answer to ``request``; its error, raised, if it refused."""
        body = request.model_dump_json(exclude_none=True)
        try:
            response = self._client.post(
                self.url, content=body, headers={"content-type": "application/json"}
            )
        except httpx.HTTPError as exc:
            raise TransientError(f"resolver: {type(exc).__name__}: {exc}") from exc
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        if not isinstance(answer, dict):
            answer = {}
        if response.status_code == 403 and "error" not in answer:
            raise InvalidInputError(
                "the resolver refused the request (HTTP 403): the caller may not invoke it "
                "(attach the stack's OperatorPolicyArn)",
                field="credentials",
            )
        if response.status_code != 200:
            raise error_from_answer(response.status_code, answer)
        return answer

    def close(self) -> None:
        self._client.close()
