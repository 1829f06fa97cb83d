"""The ledger's protocol and its rules: claim → run once → record the outcome (part of
:class:`~stepsaga.ledger.Ledger`; the module docstring of ``_rules`` tells the whole)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, NoReturn

from stepsaga._model.keys import action_key, compensation_of, is_compensation
from stepsaga._util.timestamps import iso_z
from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    AttemptBudgetExhaustedError,
    BudgetExhaustedError,
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
from stepsaga.ledger import _latest as latest
from stepsaga.ledger import _revisions as revisions
from stepsaga.ledger._budgets import LedgerBudgets
from stepsaga.ledger._lease import lease_end
from stepsaga.ledger._ledger_base import (
    MAX_ROUNDS,
    _as_json_object,
    _as_result,
    _condition_failed,
    _text,
    log,
)
from stepsaga.ledger._models import Action, Claim, ReconItem, ReconOutcome, Record, Replay, Status
from stepsaga.ledger._outcomes import ErrorFamily, Settlement, error_family, settlement_for
from stepsaga.ledger._store import Expect, WriteOutcome, WriteResult
from stepsaga.ledger._writes import ExtraWrite, Writes, checked

ActionFn = Callable[[Claim], Mapping[str, Any]]


@dataclass(frozen=True)
class Performed:
    """What ``Ledger.run`` did: the result, and whether it was replayed (no effect)."""

    result: dict[str, Any]
    replayed: bool
    key: str


class LedgerClaims(LedgerBudgets):
    """Claims and outcomes, and the rules that decide them."""

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

    # --- the rules -----------------------------------------------------------------------

    def _check_window(self, action: Action, now: datetime) -> None:
        if now - action.intent.approved_at >= self._policy.retention:
            raise ReplayWindowExpiredError(
                f"{action.key}: approved at {iso_z(action.intent.approved_at)}, longer ago "
                f"than the {self._policy.retention} retention window",
                key=action.key,
                approved_at=iso_z(action.intent.approved_at),
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
            earlier = self._store.get(action_key(tenant, case, older, action.operation))
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
            undone = self._store.get(compensation_of(earlier.key, undo))
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
                f"{key}: the record expired at {iso_z(current.expires_at)} and no longer protects",
                key=key,
                expires_at=iso_z(current.expires_at),
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


def _supersedes(action: Action) -> bool:
    """Forward steps of a later revision consult the earlier ones; a compensation undoes
    its own revision's effect and never does."""
    return action.intent.revision > 1 and not is_compensation(action.operation)


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
