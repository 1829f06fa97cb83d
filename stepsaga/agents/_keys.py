"""Idempotency keys for agent tools (seed 001): one per approved intent, bound to it.

A key is 16 to 128 characters, minted where a person approves the intent (the UI, the
approval flow, ``LedgeredTools.approval``) and reused on every retry of that intent — never
a model's tool-call id. ``KeyBook.issue`` records beside the ledger's records what was
approved: the tool, and either the exact arguments (their request digest) or ``Limits``
(fixed arguments, maximum amounts). ``KeyBook.grant`` reads it back as a ``Grant`` whose
``check`` refuses, in one line naming the approval, a call on another tool or outside it.
So one key is one effect across every tool of a server, and the arguments are the
person's, not the model's.

A key issued ``unbound=True`` approves no arguments: the first call decides them (the
ledger's digest check holds the rest to it) and binds the tool in the claim's own
transaction. That is weaker — a model holding the key picks the amount — and only for
hosts that have no approval step.

The approval time starts the retention window and enters the request digest, so a key's
deliveries all share one digest, and a key older than the window is refused as any
expired intent is. The ledger's action key is ``{tenant}:ik-{sha256(key)[:40]}:r1:{tool}``:
the tenant comes from the server's authentication, never from the call, so two tenants'
equal keys never meet, and the hash keeps any key within the ledger's case-id alphabet.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Final

from stepsaga._util.clock import Clock, SystemClock
from stepsaga.errors import (
    ActionConflictError,
    ConditionFailedError,
    InvalidInputError,
    NotFoundError,
)
from stepsaga.ledger._canonical import canonical_params, digest_of
from stepsaga.ledger._codec import parse_time, time_text
from stepsaga.ledger._models import Action, Intent, check_tenant
from stepsaga.ledger._rules import Ledger
from stepsaga.ledger._writes import ExtraWrite, Scalar, absent, equals

#: The key's length bounds (seed 001's input schema).
MIN_KEY_LENGTH: Final = 16
MAX_KEY_LENGTH: Final = 128
#: Where issued keys live beside the ledger's records.
KEY_PREFIX: Final = "IDEMPOTENCY#"
KEY_SORT: Final = "KEY"
#: The stored tool of a key issued unbound, until its first call binds it.
_ANY_TOOL: Final = ""


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


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class Limits:
    """Bounds a person approved instead of exact arguments: ``fixed`` arguments must equal
    their value (compared canonically: ``"ORD-1"`` NFC-normalized, money by minor units);
    ``at_most`` arguments are numbers no larger than theirs."""

    fixed: Mapping[str, Any] = field(default_factory=_empty)
    at_most: Mapping[str, int | Decimal] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        if not self.fixed and not self.at_most:
            raise InvalidInputError(
                "limits must fix or bound at least one argument", field="limits"
            )
        canonical_params(self.fixed)  # refuses what cannot be compared, now
        for name, bound in self.at_most.items():
            if not _number(bound):
                raise InvalidInputError(
                    f"limits.at_most.{name} must be an integer or a Decimal", field="limits"
                )
        object.__setattr__(self, "fixed", MappingProxyType(dict(self.fixed)))
        object.__setattr__(self, "at_most", MappingProxyType(dict(self.at_most)))

    def to_json(self) -> str:
        return json.dumps(
            {
                "fixed": json.loads(canonical_params(self.fixed)),
                "at_most": {name: str(bound) for name, bound in self.at_most.items()},
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Limits:
        stored = json.loads(text)
        return cls(
            fixed=stored["fixed"],
            at_most={name: Decimal(bound) for name, bound in stored["at_most"].items()},
        )

    def describe(self) -> str:
        parts = [f"{name} = {json.dumps(value)}" for name, value in sorted(self.fixed.items())]
        parts += [f"{name} at most {bound}" for name, bound in sorted(self.at_most.items())]
        return " and ".join(parts)

    def breach(self, arguments: Mapping[str, Any]) -> str | None:
        """The first argument outside these limits, described; ``None`` when all hold."""
        for name, value in sorted(self.fixed.items()):
            given = arguments.get(name)
            if name not in arguments or canonical_params({"v": given}) != canonical_params(
                {"v": value}
            ):
                return f"{name} is {json.dumps(given, default=str)}"
        for name, bound in sorted(self.at_most.items()):
            given = arguments.get(name)
            if not isinstance(given, int | Decimal) or isinstance(given, bool) or given > bound:
                return f"{name} is {json.dumps(given, default=str)}"
        return None


def _number(value: object) -> bool:
    return isinstance(value, int | Decimal) and not isinstance(value, bool)


@dataclass(frozen=True)
class Grant:
    """What a person approved when the key was issued: the intent (the ledger's case and
    approval time) and the binding a call must match."""

    key: str
    intent: Intent
    tool: str | None
    """``None``: issued unbound and not used yet; the first call's tool binds it."""
    args_digest: str | None = None
    limits: Limits | None = None
    approved_by: str | None = None

    @property
    def bound(self) -> bool:
        """Whether the approval names arguments (exact or limits), not just a tool."""
        return self.args_digest is not None or self.limits is not None

    def approval(self) -> str:
        """What was approved, in words (the refusals' and the items' wording)."""
        if self.tool is None:
            return "no tool yet (issued unbound)"
        if self.args_digest is not None:
            return f"{self.tool} with arguments digest {self.args_digest}"
        if self.limits is not None:
            return f"{self.tool} with {self.limits.describe()}"
        return f"{self.tool} (any arguments, issued unbound)"

    def check(self, tool: str, action: Action, arguments: Mapping[str, Any]) -> None:
        """Refuse (``ActionConflictError``, nothing written) a call outside the approval."""
        if self.tool is not None and tool != self.tool:
            self._refuse(tool, f"this call is {tool}")
        if self.args_digest is not None and action.digest != self.args_digest:
            self._refuse(tool, f"this call's digest is {action.digest}")
        breach = self.limits.breach(arguments) if self.limits is not None else None
        if breach is not None:
            self._refuse(tool, f"this call's {breach}")

    def _refuse(self, tool: str, what: str) -> None:
        raise ActionConflictError(
            f"{tool}: this idempotencyKey was approved for {self.approval()}; {what}; "
            "nothing changed",
            approved_tool=self.tool,
            approved_digest=self.args_digest,
            approved_limits=self.limits.describe() if self.limits else None,
        )


