"""Dual control: which decisions on an item need a second person — the one table.

A step declared ``Step(..., dual_control=True)`` opens its items (and its compensation's)
with ``ReconItem.dual_control`` set. ``not_applied`` on such an item makes the step run
again: if the person is wrong, the money moves twice (a second refund). So it takes two
different people; the first is recorded (``first_approval``) and the item stays OPEN.
``applied`` only replays an effect already recorded (nothing is paid twice): one person.

Automatic reconciliation (``stepsaga:auto``) decides from the downstream's own answer
looked up by the action key, not from a person's judgment, so it is not held to this rule.
"""

from __future__ import annotations

import unicodedata
from enum import StrEnum

from stepsaga.ledger._models import ReconItem, ReconOutcome, Signoff

__all__ = [
    "APPROVAL_RULES",
    "ApprovalStep",
    "Earlier",
    "identity_keys",
    "next_step",
    "same_person",
]


class Earlier(StrEnum):
    """The approval already recorded on the item, as seen by this decider."""

    NONE = "none"
    SAME_PERSON = "same_person"
    OTHER_PERSON = "other_person"


class ApprovalStep(StrEnum):
    """What a person's decision does to a dual-control item."""

    RESOLVE = "resolve"
    """The decision is final: resolve the item (with both approvals, if there are two)."""
    FIRST_APPROVAL = "first_approval"
    """Record the first approval; the item stays OPEN, awaiting a second approver."""
    REFUSE_SAME_PERSON = "refuse_same_person"
    """The first approver cannot be the second."""
    REFUSE_DISAGREEMENT = "refuse_disagreement"
    """Another person says ``applied`` where the first said ``not_applied``: people must
    agree first (the first approver may change their own answer to ``applied``)."""


#: (outcome, earlier approval) → step, for a person's decision on a dual-control item.
APPROVAL_RULES: dict[tuple[ReconOutcome, Earlier], ApprovalStep] = {
    (ReconOutcome.APPLIED, Earlier.NONE): ApprovalStep.RESOLVE,
    (ReconOutcome.APPLIED, Earlier.SAME_PERSON): ApprovalStep.RESOLVE,
    (ReconOutcome.APPLIED, Earlier.OTHER_PERSON): ApprovalStep.REFUSE_DISAGREEMENT,
    (ReconOutcome.NOT_APPLIED, Earlier.NONE): ApprovalStep.FIRST_APPROVAL,
    (ReconOutcome.NOT_APPLIED, Earlier.SAME_PERSON): ApprovalStep.REFUSE_SAME_PERSON,
    (ReconOutcome.NOT_APPLIED, Earlier.OTHER_PERSON): ApprovalStep.RESOLVE,
}


def identity_keys(identity: str) -> frozenset[str]:
    """What an identity looks like to a person reading it: its Unicode TR39 confusable
    skeletons (``disarm.skeleton_key``, digits folded as TR39 does) after NFKC, taken of
    the text as written and of its case fold, without surrounding space or a DNS name's
    root dot. ``kim@x`` written with a full-width or a Cyrillic ``k``, ``KIM@x`` and
    ``kim@x.`` all share a key with ``kim@x``. Two keys, because the skeleton of cased
    text folds ``I`` to ``l`` (``paypaI`` is ``paypal``) while that of folded text keeps
    ``i`` (``KIM`` is ``kim``): each catches a look-alike the other misses.
    """
    from disarm import skeleton_key  # Unicode tables: loaded by the verbs that compare people

    text = unicodedata.normalize("NFKC", identity).strip()
    keys = set()
    for form in (text, text.casefold()):
        key = skeleton_key(form, digit_policy="tr39").strip().rstrip(".")
        keys.add(key or form)
    return frozenset(keys)


def same_person(a: str, b: str) -> bool:
    """Whether two identities could be one person to a reader (:func:`identity_keys`).

    Dual control's one comparison: the embedded backend, the AWS backend and the AWS
    server-side resolver all call this function, so a look-alike of the first approver
    cannot pass for a second person anywhere. Erring towards "same" only ever asks for
    another approver.
    """
    return not identity_keys(a).isdisjoint(identity_keys(b))


def next_step(item: ReconItem, outcome: ReconOutcome, by: str, *, automatic: bool) -> ApprovalStep:
    """What ``by`` deciding ``outcome`` on the OPEN ``item`` does."""
    if automatic or not item.dual_control:
        return ApprovalStep.RESOLVE
    return APPROVAL_RULES[(outcome, _earlier(item.first_approval, by))]


def _earlier(first: Signoff | None, by: str) -> Earlier:
    if first is None:
        return Earlier.NONE
    return Earlier.SAME_PERSON if same_person(first.by, by) else Earlier.OTHER_PERSON
