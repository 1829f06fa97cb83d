"""CreateShipment (``physical``): shipping has no idempotency key; every call ships.

The shipment carries a business reference = our action key, which shipping stores and can
be searched by. The ledger's claim is written before the call, so a shipment is never
created twice by a retry; an uncertain outcome is recorded ``UNKNOWN`` and reconciled by
reference, never repeated blindly. The address goes on the wire only: never into the
digest's logs, the result, the ledger record or an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services import (
    Services,
    ShipmentLine,
    ShipmentRecord,
    ShipmentRequest,
    ShippingAddress,
)
from stepsaga import Absent, Call, Found, Lookup, Outcome, StepHandler
from workflows.case import Shipment


def shipment_reference(action_key: str) -> str:
    """The business reference of the shipment action ``action_key``."""
    return action_key


def shipment_outcome(shipment: ShipmentRecord) -> Outcome:
    return Outcome(
        result={"shipment_id": shipment.shipment_id, "reference": shipment.reference},
        reference=shipment.shipment_id,
    )


class CreateShipment(StepHandler[Shipment, Services]):
    cost = 1

    def consequential(self, params: Shipment) -> Mapping[str, Any]:
        # Where it goes and what: a changed address is another intent, not a replay. Only
        # the digest of this is stored.
        return params.model_dump(mode="json", exclude_none=True)

    def perform(self, services: Services, call: Call[Shipment]) -> Outcome:
        address = call.params.address
        request = ShipmentRequest(
            reference=shipment_reference(call.action.key),
            address=ShippingAddress(
                name=address.name,
                line1=address.line1,
                line2=address.line2,
                city=address.city,
                postal_code=address.postal_code,
                country=address.country,
            ),
            items=tuple(ShipmentLine(line.sku, line.quantity) for line in call.params.items),
        )
        return shipment_outcome(services.shipping.create_shipment(call.ctx, request))

    def lookup(self, services: Services, call: Call[Shipment]) -> Lookup:
        reference = shipment_reference(call.action.key)
        found = services.shipping.find_shipment_by_reference(call.ctx, reference)
        if found is None:
            return Absent(f"shipping.find_shipment_by_reference: no shipment for {reference}")
        outcome = shipment_outcome(found)
        return Found(
            f"shipping.find_shipment_by_reference: shipment {found.shipment_id} for {reference}",
            outcome.result,
            outcome.reference,
        )
