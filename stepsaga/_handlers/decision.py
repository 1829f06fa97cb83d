"""What a handler logs about an action, and the two choices that are not the ledger's table.

What an exception from a downstream call does to the record — per exception family,
effect class and whether it answers a same-key re-call — is ``stepsaga.ledger``'s
``ERROR_TABLE``, the one ``Ledger.perform`` uses too; ``decision_for`` names its settlements
for the ``decision`` log field. What remains here is the handlers' own:

* ``looks_before_acting`` — on an attempt after the first, a keyed write looks for the
  effect by key and a physical one by business reference, before acting again.
* ``SAME_KEY_RECALLS`` — how often a keyed write calls again with the same key after an
  uncertain outcome, within one attempt (the table says *whether* it may).

A takeover after an expired lease is the ledger's call: keyed and blind writes may take
over (and then look first), a physical action becomes ``UNKNOWN``.
"""

from __future__ import annotations

from enum import StrEnum

from stepsaga.ledger import Status
from stepsaga.ledger._models import EffectClass
from stepsaga.ledger._outcomes import ErrorFamily, Settlement

#: How many extra calls with the same key a keyed write makes after an uncertain outcome,
#: within one attempt (the downstream deduplicates on the key, so this cannot double it).
SAME_KEY_RECALLS = 1


class Decision(StrEnum):
    """What a handler did with an action; logged as the ``decision`` field."""

    PERFORMED = "performed"
    """The effect was applied now and recorded ``COMPLETED``."""
    REPLAYED = "replayed"
    """The ledger already had the final outcome: returned (or raised) it, nothing sent."""
    FOUND = "found_downstream"
    """A lookup found the effect of an earlier attempt: recorded it, nothing sent."""
    REJECTED = "rejected"
    """Permanently refused (or not applicable): recorded ``FAILED``."""
    CONFLICT = "conflict"
    """The key was used with other parameters (ledger or downstream): nothing changed."""
    RELEASED = "released"
    """Known not applied (or harmless to repeat): claim released for a retry."""
    RECALL_SAME_KEY = "recall_same_key"
    """Uncertain outcome of a keyed write: called again with the same key."""
    UNKNOWN = "unknown"
    """Uncertain outcome that must not be repeated: recorded ``UNKNOWN`` for reconciliation."""
    IN_PROGRESS = "in_progress"
    """Another attempt owns the action (a live lease): retry later."""
    REFUSED = "refused"
    """The ledger refused the claim (budget, attempt budget, replay window, unknown record)."""
    INVALID = "invalid"
    """The event failed validation or does not match the action it would claim."""


def decision_for(family: ErrorFamily, settlement: Settlement) -> Decision:
    """The ``decision`` logged for a recorded settlement of the ledger's ``ERROR_TABLE``."""
    if settlement.status is Status.FAILED:
        return Decision.CONFLICT if family is ErrorFamily.KEY_CONFLICT else Decision.REJECTED
    if settlement.status is Status.RELEASED:
        return Decision.RELEASED
    return Decision.UNKNOWN


def looks_before_acting(effect: EffectClass, attempt: int) -> bool:
    """Reconcile before repeating: on any attempt after the first, a keyed or physical
    action first looks for an earlier attempt's effect (by key / business reference).

    For a keyed write this also protects past the service's key window (payments forget a
    key after 24 h); for a physical action it protects against a late-landing request."""
    return attempt > 1 and effect in (EffectClass.KEYED_WRITE, EffectClass.PHYSICAL)
