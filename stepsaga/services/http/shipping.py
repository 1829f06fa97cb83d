"""Shipping over HTTP: no idempotency key exists, so the reference is our only handle.

A repeated ``create_shipment`` ships twice; only the ledger (and reconciliation by
reference) prevents that.
"""

from __future__ import annotations

import httpx

from stepsaga.services.http import wire
from stepsaga.services.http.client import JsonClient
from stepsaga.services.http.config import HttpTimeouts
from stepsaga.services.values import CallContext, Operation, ShipmentRecord, ShipmentRequest


class HttpShipping:
    def __init__(
        self, base_url: str, timeouts: HttpTimeouts, *, transport: httpx.BaseTransport | None = None
    ) -> None:
        self._client = JsonClient(base_url, timeouts, transport=transport)

    def close(self) -> None:
        self._client.close()

    def create_shipment(self, ctx: CallContext, request: ShipmentRequest) -> ShipmentRecord:
        return self._client.write(
            Operation.CREATE_SHIPMENT,
            ctx,
            "POST",
            "/shipments",
            wire.shipment_body(request),
            wire.shipment_from,
        )

    def find_shipment_by_reference(self, ctx: CallContext, reference: str) -> ShipmentRecord | None:
        return self._client.read(
            Operation.FIND_SHIPMENT_BY_REFERENCE,
            ctx,
            "/shipments",
            wire.first_shipment_from,
            params={"reference": reference},
        )
