"""The ledger's reading, extra items and sweeping (part of :class:`~stepsaga.ledger.Ledger`)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from stepsaga._util.paging import MAX_LIMIT, check_limit
from stepsaga._util.timestamps import opt_iso_z
from stepsaga.errors import InvalidInputError, StoreUnavailableError
from stepsaga.ledger._ledger_base import (
    MAX_ROUNDS,
    LedgerBase,
    _condition_failed,
    _text,
    parse_status,
)
from stepsaga.ledger._models import Record, Status
from stepsaga.ledger._paging import LedgerPage, decode_token, encode_token
from stepsaga.ledger._store import Expect, WriteOutcome, WriteResult
from stepsaga.ledger._writes import ExtraWrite, Scalar, checked


class LedgerListing(LedgerBase):
    """Records and extra items read, listed and swept."""

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

    def _lease_expired(
        self, record: Record, now: datetime, note: str = ""
    ) -> tuple[Record, WriteOutcome]:
        """IN_PROGRESS whose lease expired → UNKNOWN, if its owner still holds it."""
        unknown = replace(
            record,
            status=Status.UNKNOWN,
            lease_expires_at=None,
            error={"reason": f"lease expired at {opt_iso_z(record.lease_expires_at)}{note}"},
            updated_at=now,
        )
        return unknown, self._store.put(unknown, expect=Expect(Status.IN_PROGRESS, record.owner))
