"""The ledger's rules, in one place; stores only keep records and check preconditions.

``perform`` is the whole protocol: claim → run ``fn`` once → record the outcome. The
lower-level ``claim`` / ``complete`` / ``fail`` / ``release`` / ``mark_unknown`` serve
handlers that need phases (pending → applied). Every status change is a conditional write
on status *and* owner, so a worker that lost its claim can never overwrite the winner.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from types import MappingProxyType, TracebackType
from typing import Any, NoReturn

from stepsaga._model.person import check_note
from stepsaga._util.clock import Clock, SystemClock
from stepsaga._util.paging import MAX_LIMIT, check_limit
from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    AttemptBudgetExhaustedError,
    BudgetExhaustedError,
    ConditionFailedError,
    IllegalTransitionError,
    InvalidActionError,
    InvalidInputError,
    NotFoundError,
    OutcomeUnknownError,
    ReplayWindowExpiredError,
    StepSagaError,
    StoreUnavailableError,
    describe,
)
from stepsaga.ledger import _approvals as approvals
from stepsaga.ledger import _latest as latest
from stepsaga.ledger import _revisions as revisions
from stepsaga.ledger._audit import seal
from stepsaga.ledger._canonical import iso_utc
from stepsaga.ledger._lease import lease_end
from stepsaga.ledger._models import (
    Action,
    Claim,
    EffectClass,
    ReconItem,
    ReconOutcome,
    ReconStatus,
    Record,
    Replay,
    ResolutionAudit,
    Signoff,
    Status,
    check_tenant,
)
from stepsaga.ledger._outcomes import ErrorFamily, Settlement, error_family, settlement_for
from stepsaga.ledger._paging import LedgerPage, decode_token, encode_token
from stepsaga.ledger._policy import LedgerPolicy
from stepsaga.ledger._store import Expect, LedgerStore, WriteOutcome, WriteResult
from stepsaga.ledger._writes import ExtraWrite, Scalar, Writes, checked

log = logging.getLogger(__name__)

#: Rounds of read → conditional write before contention is reported as unavailability.
MAX_ROUNDS = 8
#: Largest result / error / evidence stored (JSON characters).
MAX_JSON_CHARS = 64 * 1024

ActionFn = Callable[[Claim], Mapping[str, Any]]

#: ``json.dumps(value, allow_nan=False, sort_keys=True)``, built once (not on every call).
_STRICT_JSON = json.JSONEncoder(allow_nan=False, sort_keys=True)


@dataclass(frozen=True)
class Performed:
    """What ``Ledger.run`` did: the result, and whether it was replayed (no effect)."""

    result: dict[str, Any]
    replayed: bool
    key: str


class Ledger:
    """Claims, outcomes, budgets and reconciliation over one ``LedgerStore``."""

    def __init__(
        self,
        store: LedgerStore,
        *,
        clock: Clock | None = None,
        policy: LedgerPolicy | None = None,
    ) -> None:
        self._store = store
        self._clock: Clock = clock or SystemClock()
        self._policy = policy or LedgerPolicy()

    @property
    def policy(self) -> LedgerPolicy:
        return self._policy

    @property
    def clock(self) -> Clock:
        return self._clock

    # --- the protocol --------------------------------------------------------------------

    def perform(
        self, action: Action, fn: ActionFn, *, writes: Writes | None = None
    ) -> dict[str, Any]:
        """Run ``fn`` at most once per successful claim and return its (recorded) result.

        A duplicate returns the recorded result, or raises the recorded failure again.
        An exception from ``fn`` is recorded and raised as ``ERROR_TABLE`` says (the same
        table the saga handlers use): ``RELEASED`` for a ``TransientError``,
        ``FAILED`` for a refusal, ``UNKNOWN`` (raised as ``OutcomeUnknownError``) for an
        uncertain or unexpected one — ``RELEASED`` (raised as ``TransientError``) for a
        blind write. A converted error carries ``fn``'s as its ``__cause__``. A result
        that cannot be stored counts as unexpected: the effect happened, unrecorded.

        ``writes`` (``stepsaga.ledger._writes``) commit in the claim's and the outcome's
        transactions; a replay writes none of them. Reads take none.
        """
        return self.run(action, fn, writes=writes).result

    def run(self, action: Action, fn: ActionFn, *, writes: Writes | None = None) -> Performed:
        """``perform``, telling a replay from a performed effect (for metrics)."""
        if not action.effect.recorded:
            if writes is not None:
                raise InvalidInputError(
                    f"{action.key}: read actions record nothing, so nothing commits with them",
                    field="writes",
                )
            claim = self._transient_claim(action)
        else:
            granted = self.claim(action, writes=writes.with_claim if writes else ())
            if isinstance(granted, Replay):
                return Performed(granted.unwrap(), replayed=True, key=action.key)
            claim = granted
        try:
            returned = fn(claim)
        except Exception as exc:
            _reraise(self._settle(claim, exc, error_family(exc), writes), exc)
        if claim.transient:
            return Performed(_as_result(returned), replayed=False, key=action.key)
        try:
            result = _as_result(returned)
        except InvalidInputError as exc:
            _reraise(self._settle(claim, exc, ErrorFamily.UNEXPECTED), exc)
        try:
            completed = self._finish(claim, Status.COMPLETED, result=result, writes=writes)
        except InvalidInputError as exc:
            if exc.data.get("field") != "writes":
                raise
            # The outcome writes built from the result cannot be stored: the effect
            # happened, unrecorded, like a result that cannot be stored.
            _reraise(self._settle(claim, exc, ErrorFamily.UNEXPECTED), exc)
        return Performed(dict(completed.result or {}), replayed=False, key=action.key)

    def claim(
        self,
        action: Action,
        *,
        writes: Sequence[ExtraWrite] = (),
        undo: str | None = None,
    ) -> Claim | Replay:
        """Take ownership of ``action`` for one attempt, or learn its final outcome.

        ``writes`` commit with the claim that creates the record, never with a later one
        (a takeover or a claim after a release follows a claim that already wrote them).

        The first claim of a revision after the first reads the latest earlier revision's
        record for the same operation (``revisions.py``): an identical applied effect is
        adopted (a ``Replay``, nothing sent), a changed or uncertain one is recorded
        ``UNKNOWN`` and raised as ``OutcomeUnknownError`` for a person to decide. ``undo``
        names the step's compensation, whose record says whether an earlier effect was
        undone.
        """
        if not action.effect.recorded:
            raise InvalidActionError(
                f"{action.key}: read actions are not recorded; call perform", field="effect"
            )
        extra = checked(writes)
        guard = latest.guard(action)
        digest = action.digest
        now = self._clock.now()
        self._check_window(action, now)
        current = self._store.get(action.key)
        decision: revisions.Decision | None = None
        for _ in range(MAX_ROUNDS):
            if current is None and _supersedes(action):
                if decision is None:
                    # No earlier revision may claim once this one reads them (latest.py).
                    if self._store.put_extra((guard,)).result is not WriteResult.WRITTEN:
                        raise latest.superseded(self._store, action)
                    decision = self._superseding(action, undo)
                if decision.verdict is not revisions.Verdict.PERFORM:
                    written, record = self._write_superseding(action, digest, decision, now, guard)
                    if written is None:
                        return Replay(record)
                    if written.result is WriteResult.WRITTEN:
                        raise OutcomeUnknownError(
                            decision.message,
                            key=action.key,
                            supersedes=record.terms.get(revisions.SUPERSEDES)
                            if record.terms
                            else None,
                        )
                    if written.result is WriteResult.CONDITION_FAILED:
                        raise latest.superseded(self._store, action)
                    current = written.current or self._store.get(action.key)
                    continue
            if current is None:
                outcome, claim = self._claim_new(action, digest, now, (*extra, guard))
            else:
                decided = self._claim_existing(current, action, digest, now, guard)
                if isinstance(decided, Replay):
                    return decided
                outcome, claim = decided
            if outcome.result is WriteResult.WRITTEN:
                return claim
            if outcome.result is WriteResult.BUDGET_SHORT:
                raise BudgetExhaustedError(
                    f"tenant {action.tenant_id}'s budget cannot cover {action.key} "
                    f"(cost {action.cost}, remaining {outcome.remaining})",
                    key=action.key,
                    tenant_id=action.tenant_id,
                    cost=action.cost,
                    remaining=outcome.remaining,
                )
            if outcome.result is WriteResult.CONDITION_FAILED:
                if outcome.failed_write == (len(extra) if current is None else 0):
                    raise latest.superseded(self._store, action)
                raise _condition_failed(action.key, extra, outcome)
            current = outcome.current if outcome.current else self._store.get(action.key)
        raise StoreUnavailableError(
            f"{action.key}: gave up after {MAX_ROUNDS} contended writes", key=action.key
        )

    def complete(
        self,
        claim: Claim,
        result: Mapping[str, Any],
        reference: str | None = None,
        *,
        writes: Writes | None = None,
    ) -> Record:
        """IN_PROGRESS → COMPLETED with the result replays will return (and ``writes``'
        outcome writes in the same transaction)."""
        if reference is not None and not isinstance(reference, str):
            raise InvalidInputError("reference must be a string", field="reference")
        payload = _as_result(result)
        return self._finish(
            claim, Status.COMPLETED, result=payload, reference=reference, writes=writes
        )

    def fail(
        self, claim: Claim, error: Mapping[str, Any], *, writes: Writes | None = None
    ) -> Record:
        """IN_PROGRESS → FAILED: the effect is known not to have happened; refunds the debit.

        ``error`` is ``StepSagaError.to_dict()`` (or ``{"error": name, "message": …}``);
        replays raise it again.
        """
        return self._finish(
            claim, Status.FAILED, error=_as_json_object(error, "error"), refund=True, writes=writes
        )

    def release(self, claim: Claim, reason: str) -> Record:
        """IN_PROGRESS → RELEASED: failed before dispatch; may be claimed again. Refunds."""
        return self._finish(claim, Status.RELEASED, error={"reason": _text(reason)}, refund=True)

    def mark_unknown(self, claim: Claim, reason: str) -> Record:
        """IN_PROGRESS → UNKNOWN: only reconciliation moves it on. Never refunds."""
        return self._finish(claim, Status.UNKNOWN, error={"reason": _text(reason)})

    def settle(
        self,
        claim: Claim,
        settlement: Settlement,
        error: BaseException,
        reason: str,
        *,
        writes: Writes | None = None,
    ) -> Record | None:
        """IN_PROGRESS → the status ``settlement`` names (a cell of ``ERROR_TABLE``) for a
        call that raised ``error``; ``None`` when it records nothing (reads).

        ``FAILED`` keeps ``error`` (replays raise it again); ``RELEASED`` and ``UNKNOWN``
        keep ``reason``, which must describe ``error`` without personal data.
        """
        if settlement.status is None:
            return None
        if settlement.status is Status.FAILED:
            failure = (
                error.to_dict()
                if isinstance(error, StepSagaError)
                else {"error": type(error).__name__, "message": reason}
            )
            return self.fail(claim, failure, writes=writes)
        if settlement.status is Status.RELEASED:
            return self.release(claim, reason)
        return self.mark_unknown(claim, reason)

    # --- reading -------------------------------------------------------------------------

    def get(self, key: str) -> Record | None:
        return self._store.get(key)

    # --- extra items (stepsaga.ledger._writes) --------------------------------------------

    def get_extra(self, pk: str, sk: str) -> dict[str, Scalar] | None:
        """An item that extra writes made (a session cursor), or None."""
        return self._store.get_extra(pk, sk)

    def write(self, writes: Sequence[ExtraWrite]) -> None:
        """Commit extra writes on their own, all or none (an approval flow issuing a key);
        ``ConditionFailedError`` when a condition does not hold."""
        extra = checked(writes, ledger_items=0)
        if not extra:
            return
        outcome = self._store.put_extra(extra)
        if outcome.result is not WriteResult.WRITTEN:
            raise _condition_failed(None, extra, outcome)

    def list(
        self,
        tenant: str | None = None,
        case: str | None = None,
        status: Status | str | None = None,
        limit: int | None = None,
    ) -> builtins.list[Record]:
        """Records matching every given filter, oldest first: every page (or ``limit``)."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise InvalidInputError("limit must be an integer", field="limit")
        if limit is not None and limit < 1:
            raise InvalidInputError("limit must be at least 1", field="limit")
        wanted = parse_status(status)
        found: builtins.list[Record] = []
        after: str | None = None
        while True:
            size = MAX_LIMIT if limit is None else min(MAX_LIMIT, limit - len(found))
            page = self._store.query(
                tenant=tenant, case=case, status=wanted, limit=size, after=after
            )
            found += page.items
            after = page.after
            if after is None or (limit is not None and len(found) >= limit):
                return found

    def page(
        self,
        tenant: str | None = None,
        case: str | None = None,
        status: Status | str | None = None,
        limit: int | None = None,
        next_token: str | None = None,
    ) -> LedgerPage[Record]:
        """One page of ``list`` (``limit`` 1 to 1000, default 100); ``next_token`` is the
        previous page's, with the same filters (else ``InvalidInputError``)."""
        size = check_limit(limit)
        wanted = parse_status(status)
        filters = (tenant, case, wanted.value if wanted else None)
        after = decode_token("records", filters, next_token)
        page = self._store.query(tenant=tenant, case=case, status=wanted, limit=size, after=after)
        return LedgerPage(page.items, encode_token("records", filters, page.after))

    # --- sweeping ------------------------------------------------------------------------

    def sweep(self) -> builtins.list[Record]:
        """Stale IN_PROGRESS (lease expired more than the grace ago) → UNKNOWN. No refunds."""
        swept: builtins.list[Record] = []
        token: str | None = None
        while True:
            page = self.sweep_page(limit=MAX_LIMIT, next_token=token)
            swept += page.items
            token = page.next_token
            if token is None:
                return swept

    def sweep_page(
        self, limit: int | None = None, next_token: str | None = None
    ) -> LedgerPage[Record]:
        """``sweep`` over at most ``limit`` stale claims (default 100): the ones it turned
        UNKNOWN, and a token to sweep on from the last one looked at."""
        size = check_limit(limit)
        after = decode_token("sweep", (), next_token)
        now = self._clock.now()
        swept: builtins.list[Record] = []
        stale = self._store.stale(
            lease_expired_before=now - self._policy.sweep_grace, limit=size, after=after
        )
        for record in stale.items:
            unknown, outcome = self._lease_expired(record, now, "; swept")
            if outcome.result is WriteResult.WRITTEN:
                swept.append(unknown)
        return LedgerPage(tuple(swept), encode_token("sweep", (), stale.after))

    def abandon(self, key: str, reason: str) -> Record | None:
        """IN_PROGRESS → UNKNOWN whatever its lease: the execution that held the claim was
        stopped, so nobody will record its outcome (a handler still running fails to, and
        its effect waits for reconciliation). Never refunds. Other statuses are returned
        unchanged; ``None`` if there is no record."""
        reason = _text(reason)
        for _ in range(MAX_ROUNDS):
            record = self._store.get(key)
            if record is None or record.status is not Status.IN_PROGRESS:
                return record
            unknown = replace(
                record,
                status=Status.UNKNOWN,
                lease_expires_at=None,
                error={"reason": reason},
                updated_at=self._clock.now(),
            )
            expect = Expect(Status.IN_PROGRESS, record.owner)
            if self._store.put(unknown, expect=expect).result is WriteResult.WRITTEN:
                return unknown
        raise StoreUnavailableError(f"{key}: gave up after {MAX_ROUNDS} contended writes", key=key)

    # --- budgets -------------------------------------------------------------------------

    def set_budget(self, tenant_id: str, amount: int) -> None:
        """Set the tenant's remaining budget (claims with a cost debit it)."""
        check_tenant(tenant_id)
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            raise InvalidInputError("budget amount must be a non-negative integer", field="amount")
        self._store.set_budget(tenant_id, amount)

    def budget(self, tenant_id: str) -> int | None:
        """The tenant's remaining budget, or None when it has none (costs are not debited)."""
        return self._store.get_budget(tenant_id)

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
        wanted = _item_status(status)
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
        wanted = _item_status(status)
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
        decided = _outcome(outcome)
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

    # --- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- the rules -----------------------------------------------------------------------

    def _check_window(self, action: Action, now: datetime) -> None:
        if now - action.intent.approved_at >= self._policy.retention:
            raise ReplayWindowExpiredError(
                f"{action.key}: approved at {iso_utc(action.intent.approved_at)}, longer ago "
                f"than the {self._policy.retention} retention window",
                key=action.key,
                approved_at=iso_utc(action.intent.approved_at),
            )

    def _expires_at(self, action: Action) -> datetime:
        # Whole seconds: what DynamoDB's TTL attribute can hold.
        return (action.intent.approved_at + self._policy.retention).replace(microsecond=0)

    def _superseding(self, action: Action, undo: str | None) -> revisions.Decision:
        """Read the latest earlier revision's record (and its undo) and apply the rule."""
        tenant, case, revision = action.tenant_id, action.intent.case_id, action.intent.revision
        earlier: Record | None = None
        lowest = max(1, revision - revisions.DIRECT_READS)
        for older in range(revision - 1, lowest - 1, -1):
            earlier = self._store.get(revisions.key_of(tenant, case, older, action.operation))
            if earlier is not None:
                break
        if earlier is None and lowest > 1:
            found = [
                record
                for record in self.list(tenant=tenant, case=case)
                if record.operation == action.operation and record.revision < lowest
            ]
            earlier = max(found, key=lambda record: record.revision, default=None)
        undone = None
        if earlier is not None and undo is not None:
            undone = self._store.get(f"{earlier.key}:compensate:{undo}")
        return revisions.decide(revision, action.operation, action.terms, earlier, undone)

    def _write_superseding(
        self,
        action: Action,
        digest: str,
        decision: revisions.Decision,
        now: datetime,
        guard: ExtraWrite,
    ) -> tuple[WriteOutcome | None, Record]:
        """Adopt (``COMPLETED`` with the earlier result; ``None``: written, replay it) or
        question (``UNKNOWN`` for a person) the earlier revision's effect. Nothing is
        debited: no effect is dispatched."""
        earlier = decision.earlier
        assert earlier is not None
        adopt = decision.verdict is revisions.Verdict.ADOPT
        marker = revisions.ADOPTED_FROM if adopt else revisions.SUPERSEDES
        record = Record(
            key=action.key,
            tenant_id=action.tenant_id,
            case_id=action.intent.case_id,
            revision=action.intent.revision,
            operation=action.operation,
            effect=action.effect,
            digest=digest,
            status=Status.COMPLETED if adopt else Status.UNKNOWN,
            owner=f"{marker}:{earlier.key}",
            lease_expires_at=None,
            attempts=0,
            result=dict(earlier.result or {}),
            error=None if adopt else {"reason": decision.message, marker: earlier.key},
            reference=earlier.reference,
            cost=None,  # the earlier record holds the effect's cost; a re-claim debits anew
            created_at=now,
            updated_at=now,
            expires_at=self._expires_at(action),
            terms={**action.terms, marker: earlier.key},
        )
        outcome = self._store.put(record, expect=None, extra=(guard,))
        if adopt and outcome.result is WriteResult.WRITTEN:
            return None, record
        return outcome, record

    def _claim_new(
        self, action: Action, digest: str, now: datetime, extra: tuple[ExtraWrite, ...] = ()
    ) -> tuple[WriteOutcome, Claim]:
        owner = _token()
        record = Record(
            key=action.key,
            tenant_id=action.tenant_id,
            case_id=action.intent.case_id,
            revision=action.intent.revision,
            operation=action.operation,
            effect=action.effect,
            digest=digest,
            status=Status.IN_PROGRESS,
            owner=owner,
            lease_expires_at=lease_end(now, self._policy.lease),
            attempts=1,
            result=None,
            error=None,
            reference=None,
            cost=action.cost,
            created_at=now,
            updated_at=now,
            expires_at=self._expires_at(action),
            terms=action.terms,
        )
        return self._write_debiting(record, None, action.cost, takeover=False, extra=extra)

    def _claim_existing(
        self, current: Record, action: Action, digest: str, now: datetime, guard: ExtraWrite
    ) -> Replay | tuple[WriteOutcome, Claim]:
        key = current.key
        if current.expired(now):
            raise ReplayWindowExpiredError(
                f"{key}: the record expired at {_iso(current.expires_at)} and no longer protects",
                key=key,
                expires_at=_iso(current.expires_at),
            )
        if current.digest != digest:
            raise ActionConflictError(
                f"{key} was already used with different parameters; nothing changed",
                key=key,
                stored_digest=current.digest,
                request_digest=digest,
            )
        if current.status in (Status.COMPLETED, Status.FAILED):
            return Replay(current)
        if current.status is Status.UNKNOWN:
            raise OutcomeUnknownError(
                f"{key}: the outcome is unknown; it waits for reconciliation",
                key=key,
                attempts=current.attempts,
            )
        if current.status is Status.IN_PROGRESS:
            if current.lease_live(now):
                assert current.lease_expires_at is not None
                raise ActionInProgressError(
                    f"{key}: another attempt holds the lease",
                    retry_after_seconds=max(0.0, (current.lease_expires_at - now).total_seconds()),
                    key=key,
                    attempts=current.attempts,
                )
            if not current.effect.takeover_safe:
                return self._lease_lost_physical(current, now)
        self._check_attempts(current)
        reclaimed = replace(
            current,
            status=Status.IN_PROGRESS,
            owner=_token(),
            lease_expires_at=lease_end(now, self._policy.lease),
            attempts=current.attempts + 1,
            error=None,
            cost=action.cost if current.status is Status.RELEASED else current.cost,
            updated_at=now,
        )
        expect = Expect(current.status, current.owner)
        if current.status is Status.RELEASED:
            # The release refunded the last debit; a new attempt debits again.
            return self._write_debiting(
                reclaimed, expect, action.cost, takeover=False, extra=(guard,)
            )
        # Takeover: the earlier attempt's debit stays with the action (same effect).
        outcome = self._put(reclaimed, expect, 0, (guard,))
        return outcome, _claim_of(reclaimed, takeover=True)

    def _lease_expired(
        self, record: Record, now: datetime, note: str = ""
    ) -> tuple[Record, WriteOutcome]:
        """IN_PROGRESS whose lease expired → UNKNOWN, if its owner still holds it."""
        unknown = replace(
            record,
            status=Status.UNKNOWN,
            lease_expires_at=None,
            error={"reason": f"lease expired at {_iso(record.lease_expires_at)}{note}"},
            updated_at=now,
        )
        return unknown, self._store.put(unknown, expect=Expect(Status.IN_PROGRESS, record.owner))

    def _lease_lost_physical(self, current: Record, now: datetime) -> tuple[WriteOutcome, Claim]:
        """An expired lease proves lost ownership, not a failed effect: UNKNOWN, then raise."""
        unknown, outcome = self._lease_expired(current, now)
        if outcome.result is WriteResult.WRITTEN:
            raise OutcomeUnknownError(
                f"{current.key}: the lease of attempt {current.attempts} expired; a physical "
                "effect may have happened, so it goes to reconciliation",
                key=current.key,
                attempts=current.attempts,
            )
        return outcome, _claim_of(unknown, takeover=False)  # never returned: not WRITTEN

    def _check_attempts(self, current: Record) -> None:
        if current.attempts >= self._policy.attempt_budget:
            raise AttemptBudgetExhaustedError(
                f"{current.key}: used all {self._policy.attempt_budget} attempts",
                key=current.key,
                attempts=current.attempts,
                attempt_budget=self._policy.attempt_budget,
            )

    def _write_debiting(
        self,
        record: Record,
        expect: Expect | None,
        cost: int | None,
        *,
        takeover: bool,
        extra: tuple[ExtraWrite, ...] = (),
    ) -> tuple[WriteOutcome, Claim]:
        """Write the claim and debit its cost in one transaction; tenants without a budget
        are not debited."""
        if cost:
            debited = replace(record, debited=cost)
            outcome = self._put(debited, expect, -cost, extra)
            if outcome.result is not WriteResult.NO_BUDGET:
                return outcome, _claim_of(outcome.written or debited, takeover=takeover)
        plain = record if record.debited == 0 else replace(record, debited=0)
        return self._put(plain, expect, 0, extra), _claim_of(plain, takeover=takeover)

    def _put(
        self, record: Record, expect: Expect | None, delta: int, extra: tuple[ExtraWrite, ...]
    ) -> WriteOutcome:
        """``store.put``, naming ``extra`` only when there is some (older wrappers)."""
        if extra:
            return self._store.put(record, expect=expect, budget_delta=delta, extra=extra)
        return self._store.put(record, expect=expect, budget_delta=delta)

    def _finish(
        self,
        claim: Claim,
        status: Status,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        reference: str | None = None,
        refund: bool = False,
        writes: Writes | None = None,
    ) -> Record:
        if claim.transient:
            raise IllegalTransitionError(
                f"{claim.key}: read actions have no record to change", key=claim.key
            )
        held = claim.record
        finished = replace(
            held,
            status=status,
            lease_expires_at=None,
            result=result,
            error=error,
            reference=reference if reference is not None else held.reference,
            debited=0 if refund else held.debited,
            updated_at=self._clock.now(),
        )
        final = status in (Status.COMPLETED, Status.FAILED)
        extra = writes.for_outcome(finished) if writes is not None and final else ()
        outcome = self._put(
            finished, Expect(Status.IN_PROGRESS, claim.owner), held.debited if refund else 0, extra
        )
        if outcome.result is WriteResult.WRITTEN:
            return finished
        if outcome.result is WriteResult.CONDITION_FAILED:
            self._unknown_after_condition(claim, finished, extra, outcome)
        current = outcome.current or self._store.get(claim.key)
        if current is not None and current.owner == claim.owner and current.status is status:
            return current  # the same transition, repeated (e.g. after a lost reply)
        raise IllegalTransitionError(
            f"{claim.key}: cannot record {status.value}; the claim is no longer held "
            f"(now {current.status.value if current else 'absent'})",
            key=claim.key,
            status=current.status.value if current else None,
            owner_changed=current is not None and current.owner != claim.owner,
        )

    def _unknown_after_condition(
        self,
        claim: Claim,
        finished: Record,
        extra: tuple[ExtraWrite, ...],
        outcome: WriteOutcome,
    ) -> NoReturn:
        """The effect's outcome is known but an outcome write's condition failed: the
        record and the caller's items cannot agree, so a person decides (``UNKNOWN``, the
        outcome kept as evidence; never refunded)."""
        failed = _condition_failed(claim.key, extra, outcome)
        unknown = replace(
            finished,
            status=Status.UNKNOWN,
            result=None,
            error={
                "reason": f"{failed.message}; outcome {finished.status.value} not recorded",
                "outcome": finished.status.value,
                "result": finished.result,
                "error": finished.error,
            },
            debited=claim.record.debited,
        )
        self._put(unknown, Expect(Status.IN_PROGRESS, claim.owner), 0, ())
        raise OutcomeUnknownError(
            f"{claim.key}: {failed.message}; the effect's outcome goes to reconciliation",
            key=claim.key,
            attempts=claim.attempt,
        ) from failed

    def _reconciled(
        self,
        item_id: str,
        record: Record,
        outcome: ReconOutcome,
        result: dict[str, Any],
        reference: str | None,
        by: str,
        note: str,
        now: datetime,
    ) -> tuple[Record | None, int]:
        """The record after an operator's finding (None: already there) and the refund."""
        uncertain = record.status is Status.UNKNOWN or (
            record.status is Status.IN_PROGRESS and not record.lease_live(now)
        )
        # The resolution owns the record from now on: a late worker's transition must fail.
        owner = f"reconciliation:{item_id}"
        if uncertain and outcome is ReconOutcome.APPLIED:
            return (
                replace(
                    record,
                    owner=owner,
                    status=Status.COMPLETED,
                    lease_expires_at=None,
                    result=result or dict(record.result or {}),
                    error=None,
                    reference=reference if reference is not None else record.reference,
                    updated_at=now,
                ),
                0,
            )
        # "Not applied" means "run it again": a person's decision grants one attempt past
        # the lifetime budget, or the step would be refused again and ask again, forever.
        attempts = min(record.attempts, self._policy.attempt_budget - 1)
        if uncertain:
            return (
                replace(
                    record,
                    owner=owner,
                    status=Status.RELEASED,
                    lease_expires_at=None,
                    attempts=attempts,
                    error={"reason": f"reconciled as not applied by {by}: {note}"},
                    debited=0,
                    updated_at=now,
                ),
                record.debited,
            )
        exhausted = record.status is Status.RELEASED and record.attempts > attempts
        if outcome is ReconOutcome.NOT_APPLIED and exhausted:
            granted = f"reconciled as not applied by {by}: {note}; one more attempt granted"
            return (
                replace(
                    record,
                    owner=owner,
                    attempts=attempts,
                    error={"reason": granted},
                    updated_at=now,
                ),
                0,
            )
        settled = {
            ReconOutcome.APPLIED: (Status.COMPLETED,),
            ReconOutcome.NOT_APPLIED: (Status.RELEASED, Status.FAILED),
        }[outcome]
        if record.status in settled:
            return None, 0
        raise IllegalTransitionError(
            f"{record.key} is {record.status.value}; it cannot be resolved as {outcome.value}",
            key=record.key,
            status=record.status.value,
        )

    def _transient_claim(self, action: Action) -> Claim:
        now = self._clock.now()
        record = Record(
            key=action.key,
            tenant_id=action.tenant_id,
            case_id=action.intent.case_id,
            revision=action.intent.revision,
            operation=action.operation,
            effect=action.effect,
            digest=action.digest,
            status=Status.IN_PROGRESS,
            owner="read",
            lease_expires_at=None,
            attempts=1,
            result=None,
            error=None,
            reference=None,
            cost=action.cost,
            created_at=now,
            updated_at=now,
            expires_at=self._expires_at(action),
        )
        return Claim(record=record, owner="read", attempt=1, transient=True)

    def _require_item(self, item_id: str) -> ReconItem:
        item = self._store.get_item(item_id)
        if item is None:
            raise NotFoundError(f"no reconciliation item {item_id!r}", item_id=item_id)
        return item

    def _settle(
        self,
        claim: Claim,
        exc: Exception,
        family: ErrorFamily,
        writes: Writes | None = None,
    ) -> BaseException:
        """Record what ``fn``'s exception says about the effect and return the error to
        raise. ``perform`` never calls ``fn`` twice, so a settlement's ``recall`` is not
        taken. If recording fails, the lease rules take over and the caller still sees
        the error."""
        decided = settlement_for(family, claim.record.effect)
        reason = describe(exc)
        try:
            self.settle(claim, decided, exc, reason, writes=writes)
        except StepSagaError as failure:
            log.warning("%s: could not record the outcome: %s", claim.key, failure.message)
        return decided.raised(exc, key=claim.key, attempts=claim.attempt, reason=reason)


