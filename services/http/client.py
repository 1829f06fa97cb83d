"""One service's HTTP client: JSON in and out, our headers, every failure mapped once.

No retries here on purpose: retries belong to the state machine and the ledger's lifetime
attempt budget, and a hidden retry inside the client would spend attempts nobody counts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx

from services import error_mapping
from services.http.config import HttpTimeouts
from services.http.wire import WireFormatError
from services.values import Operation
from stepsaga import CallContext

T = TypeVar("T")

#: Headers every call carries. The tenant scopes identifiers downstream; the correlation id
#: (our action key) and attempt are for the service's logs only and never deduplicate.
TENANT_HEADER = "X-Tenant-Id"
CORRELATION_HEADER = "X-Correlation-Id"
ATTEMPT_HEADER = "X-Attempt"
IDEMPOTENCY_HEADER = "Idempotency-Key"


class JsonClient:
    def __init__(
        self,
        base_url: str,
        timeouts: HttpTimeouts,
        *,
        transport: httpx.BaseTransport | None = None,
        auth: httpx.Auth | None = None,
    ) -> None:
        """``auth``: e.g. ``ctx.signed_apis.auth(variable)`` for a service behind IAM."""
        self._http = httpx.Client(
            base_url=base_url,
            timeout=timeouts.to_httpx(),
            transport=transport,
            auth=auth,
            follow_redirects=False,
            headers={"Accept": "application/json"},
        )

    def close(self) -> None:
        self._http.close()

    def write(
        self,
        operation: Operation,
        ctx: CallContext,
        method: str,
        path: str,
        body: Mapping[str, Any] | None,
        parse: Callable[[Any], T],
        *,
        idempotency_key: str | None = None,
        errors: Mapping[int, Callable[[], Exception]] | None = None,
    ) -> T:
        """Send a request that may apply an effect. ``errors`` overrides the mapping for
        specific statuses (e.g. 404 on release → ``NotFoundError``)."""
        headers = self._headers(ctx)
        if idempotency_key is not None:
            headers[IDEMPOTENCY_HEADER] = idempotency_key
        response = self._send(operation, method, path, headers=headers, body=body)
        if response.is_success:
            return self._decode(operation, response, parse)
        override = (errors or {}).get(response.status_code)
        if override is not None:
            raise override()
        raise error_mapping.for_status(
            operation, response.status_code, response.content, response.headers
        )

    def read(
        self,
        operation: Operation,
        ctx: CallContext,
        path: str,
        parse: Callable[[Any], T | None],
        *,
        params: Mapping[str, str] | None = None,
    ) -> T | None:
        """A lookup: 404 is "absent" (``None``); every failure is ``TransientError``."""
        response = self._send(operation, "GET", path, headers=self._headers(ctx), params=params)
        if response.status_code == 404:
            return None
        if response.is_success:
            return self._decode(operation, response, parse)
        raise error_mapping.for_status(
            operation, response.status_code, response.content, response.headers
        )

    def _headers(self, ctx: CallContext) -> dict[str, str]:
        return {
            TENANT_HEADER: ctx.tenant_id,
            CORRELATION_HEADER: ctx.action_key,
            ATTEMPT_HEADER: str(ctx.attempt),
        }

    def _send(
        self,
        operation: Operation,
        method: str,
        path: str,
        *,
        headers: dict[str, str],
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        try:
            return self._http.request(method, path, headers=headers, json=body, params=params)
        except httpx.TransportError as exc:
            raise error_mapping.for_transport_error(operation, exc) from exc

    @staticmethod
    def _decode(operation: Operation, response: httpx.Response, parse: Callable[[Any], T]) -> T:
        try:
            return parse(json.loads(response.content))
        except (ValueError, RecursionError) as exc:  # WireFormatError is a ValueError
            reason = str(exc) if isinstance(exc, WireFormatError) else "not JSON"
            raise error_mapping.for_unreadable_reply(
                operation, response.status_code, reason
            ) from None


class HttpService:
    """What every HTTP adapter shares: one ``JsonClient`` per service base URL."""

    def __init__(
        self,
        base_url: str,
        timeouts: HttpTimeouts,
        *,
        transport: httpx.BaseTransport | None = None,
        auth: httpx.Auth | None = None,
    ) -> None:
        self._client = JsonClient(base_url, timeouts, transport=transport, auth=auth)

    def close(self) -> None:
        self._client.close()
