"""Small builders shared by the ledger's test tiers (unit, conformance, chaos)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from stepsaga import EffectClass
from stepsaga.ledger import Action, Intent
from stepsaga.ledger._models import Claim

#: The tests' "now"; approvals happen shortly before it.
START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
APPROVED_AT = datetime(2026, 11, 29, 9, 30, tzinfo=UTC)


def make_action(
    operation: str = "refund_payment",
    *,
    tenant: str = "acme",
    case: str = "CASE-1001",
    revision: int = 1,
    effect: EffectClass | str = EffectClass.KEYED_WRITE,
    params: dict[str, Any] | None = None,
    cost: int | None = None,
    approved_at: datetime = APPROVED_AT,
) -> Action:
    return Action(
        tenant_id=tenant,
        intent=Intent(case, revision, approved_at),
        operation=operation,
        effect=EffectClass.parse(str(effect)),
        params=params
        if params is not None
        else {"payment_id": "PAY-991", "amount": "20.00", "currency": "USD"},
        cost=cost,
    )


class Counter:
    """Counts calls of an ``fn`` handed to ``perform`` and returns a fixed result."""

    def __init__(self, result: dict[str, Any] | None = None) -> None:
        self.calls = 0
        self.result = result if result is not None else {"refund_id": "RF-1"}

    def __call__(self, claim: object) -> dict[str, Any]:
        self.calls += 1
        return dict(self.result)


class Recorder:
    """An ``fn`` that keeps the claims it was handed."""

    def __init__(self, result: dict[str, Any] | None = None) -> None:
        self.claims: list[Claim] = []
        self.result = result if result is not None else {"ok": True}

    def __call__(self, claim: Claim) -> dict[str, Any]:
        self.claims.append(claim)
        return dict(self.result)

    @property
    def attempts(self) -> list[int]:
        return [claim.attempt for claim in self.claims]
