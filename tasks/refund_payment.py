"""RefundPayment (``keyed_write``): payments accept our action key as ``Idempotency-Key``.

The same key replays the first refund (within the service's 24 h key window);
``find_refund_by_key`` finds it at any age, so a retry, a takeover after a crash or
reconciliation records the refund that exists instead of issuing a second one. Two refunds
on two orders are two cases, hence two keys: both happen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services import RefundRecord, RefundRequest, Services
from stepsaga import Absent, Call, Found, Lookup, Outcome, StepHandler
from workflows.case import Refund


def refund_outcome(refund: RefundRecord) -> Outcome:
    return Outcome(
        result={
            "refund_id": refund.refund_id,
            "payment_id": refund.payment_id,
            "amount": refund.amount.format(),
            "currency": refund.amount.currency,
        },
        reference=refund.refund_id,
    )


class RefundPayment(StepHandler[Refund, Services]):
    cost = 1

    def consequential(self, params: Refund) -> Mapping[str, Any]:
        return {"payment_id": params.payment_id, "amount": params.money}

    def perform(self, services: Services, call: Call[Refund]) -> Outcome:
        request = RefundRequest(
            payment_id=call.params.payment_id,
            amount=call.params.money,
            idempotency_key=call.action.key,
        )
        return refund_outcome(services.payments.refund(call.ctx, request))

    def lookup(self, services: Services, call: Call[Refund]) -> Lookup:
        found = services.payments.find_refund_by_key(call.ctx, call.action.key)
        if found is None:
            return Absent(f"payments.find_refund_by_key: no refund under {call.action.key}")
        outcome = refund_outcome(found)
        return Found(
            f"payments.find_refund_by_key: refund {found.refund_id} under {call.action.key}",
            outcome.result,
            outcome.reference,
        )
