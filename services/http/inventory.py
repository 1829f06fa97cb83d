"""Inventory over HTTP: reservations are addressed by our reservation id (a natural key)."""

from __future__ import annotations

from urllib.parse import quote

from services.http import wire
from services.http.client import HttpService
from services.values import Operation, Reservation, ReserveRequest
from stepsaga import CallContext
from stepsaga.errors import NotFoundError


def _path(reservation_id: str) -> str:
    return f"/reservations/{quote(reservation_id, safe='')}"


class HttpInventory(HttpService):
    def reserve(self, ctx: CallContext, request: ReserveRequest) -> Reservation:
        # PUT to the id is idempotent by itself; the header says so to services that look.
        return self._client.write(
            Operation.RESERVE,
            ctx,
            "PUT",
            _path(request.reservation_id),
            wire.reserve_body(request),
            wire.reservation_from,
            idempotency_key=request.reservation_id,
        )

    def release(self, ctx: CallContext, reservation_id: str) -> Reservation:
        # Idempotent by definition (releasing a released reservation is a no-op), so no key:
        # reusing the reserve's key on another endpoint is an error for Stripe-like services.
        def not_found() -> Exception:
            return NotFoundError(
                f"inventory.release: no reservation {reservation_id}",
                service="inventory",
                operation="release",
                reservation_id=reservation_id,
            )

        return self._client.write(
            Operation.RELEASE,
            ctx,
            "POST",
            f"{_path(reservation_id)}/release",
            None,
            wire.reservation_from,
            errors={404: not_found},
        )

    def find_reservation(self, ctx: CallContext, reservation_id: str) -> Reservation | None:
        return self._client.read(
            Operation.FIND_RESERVATION, ctx, _path(reservation_id), wire.reservation_from
        )
