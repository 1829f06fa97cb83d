"""Idempotency keys for agent tools (seed 001): one per intent, from the approval flow.

A key is 16 to 128 characters, minted where a person approves the intent (the UI, the
approval flow) and reused on every retry of that intent — never a model's tool-call id.
``KeyBook.issue`` records the key and its approval time beside the ledger's records;
``KeyBook.intent`` turns an issued key back into the ledger's ``Intent``. The approval time
starts the retention window and enters the request digest, so a key's deliveries all
share one digest, and a key older than the window is refused as any expired intent is.

The ledger's action key is ``{tenant}:ik-{sha256(key)[:40]}:r1:{tool}``: the tenant comes
from the server's authentication, never from the call, so two tenants' equal keys never
meet, and the hash keeps any key within the ledger's case-id alphabet.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Final

from stepsaga.clock import Clock, SystemClock
from stepsaga.errors import ConditionFailedError, InvalidInputError, NotFoundError
from stepsaga.ledger.codec import parse_time, time_text
from stepsaga.ledger.models import Intent, check_tenant
from stepsaga.ledger.rules import Ledger
from stepsaga.ledger.writes import ExtraWrite, absent

#: The key's length bounds (seed 001's input schema).
MIN_KEY_LENGTH: Final = 16
MAX_KEY_LENGTH: Final = 128
#: Where issued keys live beside the ledger's records.
KEY_PREFIX: Final = "IDEMPOTENCY#"
KEY_SORT: Final = "KEY"


def check_key(key: object) -> str:
    """A key of the right length, or one line naming ``idempotencyKey``."""
    if not isinstance(key, str) or not MIN_KEY_LENGTH <= len(key) <= MAX_KEY_LENGTH:
        raise InvalidInputError(
            f"idempotencyKey must be a string of {MIN_KEY_LENGTH} to {MAX_KEY_LENGTH} characters",
            field="idempotencyKey",
        )
    return key


def case_for_key(key: str) -> str:
    """The ledger's case id for a key: stable, and inside the case-id alphabet."""
    return "ik-" + hashlib.sha256(check_key(key).encode()).hexdigest()[:40]


class KeyBook:
    """Issued idempotency keys, stored in the ledger (SQLite file or DynamoDB table)."""

    def __init__(self, ledger: Ledger | Callable[[], Ledger], *, clock: Clock | None = None):
        self._ledger = ledger
        self._clock: Clock = clock or SystemClock()

    def _target(self) -> Ledger:
        return self._ledger if isinstance(self._ledger, Ledger) else self._ledger()

    def issue(
        self, tenant_id: str, *, approved_at: datetime | None = None, key: str | None = None
    ) -> str:
        """Record a key for one approved intent (a new random one unless given) and return
        it. Issuing a key twice is refused: a key names one intent."""
        check_tenant(tenant_id)
        key = check_key(key) if key is not None else secrets.token_urlsafe(24)
        when = approved_at or self._clock.now()
        Intent(case_for_key(key), 1, when)  # the same checks an intent gets
        try:
            self._target().write(
                [ExtraWrite(*_address(tenant_id, key), {"approved_at": time_text(when)}, absent())]
            )
        except ConditionFailedError:
            raise InvalidInputError(
                "idempotencyKey was already issued; mint a new one per intent",
                field="idempotencyKey",
            ) from None
        return key

    def intent(self, tenant_id: str, key: str) -> Intent:
        """The intent an issued key names; ``NotFoundError`` for a key never issued (to
        this tenant): a key the model made up protects nothing."""
        check_tenant(tenant_id)
        stored = self._target().get_extra(*_address(tenant_id, check_key(key)))
        approved = None if stored is None else stored.get("approved_at")
        if not isinstance(approved, str):
            raise NotFoundError(
                f"idempotencyKey was not issued to tenant {tenant_id} by the approval flow",
                tenant_id=tenant_id,
            )
        return Intent(case_for_key(key), 1, parse_time(approved))


def _address(tenant_id: str, key: str) -> tuple[str, str]:
    return f"{KEY_PREFIX}{tenant_id}#{key}", KEY_SORT


__all__ = ["MAX_KEY_LENGTH", "MIN_KEY_LENGTH", "KeyBook", "case_for_key", "check_key"]
