"""The ledger's values: what an action is, what a record says, what a claim grants.

All frozen: a value read from the ledger is a snapshot, never a handle that changes under
the caller. Identity rules (docs/explanation/design.md): the action key is trusted tenant + intent
(case id, approved revision) + operation; a compensation's key derives from the original's key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from functools import cached_property
from types import MappingProxyType
from typing import Any

from stepsaga import errors
from stepsaga._model import keys
from stepsaga._model.keys import action_key, compensation_of
from stepsaga._util.timestamps import opt_iso_z
from stepsaga.errors import InvalidActionError, StepSagaError
from stepsaga.ledger._canonical import canonical_params, digest_of

#: The highest approved revision an intent (and so a case or a task event) may carry.
MAX_REVISION = 1_000_000


class EffectClass(StrEnum):
    """What repeating an action's effect would do (seed 003's decision tree,
    docs/explanation/background.md)."""

    READ = "read"
    """Changes nothing outside: runs every time, no record."""
    KEYED_WRITE = "keyed_write"
    """The downstream deduplicates on our action key: a takeover sends the same key again."""
    BLIND_WRITE = "blind_write"
    """Safe to repeat verbatim (a put to a deterministic name)."""
    PHYSICAL = "physical"
    """Irreversible and unkeyed (a label, an SMS, a truck): never repeated on doubt."""

    @classmethod
    def parse(cls, value: str | None) -> EffectClass:
        """Undeclared or unknown classes are ``PHYSICAL`` — the most dangerous, never the safest."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, str):
            return cls.PHYSICAL
        try:
            return cls(value.strip().lower())
        except ValueError:
            return cls.PHYSICAL

    @property
    def recorded(self) -> bool:
        """Whether the ledger keeps a record (everything but reads)."""
        return self is not EffectClass.READ

    @property
    def takeover_safe(self) -> bool:
        """Whether another worker may redo the effect after a lease expires."""
        return self in (EffectClass.KEYED_WRITE, EffectClass.BLIND_WRITE)


class Status(StrEnum):
    """Where an action stands. Every change is a conditional write on status and owner."""

    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    """The effect is known not to have happened; replays get the same failure."""
    UNKNOWN = "UNKNOWN"
    """The outcome is uncertain; only reconciliation moves it on."""
    RELEASED = "RELEASED"
    """Failed before dispatch; may be claimed again (the attempt count goes on)."""


class ReconStatus(StrEnum):
    OPEN = "OPEN"
    RESOLVED = "RESOLVED"


class ReconOutcome(StrEnum):
    """An operator's finding about an uncertain effect."""

    APPLIED = "applied"
    NOT_APPLIED = "not_applied"


def _utc(value: object, name: str) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidActionError(f"{name} must be a timezone-aware datetime", field=name)
    return value.astimezone(UTC)


def check_tenant(tenant_id: object) -> str:
    if not isinstance(tenant_id, str) or not keys.TENANT.match(tenant_id):
        raise InvalidActionError(
            f"tenant_id {tenant_id!r} must match {keys.TENANT.pattern}", field="tenant_id"
        )
    return tenant_id


@dataclass(frozen=True)
class Intent:
    """One approved business intent: the case, its approved revision and when it was approved.

    ``approved_at`` starts the retention window and is part of the request digest, so a
    re-approval (new revision) is a new action, never a replay of the old one.
    """

    case_id: str
    revision: int
    approved_at: datetime

    def __post_init__(self) -> None:
        if not isinstance(self.case_id, str) or not keys.CASE.match(self.case_id):
            raise InvalidActionError(
                f"case_id {self.case_id!r} must match {keys.CASE.pattern}", field="case_id"
            )
        if isinstance(self.revision, bool) or not isinstance(self.revision, int):
            raise InvalidActionError("revision must be an integer", field="revision")
        if not 1 <= self.revision <= MAX_REVISION:
            raise InvalidActionError(
                f"revision must be between 1 and {MAX_REVISION}", field="revision"
            )
        object.__setattr__(self, "approved_at", _utc(self.approved_at, "approved_at"))


