"""Revisions supersede (docs/explanation/design.md): the one rule for a step of revision N > 1.

A new revision is a new approved intent with new action keys, but it must never repeat or
silently change an effect an earlier revision applied. So before its first claim, a step
reads the latest earlier revision's record for the same operation and :func:`decide` says:

=============================================  ===========  ============================
earlier record                                 verdict      what the claim does
=============================================  ===========  ============================
none, ``FAILED``, ``RELEASED``                 perform      claims as usual
``COMPLETED``, its undo ``COMPLETED``          perform      the effect was undone
``COMPLETED``, same terms                      adopt        records its result, no effect
``COMPLETED``, other terms (or none stored)    reconcile    ``UNKNOWN`` record → a person
``COMPLETED``, its undo uncertain              reconcile    ``UNKNOWN`` record → a person
``UNKNOWN``, ``IN_PROGRESS``                   reconcile    ``UNKNOWN`` record → a person
=============================================  ===========  ============================

"Terms" are the consequential parameters without the approval time (the request digest
covers the approval time, so it differs between revisions by design). A record keeps them
as a digest plus one short description per top-level field — money as ``20.00 USD``,
anything else as a hash — so a person reads what changed without the ledger holding
personal data: "revision 2 changes refund_payment already applied under revision 1:
amount 20.00 → 25.00 USD".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from stepsaga._model.money import Money
from stepsaga.errors import StepSagaError
from stepsaga.ledger._models import Record, Status

#: Earlier revisions read one key at a time before falling back to a query of the case.
DIRECT_READS = 16
#: Where a record keeps the key of the earlier revision's record it adopted or questioned.
SUPERSEDES = "supersedes"
ADOPTED_FROM = "adopted_from"


class Verdict(StrEnum):
    PERFORM = "perform"
    ADOPT = "adopt"
    RECONCILE = "reconcile"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    earlier: Record | None
    message: str


#: Earlier statuses that decide alone (COMPLETED depends on its undo and its terms).
_BY_STATUS = {
    Status.FAILED: Verdict.PERFORM,
    Status.RELEASED: Verdict.PERFORM,
    Status.UNKNOWN: Verdict.RECONCILE,
    Status.IN_PROGRESS: Verdict.RECONCILE,
}

#: What the undo (compensation) of a COMPLETED earlier effect says about it.
_BY_UNDO = {
    Status.COMPLETED: Verdict.PERFORM,
    Status.UNKNOWN: Verdict.RECONCILE,
    Status.IN_PROGRESS: Verdict.RECONCILE,
}


def terms_of(canonical: bytes) -> dict[str, Any]:
    """The record's ``terms`` from an action's canonical parameters."""
    normalized: dict[str, Any] = json.loads(canonical)
    return {"digest": hashlib.sha256(canonical).hexdigest(), "fields": _fields(normalized)}


def decide(
    revision: int,
    operation: str,
    terms: dict[str, Any],
    earlier: Record | None,
    undo: Record | None,
) -> Decision:
    """The verdict for ``operation`` of ``revision`` (see the module's table)."""
    if earlier is None:
        return Decision(Verdict.PERFORM, None, "no earlier revision recorded it")
    under = f"revision {revision} {operation}: revision {earlier.revision}'s record"
    if earlier.status is not Status.COMPLETED:
        verdict = _BY_STATUS[earlier.status]
        if verdict is Verdict.PERFORM:
            return Decision(verdict, earlier, f"{under} is {earlier.status.value}")
        return Decision(
            verdict,
            earlier,
            f"revision {revision} repeats {operation}, whose outcome under revision "
            f"{earlier.revision} is {earlier.status.value} (it may have happened): a person "
            "decides",
        )
    if undo is not None and undo.status in _BY_UNDO:
        verdict = _BY_UNDO[undo.status]
        if verdict is Verdict.PERFORM:
            return Decision(verdict, earlier, f"{under} was undone ({undo.key})")
        return Decision(
            verdict,
            earlier,
            f"revision {revision} repeats {operation}, applied under revision "
            f"{earlier.revision}, whose undo is {undo.status.value}: a person decides",
        )
    stored = earlier.terms
    if stored is not None and stored.get("digest") == terms["digest"]:
        return Decision(Verdict.ADOPT, earlier, f"{under} is COMPLETED with the same terms")
    changes = _changes(stored, terms)
    return Decision(
        Verdict.RECONCILE,
        earlier,
        f"revision {revision} changes {operation} already applied under revision "
        f"{earlier.revision}: {changes}",
    )


def _fields(normalized: dict[str, Any]) -> dict[str, str]:
    fields: dict[str, str] = {}
    rest = dict(normalized)
    shown = _money(rest)
    if shown is not None:  # the parameters themselves are an amount
        fields["amount"] = shown
        rest.pop("amount")
        rest.pop("currency")
    for name, value in sorted(rest.items()):
        fields[name] = _money(value) or _hashed(value)
    return fields


def _money(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    amount, currency = value.get("amount"), value.get("currency")
    if isinstance(amount, bool) or not isinstance(amount, int) or not isinstance(currency, str):
        return None
    try:
        return f"{Money(amount, currency).format()} {currency}"
    except StepSagaError:  # not a currency we know: a plain mapping, hashed
        return None


#: The values came out of canonical JSON: sorted compact JSON tells one from another (the
#: full digest above covers the canonical bytes exactly).
_FIELD_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _hashed(value: Any) -> str:
    return "#" + hashlib.sha256(_FIELD_JSON.encode(value).encode()).hexdigest()[:12]


def _changes(stored: dict[str, Any] | None, terms: dict[str, Any]) -> str:
    """``amount 20.00 → 25.00 USD; warehouse changed`` (what a person reads)."""
    if stored is None or not isinstance(stored.get("fields"), dict):
        return "its terms were not recorded, so they cannot be compared"
    before: dict[str, str] = stored["fields"]
    after: dict[str, str] = terms["fields"]
    parts: list[str] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if old is None:
            parts.append(f"{name} added")
        elif new is None:
            parts.append(f"{name} removed")
        elif old.startswith("#") or new.startswith("#"):
            parts.append(f"{name} changed")
        else:
            parts.append(f"{name} {_arrow(old, new)}")
    return "; ".join(parts) or "the parameters differ"


def _arrow(old: str, new: str) -> str:
    """``20.00 → 25.00 USD`` in one currency, ``20.00 USD → 25.00 EUR`` across two."""
    old_amount, _, old_currency = old.partition(" ")
    new_amount, _, new_currency = new.partition(" ")
    if old_currency == new_currency:
        return f"{old_amount} → {new_amount} {new_currency}"
    return f"{old} → {new}"
