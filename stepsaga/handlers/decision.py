"""Seed 003's decision tree, per effect class, in one place.

* ``read`` — nothing recorded; any failure is ``TransientError`` (a read can always be
  repeated).
* ``keyed_write`` — the action key goes downstream (Idempotency-Key, reservation id). On
  an attempt after the first it first looks for the effect by key. After an uncertain
  outcome (timeout after dispatch, 5xx, lost reply) it calls again once with the same key;
  still uncertain → ``UNKNOWN`` + ``OutcomeUnknownError`` (reconciliation looks by key).
* ``blind_write`` — after an uncertain outcome: ``RELEASED`` + ``TransientError``;
  repeating is harmless, so Step Functions simply retries.
* ``physical`` — never repeated on doubt: an uncertain outcome is ``UNKNOWN`` +
  ``OutcomeUnknownError``; on an attempt after the first it first looks for the effect by
  business reference.
* an unexpected (non-stepsaga) error while calling: as an uncertain outcome, without the
  same-key call (``RELEASED`` for blind writes and reads, ``UNKNOWN`` otherwise).

Common to every recorded class: the claim is written before dispatch and the outcome after
(pending → applied); a rejection is ``FAILED`` (replays raise it again) — unless it answers
the same-key call after an uncertain one, which stays uncertain (``UNKNOWN``); a failure known to
have happened before the effect (throttle, refused connection) is ``RELEASED`` + retry; a
downstream key conflict is ``FAILED`` + ``ActionConflictError``. A takeover after an
expired lease is the ledger's call: keyed and blind writes may take over (and then look
first), a physical action becomes ``UNKNOWN``.
"""

from __future__ import annotations

from enum import StrEnum

from stepsaga.ledger import EffectClass

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


def on_uncertain(effect: EffectClass, recalls_done: int) -> Decision:
    """After a call whose effect may or may not have happened."""
    if effect is EffectClass.KEYED_WRITE and recalls_done < SAME_KEY_RECALLS:
        return Decision.RECALL_SAME_KEY
    if effect in (EffectClass.BLIND_WRITE, EffectClass.READ):
        return Decision.RELEASED
    return Decision.UNKNOWN


def on_unexpected(effect: EffectClass) -> Decision:
    """After an exception that is not one of ours: we cannot tell whether the request left."""
    if effect in (EffectClass.BLIND_WRITE, EffectClass.READ):
        return Decision.RELEASED
    return Decision.UNKNOWN


def on_in_progress_downstream(effect: EffectClass) -> Decision:
    """The service says the same key is being processed right now: a keyed write releases
    and retries (the same key will meet the same request); anything else is uncertain."""
    if effect.takeover_safe:
        return Decision.RELEASED
    return Decision.UNKNOWN


def looks_before_acting(effect: EffectClass, attempt: int) -> bool:
    """Reconcile before repeating: on any attempt after the first, a keyed or physical
    action first looks for an earlier attempt's effect (by key / business reference).

    For a keyed write this also protects past the service's key window (payments forget a
    key after 24 h); for a physical action it protects against a late-landing request."""
    return attempt > 1 and effect in (EffectClass.KEYED_WRITE, EffectClass.PHYSICAL)