@dataclass(frozen=True)
class Action:
    """A side effect bound to one approved intent.

    ``params`` are the consequential parameters (they make the digest); money inside them is
    a mapping with ``amount`` and ``currency``. They are canonicalized on construction, so a
    bad amount fails here, before anything is claimed. ``cost`` is debited from the
    tenant's budget (when the tenant has one) together with the claim.
    """

    tenant_id: str
    intent: Intent
    operation: str
    effect: EffectClass = EffectClass.PHYSICAL
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    cost: int | None = None
    _canonical: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_tenant(self.tenant_id)
        if not isinstance(self.intent, Intent):
            raise InvalidActionError("intent must be an Intent", field="intent")
        if not isinstance(self.operation, str) or not keys.OPERATION.match(self.operation):
            raise InvalidActionError(
                f"operation {self.operation!r} must match {keys.NAME}", field="operation"
            )
        object.__setattr__(self, "effect", EffectClass.parse(self.effect))
        if self.cost is not None and (
            isinstance(self.cost, bool) or not isinstance(self.cost, int) or self.cost < 0
        ):
            raise InvalidActionError("cost must be a non-negative integer", field="cost")
        if not isinstance(self.params, Mapping):
            raise InvalidActionError("params must be a mapping", field="params")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "_canonical", canonical_params(self.params))

    @property
    def key(self) -> str:
        """``{tenant}:{case}:r{revision}:{operation}`` — the same for every attempt."""
        return action_key(self.tenant_id, self.intent.case_id, self.intent.revision, self.operation)

    @property
    def digest(self) -> str:
        """SHA-256 hex of the canonical parameters and the approval time."""
        return digest_of(self._canonical, self.intent.approved_at)

    @cached_property
    def terms(self) -> dict[str, Any]:
        """The parameters' digest and field descriptions, without the approval time: what
        a later revision compares (``revisions.py``)."""
        from stepsaga.ledger._revisions import terms_of  # revisions reads these models

        return terms_of(self._canonical)

    def compensation(
        self,
        operation: str,
        effect: EffectClass = EffectClass.PHYSICAL,
        params: Mapping[str, Any] | None = None,
        cost: int | None = None,
    ) -> Action:
        """The action undoing this one; its key is ``{self.key}:compensate:{operation}``."""
        if not isinstance(operation, str) or not keys.COMPENSATION.match(operation):
            raise InvalidActionError(
                f"compensation operation {operation!r} must match {keys.NAME}", field="operation"
            )
        return Action(
            tenant_id=self.tenant_id,
            intent=self.intent,
            operation=compensation_of(self.operation, operation),
            effect=effect,
            params=params if params is not None else {},
            cost=cost,
        )


@dataclass(frozen=True)
class Record:
    """One action's entry in the ledger, as stored.

    ``owner`` is the token of the latest claim; ``attempts`` the lifetime claim count;
    ``debited`` the budget amount this action currently holds (refunded on RELEASED/FAILED,
    kept on UNKNOWN), from ``budget_shard``; ``expires_at`` = approval + retention, whole
    seconds (the TTL).
    """

    key: str
    tenant_id: str
    case_id: str
    revision: int
    operation: str
    effect: EffectClass
    digest: str
    status: Status
    owner: str
    lease_expires_at: datetime | None
    attempts: int
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    reference: str | None
    cost: int | None
    created_at: datetime
    updated_at: datetime
    expires_at: datetime
    debited: int = 0
    #: The request's terms without the approval time (``revisions.terms_of``), so a later
    #: revision can tell an identical effect from a changed one; ``None`` on older records.
    terms: dict[str, Any] | None = None
    #: Which of the tenant's budget shards ``debited`` came from (the store's name for it),
    #: so the refund goes back there; ``None`` where the store keeps one budget item.
    budget_shard: str | None = None

    def expired(self, now: datetime) -> bool:
        """Past ``expires_at``: no longer protects, even while TTL has not deleted it."""
        return now >= self.expires_at

    def lease_live(self, now: datetime) -> bool:
        return (
            self.status is Status.IN_PROGRESS
            and self.lease_expires_at is not None
            and now < self.lease_expires_at
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form for the CLI and logs."""
        return {
            "key": self.key,
            "tenant_id": self.tenant_id,
            "case_id": self.case_id,
            "revision": self.revision,
            "operation": self.operation,
            "effect": self.effect.value,
            "digest": self.digest,
            "status": self.status.value,
            "owner": self.owner,
            "lease_expires_at": opt_iso_z(self.lease_expires_at),
            "attempts": self.attempts,
            "result": self.result,
            "error": self.error,
            "reference": self.reference,
            "cost": self.cost,
            "debited": self.debited,
            "created_at": opt_iso_z(self.created_at),
            "updated_at": opt_iso_z(self.updated_at),
            "expires_at": opt_iso_z(self.expires_at),
            "terms": self.terms,
        }


@dataclass(frozen=True)
class Claim:
    """Permission to perform the effect once: ``owner`` must be shown to record the outcome.

    ``attempt`` is the 1-based lifetime count; ``takeover`` says a previous owner's lease
    expired (for keyed writes: send the same key downstream again). ``transient`` claims
    are handed to reads and record nothing.
    """

    record: Record
    owner: str
    attempt: int
    takeover: bool = False
    transient: bool = False

    @property
    def key(self) -> str:
        return self.record.key


@dataclass(frozen=True)
class Replay:
    """The action already has a final outcome: return it instead of acting again."""

    record: Record

    @property
    def result(self) -> dict[str, Any] | None:
        return self.record.result

    def unwrap(self) -> dict[str, Any]:
        """The recorded result, or the recorded failure raised again (same class and message)."""
        if self.record.status is Status.COMPLETED:
            return dict(self.record.result or {})
        raise recorded_error(self.record.error or {}, key=self.record.key)


@dataclass(frozen=True)
class Signoff:
    """One person's decision on an item: who, when, and why (their note)."""

    by: str
    at: datetime
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {"by": self.by, "at": opt_iso_z(self.at), "note": self.note}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Signoff:
        return cls(by=str(data["by"]), at=_parse_iso(str(data["at"])), note=str(data["note"]))


@dataclass(frozen=True)
class ReconItem:
    """A question for reconciliation: did this action's effect happen?

    One item per (action key, reason). ``task_token`` lets a waiting Step Functions task
    be resumed when the item is resolved. ``dual_control`` is set when the item is opened
    (from its step's declaration): a person's ``not_applied`` then needs a second, other
    person (``stepsaga.ledger._approvals``); ``first_approval`` is the first of those two —
    pending while the item is OPEN, kept once it is RESOLVED.
    """

    item_id: str
    record_key: str
    tenant_id: str
    case_id: str
    reason: str
    step: str
    evidence: dict[str, Any]
    status: ReconStatus
    created_at: datetime
    updated_at: datetime
    outcome: ReconOutcome | None = None
    resolved_by: str | None = None
    note: str | None = None
    task_token: str | None = None
    resolved_at: datetime | None = None
    dual_control: bool = False
    first_approval: Signoff | None = None

    @property
    def awaiting_second_approver(self) -> bool:
        """OPEN with one ``not_applied`` approval recorded: one more person must agree."""
        return self.status is ReconStatus.OPEN and self.first_approval is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "record_key": self.record_key,
            "tenant_id": self.tenant_id,
            "case_id": self.case_id,
            "reason": self.reason,
            "step": self.step,
            "evidence": self.evidence,
            "status": self.status.value,
            "outcome": self.outcome.value if self.outcome else None,
            "resolved_by": self.resolved_by,
            "note": self.note,
            "task_token": self.task_token,
            "created_at": opt_iso_z(self.created_at),
            "updated_at": opt_iso_z(self.updated_at),
            "resolved_at": opt_iso_z(self.resolved_at),
            "dual_control": self.dual_control,
            "first_approval": self.first_approval.to_dict() if self.first_approval else None,
        }


