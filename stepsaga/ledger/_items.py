"""The ledger's reconciliation items (part of :class:`~stepsaga.ledger.Ledger`)."""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from types import MappingProxyType
from typing import Any

from stepsaga._model.person import check_note
from stepsaga._util.paging import MAX_LIMIT, check_limit
from stepsaga._util.timestamps import iso_z
from stepsaga.errors import (
    IllegalTransitionError,
    InvalidInputError,
    NotFoundError,
    StepSagaError,
    StoreUnavailableError,
)
from stepsaga.ledger import _approvals as approvals
from stepsaga.ledger import _revisions as revisions
from stepsaga.ledger._audit import seal
from stepsaga.ledger._claims import LedgerClaims
from stepsaga.ledger._ledger_base import (
    MAX_ROUNDS,
    _as_json_object,
    _as_result,
    _text,
    log,
    parse_choice,
)
from stepsaga.ledger._models import (
    Action,
    ReconItem,
    ReconOutcome,
    ReconStatus,
    Record,
    ResolutionAudit,
    Signoff,
)
from stepsaga.ledger._paging import LedgerPage, decode_token, encode_token
from stepsaga.ledger._store import Expect, WriteResult


class LedgerItems(LedgerClaims):
    """Reconciliation items: opened, listed, decided, audited."""

    # --- reconciliation ------------------------------------------------------------------

    def open_item(
        self,
        record_key: str,
        reason: str,
        *,
        step: str,
        evidence: Mapping[str, Any],
        dual_control: bool = False,
    ) -> ReconItem:
        """Ask reconciliation about a recorded action; one item per (action key, reason).
        ``dual_control``: a person's ``not_applied`` needs a second person
        (``approvals.py``); the step that opens the item knows."""
        record = self._store.get(record_key)
        if record is None:
            raise NotFoundError(f"no ledger record {record_key!r}", key=record_key)
        return self._open(
            record_key, record.tenant_id, record.case_id, reason, step, evidence, dual_control
        )

    def open_item_for(
        self,
        action: Action,
        reason: str,
        *,
        step: str,
        evidence: Mapping[str, Any],
        dual_control: bool = False,
    ) -> ReconItem:
        """Ask about ``action`` whether or not it has a record: a claim refused before
        anything was written (tenant budget, replay window) leaves none, yet a person must
        decide. The item carries the action's tenant, case and key; ``resolve_item`` treats
        it as "nothing happened" while the action stays unrecorded."""
        return self._open(
            action.key,
            action.tenant_id,
            action.intent.case_id,
            reason,
            step,
            evidence,
            dual_control,
        )

    def _open(
        self,
        record_key: str,
        tenant_id: str,
        case_id: str,
        reason: str,
        step: str,
        evidence: Mapping[str, Any],
        dual_control: bool,
    ) -> ReconItem:
        reason, step = _text(reason, "reason"), _text(step, "step")
        item_id = item_id_for(record_key, reason)
        existing = self._store.get_item(item_id)
        if existing is not None:
            return existing
        now = self._clock.now()
        item = ReconItem(
            item_id=item_id,
            record_key=record_key,
            tenant_id=tenant_id,
            case_id=case_id,
            reason=reason,
            step=step,
            evidence=_as_json_object(evidence, "evidence"),
            status=ReconStatus.OPEN,
            created_at=now,
            updated_at=now,
            dual_control=bool(dual_control),
        )
        written = self._store.put_item(item, expect=None)
        if written.written:
            return item
        return written.current or self._require_item(item_id)

    def get_item(self, item_id: str) -> ReconItem | None:
        return self._store.get_item(item_id)

    def list_items(
        self,
        tenant: str | None = None,
        status: ReconStatus | str | None = None,
        case: str | None = None,
    ) -> builtins.list[ReconItem]:
        """Items matching every given filter, oldest first: every page."""
        wanted = parse_choice(ReconStatus, status, "item status")
        found: builtins.list[ReconItem] = []
        after: str | None = None
        while True:
            page = self._store.query_items(
                tenant=tenant, case=case, status=wanted, limit=MAX_LIMIT, after=after
            )
            found += page.items
            after = page.after
            if after is None:
                return found

    def page_items(
        self,
        tenant: str | None = None,
        status: ReconStatus | str | None = None,
        case: str | None = None,
        limit: int | None = None,
        next_token: str | None = None,
    ) -> LedgerPage[ReconItem]:
        """One page of ``list_items``, as ``page``."""
        size = check_limit(limit)
        wanted = parse_choice(ReconStatus, status, "item status")
        filters = (tenant, case, wanted.value if wanted else None)
        after = decode_token("items", filters, next_token)
        page = self._store.query_items(
            tenant=tenant, case=case, status=wanted, limit=size, after=after
        )
        return LedgerPage(page.items, encode_token("items", filters, page.after))

    def attach_task_token(self, item_id: str, token: str) -> ReconItem:
        """Remember the Step Functions task token to resume when the item is resolved.

        An item resolved before the token could be attached is returned as it is
        (``RESOLVED``, without this token): nobody will send it the decision, so the caller
        resumes the case itself, at once.
        """
        token = _text(token, "token")
        for _ in range(MAX_ROUNDS):
            item = self._require_item(item_id)
            if item.task_token == token or item.status is ReconStatus.RESOLVED:
                return item
            updated = replace(item, task_token=token, updated_at=self._clock.now())
            if self._store.put_item(updated, expect=ReconStatus.OPEN).written:
                return updated
        raise StoreUnavailableError(f"item {item_id}: too much contention", item_id=item_id)

    def detach_task_token(self, item_id: str) -> ReconItem:
        """Forget the task token of an OPEN item: its execution was stopped and no longer
        waits, so resolving the item records the finding and resumes nothing."""
        for _ in range(MAX_ROUNDS):
            item = self._require_item(item_id)
            if item.task_token is None or item.status is ReconStatus.RESOLVED:
                return item
            updated = replace(item, task_token=None, updated_at=self._clock.now())
            if self._store.put_item(updated, expect=ReconStatus.OPEN).written:
                return updated
        raise StoreUnavailableError(f"item {item_id}: too much contention", item_id=item_id)

    def resolve_item(
        self,
        item_id: str,
        outcome: ReconOutcome | str,
        by: str,
        note: str,
        result: Mapping[str, Any] | None = None,
        reference: str | None = None,
    ) -> ReconItem:
        """:meth:`decide_item`'s item (whoever wrote it)."""
        return self.decide_item(item_id, outcome, by, note, result, reference)[0]

    def decide_item(
        self,
        item_id: str,
        outcome: ReconOutcome | str,
        by: str,
        note: str,
        result: Mapping[str, Any] | None = None,
        reference: str | None = None,
        *,
        identity: Mapping[str, str] | None = None,
        automatic: bool = False,
    ) -> tuple[ReconItem, bool]:
        """Decide an uncertain action, in one transaction with its record and its audit
        record; returns the item and whether this call wrote it (``False``: it was already
        resolved the same way, perhaps a moment ago by an identical concurrent call).

        ``APPLIED`` → record COMPLETED with ``result`` (what replays return) and
        ``reference`` (the downstream id, e.g. the refund found by key; default: the one
        already recorded); ``NOT_APPLIED`` → record RELEASED (may be claimed again, with one
        more attempt if its lifetime attempt budget is spent) and the debit refunded.
        Resolving again with the same outcome returns the resolved item, unwritten.

        A dual-control item (``approvals.py``) takes a person's ``NOT_APPLIED`` twice, from
        two people: the first call records ``first_approval`` and returns the item still
        OPEN; the same person again, or another answering ``APPLIED``, is refused
        (``IllegalTransitionError``). ``automatic`` (``stepsaga:auto``) is exempt.
        ``identity`` is the signing identity's details the audit record keeps (AWS).
        A person's ``note`` is checked by ``stepsaga._model.person.check_note`` (one line, 1 to
        1000 printable characters).

        An action that was never claimed (no record: its first claim was refused) can
        only be ``NOT_APPLIED``: nothing happened, no record changes, and the step may run
        again with the same key. ``APPLIED`` is refused: the ledger never dispatched it and
        will not vouch for an effect made elsewhere.

        The item is written only if it still carries the task token and first approval it
        was read with, so a case that began to wait meanwhile is never lost, and of two
        first approvals racing only one counts as first.
        """
        decided = parse_choice(ReconOutcome, outcome, "outcome")
        by = _text(by, "by")
        # A person's note, from any door (CLI, console, server-side resolver), is held to the
        # one rule ``stop --note`` is; automatic reconciliation writes its own.
        note = _text(note, "note") if automatic else check_note(note, "note")
        payload = _as_result(result) if result is not None else {}
        if reference is not None:
            if not isinstance(reference, str) or not reference.strip():
                raise InvalidInputError("reference must be a non-empty string", field="reference")
            if decided is not ReconOutcome.APPLIED:
                raise InvalidInputError(
                    "reference names an applied effect; not_applied takes none", field="reference"
                )
        for _ in range(MAX_ROUNDS):
            item = self._require_item(item_id)
            if item.status is ReconStatus.RESOLVED:
                if item.outcome is decided:
                    return item, False
                raise IllegalTransitionError(
                    f"item {item_id} was already resolved as {item.outcome}", item_id=item_id
                )
            now = self._clock.now()
            mine = Signoff(by=by, at=now, note=note)
            step = approvals.next_step(item, decided, by, automatic=automatic)
            if step is approvals.ApprovalStep.REFUSE_SAME_PERSON:
                raise _refused_same_person(item)
            if step is approvals.ApprovalStep.REFUSE_DISAGREEMENT:
                raise _refused_disagreement(item, mine)
            if step is approvals.ApprovalStep.FIRST_APPROVAL:
                self._check_not_applied(item, now)
                pending = replace(item, first_approval=mine, updated_at=now)
                if self._store.put_first_approval(pending).written:
                    return pending, True
                continue  # another decision came first: decide again on what it wrote
            record = self._store.get(item.record_key)
            record_expect: Expect | None = None  # None: the record must still be absent
            new_record: Record | None = None
            delta = 0
            if record is None:
                _check_unclaimed(item, decided)
            else:
                new_record, delta = self._reconciled(
                    item_id, record, decided, payload, reference, by, note, now
                )
                record_expect = Expect(record.status, record.owner)
            first = item.first_approval if decided is ReconOutcome.NOT_APPLIED else None
            resolved = replace(
                item,
                status=ReconStatus.RESOLVED,
                outcome=decided,
                resolved_by=by,
                note=note,
                resolved_at=now,
                updated_at=now,
            )
            audit = ResolutionAudit(
                item_id=item.item_id,
                tenant_id=item.tenant_id,
                case_id=item.case_id,
                step=item.step,
                action_key=item.record_key,
                outcome=decided,
                deciders=(first, mine) if first is not None else (mine,),
                at=now,
                identity=MappingProxyType(dict(identity or {})),
            )
            # Sealed here, written by the resolution's own transaction (either store); the
            # item's first record, so it follows the item's genesis.
            audit = seal(audit)
            written = self._store.resolve(
                resolved,
                new_record,
                record_expect=record_expect,
                budget_delta=delta,
                audit=audit,
            )
            if written is WriteResult.WRITTEN:
                self._close_superseded(record, resolved, payload, reference, identity)
                return resolved, True
        raise StoreUnavailableError(f"item {item_id}: too much contention", item_id=item_id)

    def _close_superseded(
        self,
        record: Record | None,
        settled: ReconItem,
        result: dict[str, Any],
        reference: str | None,
        identity: Mapping[str, str] | None,
    ) -> None:
        """A later revision's item asked the same question as the earlier revision's open
        items (did that revision's effect happen?): settled here, they are closed with the
        same finding and a pointer to the item that settled them (the earlier record moves
        as the finding says; dual control was the settling item's). A failure leaves them
        open for a person; the settled item stays settled."""
        earlier = (record.terms or {}).get(revisions.SUPERSEDES) if record is not None else None
        if not isinstance(earlier, str) or record is None or settled.outcome is None:
            return
        pointer = (
            f"settled by revision {record.revision} (item {settled.item_id}, "
            f"{settled.outcome.value} by {settled.resolved_by}): {settled.note}"
        )
        for item in self.list_items(
            tenant=settled.tenant_id, status=ReconStatus.OPEN, case=settled.case_id
        ):
            if item.record_key != earlier:
                continue
            try:
                self.decide_item(
                    item.item_id,
                    settled.outcome,
                    str(settled.resolved_by),
                    pointer[:1000],
                    result,
                    reference,
                    identity=identity,
                    automatic=True,
                )
            except StepSagaError as exc:
                log.warning("item %s stays open: %s", item.item_id, exc.message)

    def get_audit(self, item_id: str) -> ResolutionAudit | None:
        """The audit record a resolution of ``item_id`` wrote, or None (still OPEN, or
        resolved before audit records were kept in the resolution's transaction)."""
        return self._store.get_audit(item_id)

    def _check_not_applied(self, item: ReconItem, now: datetime) -> None:
        """Refuse a first approval the final ``not_applied`` could never make (a record
        that cannot be resolved so), before asking a second person."""
        record = self._store.get(item.record_key)
        if record is not None:
            self._reconciled(
                item.item_id, record, ReconOutcome.NOT_APPLIED, {}, None, "-", "-", now
            )