def _condition_failed(
    key: str | None, extra: tuple[ExtraWrite, ...], outcome: WriteOutcome
) -> ConditionFailedError:
    index = outcome.failed_write if outcome.failed_write is not None else 0
    write = extra[index]
    kind = write.condition.kind.value if write.condition else "a condition"
    where = f"{key}: " if key else ""
    return ConditionFailedError(
        f"{where}extra write {index} ({write.pk}/{write.sk}) is not {kind} as required; "
        "nothing written",
        key=key,
        pk=write.pk,
        sk=write.sk,
        write=index,
    )


def _refused_same_person(item: ReconItem) -> IllegalTransitionError:
    first = item.first_approval
    assert first is not None
    return IllegalTransitionError(
        f"item {item.item_id} needs a second approver: {first.by} already approved "
        f"not_applied at {_iso(first.at)}; another person must decide",
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


def _supersedes(action: Action) -> bool:
    """Forward steps of a later revision consult the earlier ones; a compensation undoes
    its own revision's effect and never does."""
    return action.intent.revision > 1 and ":compensate:" not in action.operation


def item_id_for(record_key: str, reason: str) -> str:
    """Reconciliation items are idempotent per (action key, reason)."""
    digest = hashlib.sha256(f"{record_key}\x00{reason}".encode()).hexdigest()
    return f"rec-{digest[:24]}"


def _claim_of(record: Record, *, takeover: bool) -> Claim:
    return Claim(record=record, owner=record.owner, attempt=record.attempts, takeover=takeover)


def _token() -> str:
    """A claim's owner: 128 random bits as 32 hex digits (the form ``uuid4().hex`` had;
    ``secrets.token_hex(16)`` is this same call behind two more Python frames)."""
    return os.urandom(16).hex()


def _reraise(error: BaseException, cause: BaseException) -> NoReturn:
    """Raise ``error``, chained to ``cause`` unless it is ``cause`` itself."""
    if error is cause:
        raise cause
    raise error from cause


def _iso(value: datetime | None) -> str | None:
    return None if value is None else iso_utc(value)


def _text(value: object, name: str = "reason") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be a non-empty string", field=name)
    return value


def _item_status(status: ReconStatus | str | None) -> ReconStatus | None:
    if status is None:
        return None
    try:
        return ReconStatus(str(status).upper())
    except ValueError:
        raise InvalidInputError(
            f"unknown item status {status!r}; one of " + ", ".join(s.value for s in ReconStatus),
            field="status",
        ) from None


def parse_status(value: Status | str | None) -> Status | None:
    """A status filter from user input (any case); unknown names are bad input."""
    if value is None:
        return None
    try:
        return Status(str(value).upper())
    except ValueError:
        raise InvalidInputError(
            f"unknown status {value!r}; one of " + ", ".join(s.value for s in Status),
            field="status",
        ) from None


def _outcome(value: ReconOutcome | str) -> ReconOutcome:
    try:
        return ReconOutcome(str(value).lower())
    except ValueError:
        raise InvalidInputError(
            f"unknown outcome {value!r}; one of " + ", ".join(o.value for o in ReconOutcome),
            field="outcome",
        ) from None


def _as_json_object(value: object, name: str) -> dict[str, Any]:
    """A JSON object as it will read back from the store (tuples → lists and so on)."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a JSON object (a mapping)", field=name)
    try:
        text = _STRICT_JSON.encode(dict(value))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} is not JSON-serializable: {exc}", field=name) from None
    if len(text) > MAX_JSON_CHARS:
        # DynamoDB items stop at 400 KB; keep big payloads elsewhere and record a reference.
        raise InvalidInputError(f"{name} is larger than {MAX_JSON_CHARS} characters", field=name)
    decoded: dict[str, Any] = json.loads(text)
    return decoded


def _as_result(value: object) -> dict[str, Any]:
    return _as_json_object(value, "result")


__all__ = ["ActionFn", "EffectClass", "Ledger", "Performed", "item_id_for"]