class KeyBook:
    """Issued idempotency keys, stored in the ledger (SQLite file or DynamoDB table)."""

    def __init__(self, ledger: Ledger | Callable[[], Ledger], *, clock: Clock | None = None):
        self._ledger = ledger
        self._clock: Clock = clock or SystemClock()

    def _target(self) -> Ledger:
        return self._ledger if isinstance(self._ledger, Ledger) else self._ledger()

    def issue(
        self,
        tenant_id: str,
        *,
        tool: str | None = None,
        args: Mapping[str, Any] | None = None,
        limits: Limits | None = None,
        unbound: bool = False,
        approved_at: datetime | None = None,
        approved_by: str | None = None,
        key: str | None = None,
    ) -> str:
        """Record a key for one approved intent (a new random one unless given) and return
        it. ``tool`` with ``args`` (the exact arguments, as the tool's digest takes them)
        or ``limits`` binds it; ``unbound=True`` (and nothing else) issues the weaker
        kind. Issuing a key twice is refused: a key names one intent. ``args`` are
        digested as given (every digested argument, defaults included):
        ``LedgeredTools.issue`` checks and completes them against the tool first."""
        check_tenant(tenant_id)
        key = check_key(key) if key is not None else secrets.token_urlsafe(24)
        when = approved_at or self._clock.now()
        when = Intent(case_for_key(key), 1, when).approved_at  # an intent's checks, in UTC
        attributes: dict[str, Scalar] = {"approved_at": time_text(when)}
        if unbound:
            if tool is not None or args is not None or limits is not None:
                raise InvalidInputError(
                    "an unbound key approves no tool or arguments: pass unbound=True alone",
                    field="unbound",
                )
            attributes["tool"] = _ANY_TOOL
        else:
            attributes |= _binding(tool, args, limits, when)
        if approved_by is not None:
            if not isinstance(approved_by, str) or not approved_by.strip():
                raise InvalidInputError(
                    "approved_by must be a non-empty string", field="approved_by"
                )
            attributes["approved_by"] = approved_by
        try:
            self._target().write([ExtraWrite(*_address(tenant_id, key), attributes, absent())])
        except ConditionFailedError:
            raise InvalidInputError(
                "idempotencyKey was already issued; mint a new one per intent",
                field="idempotencyKey",
            ) from None
        return key

    def grant(self, tenant_id: str, key: str) -> Grant:
        """What an issued key approves; ``NotFoundError`` for a key never issued (to this
        tenant): a key the model made up protects nothing."""
        check_tenant(tenant_id)
        stored = self._target().get_extra(*_address(tenant_id, check_key(key)))
        approved = None if stored is None else stored.get("approved_at")
        if stored is None or not isinstance(approved, str):
            raise NotFoundError(
                f"idempotencyKey was not issued to tenant {tenant_id} by the approval flow",
                tenant_id=tenant_id,
            )
        tool, digest, limits, by = (
            stored.get(name) for name in ("tool", "args_digest", "limits", "approved_by")
        )
        return Grant(
            key=key,
            intent=Intent(case_for_key(key), 1, parse_time(approved)),
            tool=tool if isinstance(tool, str) and tool != _ANY_TOOL else None,
            args_digest=digest if isinstance(digest, str) else None,
            limits=Limits.from_json(limits) if isinstance(limits, str) else None,
            approved_by=by if isinstance(by, str) else None,
        )

    def intent(self, tenant_id: str, key: str) -> Intent:
        """The intent an issued key names (``grant`` without the binding)."""
        return self.grant(tenant_id, key).intent

    def bind_on_first_use(self, tenant_id: str, grant: Grant, tool: str) -> ExtraWrite | None:
        """For a key issued unbound and not used yet: the write that binds it to ``tool``,
        to commit with the claim that creates the record. A concurrent first call on
        another tool then fails its claim's condition, and nothing of it is written."""
        if grant.tool is not None:
            return None
        return ExtraWrite(
            *_address(tenant_id, grant.key), {"tool": tool}, equals("tool", _ANY_TOOL)
        )