def _refused_same_person(item: ReconItem) -> IllegalTransitionError:
    first = item.first_approval
    assert first is not None
    return IllegalTransitionError(
        f"item {item.item_id} needs a second approver: {first.by} already approved "
        f"not_applied at {iso_z(first.at)}; another person must decide",
        item_id=item.item_id,
        first_approver=first.by,
    )


def _refused_disagreement(item: ReconItem, mine: Signoff) -> IllegalTransitionError:
    first = item.first_approval
    assert first is not None
    return IllegalTransitionError(
        f"item {item.item_id}: disagreement, not resolved: {first.by} said not_applied "
        f"({first.note!r}), {mine.by} says applied ({mine.note!r}); agree first "
        f"({first.by} may answer applied)",
        item_id=item.item_id,
        first_approver=first.by,
        first_outcome=ReconOutcome.NOT_APPLIED.value,
        first_note=first.note,
        second_approver=mine.by,
        second_outcome=ReconOutcome.APPLIED.value,
        second_note=mine.note,
    )


def _check_unclaimed(item: ReconItem, outcome: ReconOutcome) -> None:
    """An item about an action with no record: only "nothing happened" is honest."""
    if outcome is ReconOutcome.APPLIED:
        raise IllegalTransitionError(
            f"item {item.item_id}: {item.record_key} was never claimed, so the ledger never "
            "dispatched it and cannot record it as applied; resolve it not_applied to run "
            "the step again with the same key, or stop the execution if the effect was made "
            "outside stepsaga",
            item_id=item.item_id,
            key=item.record_key,
        )


def item_id_for(record_key: str, reason: str) -> str:
    """Reconciliation items are idempotent per (action key, reason)."""
    digest = hashlib.sha256(f"{record_key}\x00{reason}".encode()).hexdigest()
    return f"rec-{digest[:24]}"