@dataclass(frozen=True)
class ResolutionAudit:
    """What a resolution leaves behind, written in the resolution's own transaction and
    never changed: the item, the outcome, every person who decided it (one, or two under
    dual control, first approver first) and, on AWS, the signing identity's details."""

    item_id: str
    tenant_id: str
    case_id: str
    step: str
    action_key: str
    outcome: ReconOutcome
    deciders: tuple[Signoff, ...]
    at: datetime
    #: ``caller_arn`` / ``caller_account`` / ``caller_user_id`` on AWS; empty locally.
    identity: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: The audit chain (``stepsaga.ledger._audit``): the item's previous record's hash (or its
    #: genesis), and this record's; None on records written before records were sealed.
    previous: str | None = None
    digest: str | None = None

    @property
    def resolved_by(self) -> str:
        """Who made the decision final (the last decider)."""
        return self.deciders[-1].by

    def to_dict(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "tenant_id": self.tenant_id,
            "case_id": self.case_id,
            "step": self.step,
            "action_key": self.action_key,
            "outcome": self.outcome.value,
            "resolved_by": self.resolved_by,
            "deciders": [d.to_dict() for d in self.deciders],
            "notes": [d.note for d in self.deciders],
            "at": opt_iso_z(self.at),
            "identity": dict(self.identity),
            **({"previous": self.previous} if self.previous is not None else {}),
            **({"hash": self.digest} if self.digest is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ResolutionAudit:
        """The inverse of :meth:`to_dict` (the derived keys are ignored)."""
        return cls(
            item_id=str(data["item_id"]),
            tenant_id=str(data["tenant_id"]),
            case_id=str(data["case_id"]),
            step=str(data["step"]),
            action_key=str(data["action_key"]),
            outcome=ReconOutcome(data["outcome"]),
            deciders=tuple(Signoff.from_dict(d) for d in data["deciders"]),
            at=_parse_iso(str(data["at"])),
            identity=MappingProxyType({str(k): str(v) for k, v in data["identity"].items()}),
            previous=str(data["previous"]) if data.get("previous") is not None else None,
            digest=str(data["hash"]) if data.get("hash") is not None else None,
        )


def _parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def recorded_error(error: Mapping[str, Any], *, key: str) -> StepSagaError:
    """Rebuild a failure recorded with ``StepSagaError.to_dict()``: same class, same message.

    Unknown names become ``BusinessRejectedError`` (a FAILED record means the effect was
    refused), so a replay never turns into a retry.
    """
    name = str(error.get("error", "BusinessRejectedError"))
    message = str(error.get("message", "the action failed"))
    data = error.get("data")
    payload: dict[str, Any] = dict(data) if isinstance(data, Mapping) else {}
    payload.pop("message", None)
    payload.setdefault("key", key)
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, StepSagaError)):
        cls = errors.BusinessRejectedError
    try:
        return cls(message, **payload)
    except TypeError:  # a class whose constructor wants more than message + data
        return errors.BusinessRejectedError(message, **payload)
