"""Writing a step handler: the only code that differs between sagas.

A step (or compensation) of a saga names its handler (``Step(..., handler="tasks.charge:
ChargeCard")``; by default ``tasks.<operation>:<StepName>``). The handler is a
``StepHandler`` subclass: ``perform`` applies the effect with the action key, ``lookup``
(optional) looks for it downstream so an uncertain outcome is reconciled instead of
repeated, ``consequential`` picks the parameters that make the request digest. The params
model comes from the step; the app's own clients (built by the project's ``Dependencies``)
are passed to every call. Everything else — ledger, per-effect-class decisions, errors,
logs, metrics — is shared machinery.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from stepsaga._model.refs import load_ref
from stepsaga._reconciliation.lookup import Absent, Found, Lookup
from stepsaga.errors import InvalidInputError
from stepsaga.ledger import Action

P = TypeVar("P")
D = TypeVar("D")

__all__ = [
    "Absent",
    "Call",
    "CallContext",
    "Found",
    "Lookup",
    "Outcome",
    "StepHandler",
    "load_step_handler",
]


@dataclass(frozen=True)
class CallContext:
    """Who is calling and for which action; what a downstream adapter may need.

    ``tenant_id`` scopes identifiers downstream (idempotency keys and references are per
    tenant). ``action_key`` is what goes downstream as the idempotency key or business
    reference; ``attempt`` is the ledger's attempt number, for correlation only.
    """

    tenant_id: str
    case_id: str
    action_key: str
    attempt: int = 1


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


class StepHandler(ABC, Generic[P, D]):
    """What one step does downstream. ``P`` is the step's params model, ``D`` the app's
    clients (whatever the project's ``Dependencies`` builds).

    What the effect class of the step means for ``perform``:

    * ``keyed_write`` — pass ``call.action.key`` downstream as the idempotency key. After an
      uncertain outcome ``perform`` may be called again with the *same* key (the
      downstream deduplicates), and after a crash or on a later attempt ``lookup`` runs
      first.
    * ``physical`` — no key downstream, irreversible. ``perform`` is never called again
      after an uncertain outcome: the record goes to reconciliation, which calls ``lookup``
      (search by business reference, e.g. the action key stored on the shipment).
    * ``blind_write`` — safe to repeat: any failure releases the claim and Step Functions
      retries.
    * ``read`` — nothing recorded; every failure is retryable.

    Raise only ``stepsaga.errors`` classes for known outcomes: ``TransientError`` (known
    not applied), ``OutcomeUnknownError`` (may have been applied),
    ``BusinessRejectedError`` (permanently refused), ``ActionConflictError`` (the key was
    used with other parameters downstream). Anything else counts as uncertain.
    """

    #: Debited from the tenant's budget (when it has one) with the claim; ``None`` = free.
    cost: int | None = None

    def consequential(self, params: P) -> Mapping[str, Any]:
        """The parameters that make the request digest: same intent ⇔ same values.
        Default: all of them. Leave out what may change without changing the intent."""
        if isinstance(params, BaseModel):
            return params.model_dump(mode="json", exclude_none=True)
        if isinstance(params, Mapping):
            return dict(params)
        raise TypeError(f"{type(self).__name__}: params must be a model or a mapping")

    @abstractmethod
    def perform(self, clients: D, call: Call[P]) -> Outcome:
        """Apply the effect once, passing ``call.action.key`` downstream where the service
        accepts a key."""

    def lookup(self, clients: D, call: Call[P]) -> Lookup | None:
        """Look for the effect downstream; ``None`` if this handler cannot look (then an
        uncertain outcome always goes to a person). Raise ``TransientError`` if the lookup
        itself fails."""
        return None


def load_step_handler(ref: str) -> StepHandler[Any, Any]:
    """The handler a ``module:attr`` reference names: a ``StepHandler`` subclass
    (instantiated without arguments) or instance. Every failure is one
    ``InvalidInputError``."""
    value = load_ref(ref, "handler")
    if isinstance(value, type) and issubclass(value, StepHandler):
        return value()
    if isinstance(value, StepHandler):
        return value
    raise InvalidInputError(f"handler {ref!r}: {type(value).__name__} is not a StepHandler")