def _binding(
    tool: str | None, args: Mapping[str, Any] | None, limits: Limits | None, when: datetime
) -> dict[str, Scalar]:
    """The stored binding of a key: the tool and the exact digest or the limits."""
    if not isinstance(tool, str) or not tool:
        raise InvalidInputError(
            "issue(tool=...) names the approved tool; issue(unbound=True) for a key that "
            "binds nothing (weaker: the first call picks the arguments)",
            field="tool",
        )
    if (args is None) == (limits is None):
        raise InvalidInputError(
            f"a key for {tool} approves either exact args or limits, one of the two",
            field="args",
        )
    if limits is not None:
        if not isinstance(limits, Limits):
            raise InvalidInputError("limits must be a Limits", field="limits")
        return {"tool": tool, "limits": limits.to_json()}
    if not isinstance(args, Mapping):
        raise InvalidInputError("args must be a mapping of the tool's arguments", field="args")
    return {"tool": tool, "args_digest": digest_of(canonical_params(args), when)}


def _address(tenant_id: str, key: str) -> tuple[str, str]:
    return f"{KEY_PREFIX}{tenant_id}#{key}", KEY_SORT


__all__ = [
    "MAX_KEY_LENGTH",
    "MIN_KEY_LENGTH",
    "Grant",
    "KeyBook",
    "Limits",
    "case_for_key",
    "check_key",
]
