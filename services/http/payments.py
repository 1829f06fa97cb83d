"""Payments over HTTP: refunds carry our action key as ``Idempotency-Key``."""

from __future__ import annotations

from services.http import wire
from services.http.client import HttpService
from services.values import Operation, RefundRecord, RefundRequest
from stepsaga import CallContext


class HttpPayments(HttpService):
    def refund(self, ctx: CallContext, request: RefundRequest) -> RefundRecord:
        return self._client.write(
            Operation.REFUND,
            ctx,
            "POST",
            "/refunds",
            wire.refund_body(request),
            wire.refund_from,
            idempotency_key=request.idempotency_key,
        )

    def find_refund_by_key(self, ctx: CallContext, idempotency_key: str) -> RefundRecord | None:
        return self._client.read(
            Operation.FIND_REFUND_BY_KEY,
            ctx,
            "/refunds",
            wire.first_refund_from,
            params={"idempotency_key": idempotency_key},
        )
