"""Opening items: one per (action key, reason), and a fresh one when the same question
comes back after it was answered.

The ledger keeps items idempotent per (key, reason): a retried reconciliation invocation
finds the item it opened. But the same situation can recur after a resolution (the budget
is still short after an operator said "go again"); answering it with the old, resolved
item would send the case round in a loop without anyone deciding. So a resolved item's
question is asked again as ``"<reason> (#2)"``, ``(#3)``…
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepsaga.errors import IllegalTransitionError
from stepsaga.ledger import Action, Ledger, ReconItem
from stepsaga.ledger._models import ReconStatus
from stepsaga.ledger._rules import item_id_for

MAX_OCCURRENCES = 100


def occurrence(reason: str, number: int) -> str:
    return reason if number == 1 else f"{reason} (#{number})"


def open_question(
    ledger: Ledger,
    subject: str | Action,
    reason: str,
    *,
    step: str,
    evidence: Mapping[str, Any],
    dual_control: bool = False,
) -> tuple[ReconItem, bool]:
    """The open item asking ``reason`` about ``subject`` and whether this call opened it.

    ``subject`` is a recorded action's key, or the ``Action`` itself when it may have no
    record (its first claim was refused before anything was written)."""
    record_key = subject if isinstance(subject, str) else subject.key
    for number in range(1, MAX_OCCURRENCES + 1):
        text = occurrence(reason, number)
        existing = ledger.get_item(item_id_for(record_key, text))
        if existing is None:
            if isinstance(subject, str):
                opened = ledger.open_item(
                    subject, text, step=step, evidence=evidence, dual_control=dual_control
                )
            else:
                opened = ledger.open_item_for(
                    subject, text, step=step, evidence=evidence, dual_control=dual_control
                )
            return opened, True
        if existing.status is ReconStatus.OPEN:
            return existing, False
    raise IllegalTransitionError(
        f"{record_key}: {reason!r} was asked and answered {MAX_OCCURRENCES} times; "
        "stop the execution instead of asking again",
        key=record_key,
    )


def record_once(
    ledger: Ledger,
    record_key: str,
    reason: str,
    *,
    step: str,
    evidence: Mapping[str, Any],
    dual_control: bool = False,
) -> tuple[ReconItem, bool]:
    """The item for (key, reason), opened if absent, returned as it is otherwise (an
    escalation or a failed compensation is one fact, recorded once)."""
    existing = ledger.get_item(item_id_for(record_key, reason))
    if existing is not None:
        return existing, False
    opened = ledger.open_item(
        record_key, reason, step=step, evidence=evidence, dual_control=dual_control
    )
    return opened, True
