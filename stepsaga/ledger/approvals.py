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

from enum import StrEnum

from stepsaga.ledger.models import Approval, ReconItem, ReconOutcome

__all__ = ["APPROVAL_RULES", "ApprovalStep", "Earlier", "next_step", "same_person"]


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


def same_person(a: str, b: str) -> bool:
    """Identities compare without case or surrounding space (``Ann@x`` is ``ann@x``)."""
    return a.strip().casefold() == b.strip().casefold()


def next_step(item: ReconItem, outcome: ReconOutcome, by: str, *, automatic: bool) -> ApprovalStep:
    """What ``by`` deciding ``outcome`` on the OPEN ``item`` does."""
    if automatic or not item.dual_control:
        return ApprovalStep.RESOLVE
    return APPROVAL_RULES[(outcome, _earlier(item.first_approval, by))]


def _earlier(first: Approval | None, by: str) -> Earlier:
    if first is None:
        return Earlier.NONE
    return Earlier.SAME_PERSON if same_person(first.by, by) else Earlier.OTHER_PERSON
