"""What one operation does downstream: the only code that differs between handlers.

A task module (``tasks/refund_payment.py``) defines one ``Operation``: which parameters are
consequential (they make the request digest), how to perform the effect with the action
key, and how to *look* for it downstream (by key or business reference) so an uncertain
outcome can be reconciled instead of repeated. Everything else — the ledger, the
per-effect-class decisions, errors, logs and metrics — is shared machinery.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from stepsaga.ledger import Action
from stepsaga.reconciliation.lookup import Absent, Found, Lookup
from stepsaga.services import CallContext, Services

P = TypeVar("P", bound=BaseModel)

__all__ = ["Absent", "Call", "Found", "Lookup", "Operation", "Outcome"]


@dataclass(frozen=True)
class Call(Generic[P]):
    """One attempt at an action: who calls (``ctx``), with what, for which action.

    ``action.key`` is what goes downstream as the idempotency key / reservation id /
    business reference. ``original`` is the action a compensation undoes.
    """

    ctx: CallContext
    params: P
    action: Action
    original: Action | None = None


@dataclass(frozen=True)
class Outcome:
    """What the ledger records for a completed effect and replays return.

    ``result`` must hold no personal data (it is stored and logged as a whole);
    ``reference`` is the downstream id kept on the record (refund id, shipment id…).
    """

    result: Mapping[str, Any] = field(default_factory=dict)
    reference: str | None = None


class Operation(ABC, Generic[P]):
    """One side-effecting operation, named as in the saga (``refund_payment``)."""

    #: The saga's operation name (part of the action key).
    name: str
    #: The pydantic model of the step's ``params``.
    params_model: type[P]
    #: Debited from the tenant's budget (when it has one) with the claim; ``None`` = free.
    cost: int | None = None

    @abstractmethod
    def consequential(self, params: P) -> Mapping[str, Any]:
        """The parameters that make the request digest: same intent ⇔ same values."""

    @abstractmethod
    def perform(self, services: Services, call: Call[P]) -> Outcome:
        """Apply the effect once, passing ``call.action.key`` downstream where the service
        accepts a key. Raises only ``stepsaga.errors`` (the services already do)."""

    def lookup(self, services: Services, call: Call[P]) -> Lookup | None:
        """Look for the effect downstream; ``None`` if this operation cannot look (then an
        uncertain outcome always goes to a person). Raises ``TransientError`` if the
        lookup itself fails."""
        return None
