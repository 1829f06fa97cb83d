"""Shipping over HTTP: no idempotency key exists, so the reference is our only handle.

A repeated ``create_shipment`` ships twice; only the ledger (and reconciliation by
reference) prevents that.
"""

from __future__ import annotations

from services.http import wire
from services.http.client import HttpService
from services.values import Operation, ShipmentRecord, ShipmentRequest
from stepsaga import CallContext


class HttpShipping(HttpService):
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
