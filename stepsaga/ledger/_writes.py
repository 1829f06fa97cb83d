"""Caller-supplied writes committed in the ledger's own transaction (seed 000).

An agent's tool call changes three things: the tenant's quota, the effect's record and the
agent's session cursor. Written apart, a crash between the record and the cursor makes the
planner re-issue a tool the ledger already applied. ``Writes`` hands the ledger extra items
to commit in the same SQLite transaction / ``TransactWriteItems`` as the claim (the first
one only) and as the outcome (``COMPLETED`` or ``FAILED``: what a replay returns). A replay
writes nothing, so the extra writes happen exactly once per action.

The items live beside the records (the same SQLite file, the same DynamoDB table); their
``pk`` must not start with the ledger's own prefixes. Values are scalars (``str``, ``int``,
``bool``); ``None`` removes an attribute. Both stores keep DynamoDB's transaction limits
(:data:`LIMITS`), so a tool that works on SQLite cannot fail on DynamoDB for its size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Final

from stepsaga.errors import InvalidInputError
from stepsaga.ledger._table import (
    ACTION_PREFIX,
    AUDIT_PREFIX,
    BUDGET_PREFIX,
    CASE_PREFIX,
    PARTITION_KEY,
    RECON_PREFIX,
    SORT_KEY,
)

if TYPE_CHECKING:
    from stepsaga.ledger._models import Record

Scalar = str | int | bool | None

_ATTRIBUTE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
#: Item keys the ledger writes itself: an extra write may never touch them.
#: The ledger's own item kinds (audit records and case pointers included: a step's extra
#: write must never forge one).
RESERVED_PREFIXES: Final = (ACTION_PREFIX, BUDGET_PREFIX, RECON_PREFIX, AUDIT_PREFIX, CASE_PREFIX)
RESERVED_ATTRIBUTES: Final = frozenset({PARTITION_KEY, SORT_KEY})


@dataclass(frozen=True)
class Limits:
    """DynamoDB's ``TransactWriteItems`` limits, kept by both stores."""

    items: int = 100
    """Operations in one transaction (the ledger's own record and budget count)."""
    transaction_bytes: int = 4 * 1024 * 1024
    """Aggregate size of one transaction."""
    item_bytes: int = 400 * 1024
    """Size of one item; each of the ledger's own items is reserved at this size."""
    key_bytes: int = 1024
    """A sort key's limit (partition keys allow 2048; one limit keeps it simple)."""


LIMITS: Final = Limits()
#: The ledger's own operations in a transaction: the record, the budget change and the
#: case's latest revision (``stepsaga.ledger._latest``).
LEDGER_ITEMS: Final = 3


class ConditionKind(StrEnum):
    ABSENT = "absent"
    """The item does not exist."""
    PRESENT = "present"
    """The item exists."""
    EQUALS = "equals"
    """The item exists and ``attribute`` holds ``value`` (same type: ``True`` is not ``1``)."""
    AT_MOST = "at_most"
    """The item or its ``attribute`` is absent, or the attribute is an integer ``<= value``
    (a counter that only moves up: "nobody went past me")."""


@dataclass(frozen=True)
class Condition:
    """A precondition on one extra item; the transaction commits only if every one holds."""

    kind: ConditionKind
    attribute: str | None = None
    value: Scalar = None

    def __post_init__(self) -> None:
        if self.kind is ConditionKind.AT_MOST:
            _check_attribute(self.attribute)
            if isinstance(self.value, bool) or not isinstance(self.value, int):
                raise InvalidInputError("condition.value: at_most takes an integer", field="writes")
        elif self.kind is ConditionKind.EQUALS:
            _check_attribute(self.attribute)
            _check_scalar(self.value, "condition.value")
            if self.value is None:
                raise InvalidInputError(
                    "condition.value: use absent()/present() to test for no value",
                    field="writes",
                )
        elif self.attribute is not None or self.value is not None:
            raise InvalidInputError(
                f"condition {self.kind.value} takes no attribute or value", field="writes"
            )

    def holds(self, stored: Mapping[str, Scalar] | None) -> bool:
        """Whether the condition holds for the item as stored (None: absent)."""
        if self.kind is ConditionKind.ABSENT:
            return stored is None
        current = None if stored is None else stored.get(self.attribute or "")
        if self.kind is ConditionKind.AT_MOST:
            if current is None:
                return True
            limit = self.value if isinstance(self.value, int) else 0
            return type(current) is int and current <= limit
        if self.kind is ConditionKind.PRESENT or stored is None:
            return stored is not None
        return type(current) is type(self.value) and current == self.value


def absent() -> Condition:
    return Condition(ConditionKind.ABSENT)


def present() -> Condition:
    return Condition(ConditionKind.PRESENT)


def equals(attribute: str, value: Scalar) -> Condition:
    return Condition(ConditionKind.EQUALS, attribute, value)


def at_most(attribute: str, value: int) -> Condition:
    return Condition(ConditionKind.AT_MOST, attribute, value)


@dataclass(frozen=True)
class ExtraWrite:
    """Set ``attributes`` on the item ``pk``/``sk`` (created if absent) if ``condition``
    holds. No attributes and a condition: a pure check (DynamoDB ``ConditionCheck``)."""

    pk: str
    sk: str
    attributes: Mapping[str, Scalar] = field(default_factory=lambda: MappingProxyType({}))
    condition: Condition | None = None
    #: Only the ledger's own items (``LedgerWrite``) may use its reserved prefixes.
    _ledger_owned: ClassVar[bool] = False

    def __post_init__(self) -> None:
        for part, key in (("pk", self.pk), ("sk", self.sk)):
            if not isinstance(key, str) or not key:
                raise InvalidInputError(
                    f"writes: {part} must be a non-empty string", field="writes"
                )
            if len(key.encode()) > LIMITS.key_bytes:
                raise InvalidInputError(
                    f"writes: {part} is longer than {LIMITS.key_bytes} bytes", field="writes"
                )
        if self.pk.startswith(RESERVED_PREFIXES) and not self._ledger_owned:
            raise InvalidInputError(
                f"writes: pk {self.pk[:40]!r} starts with a prefix the ledger keeps for itself "
                f"({', '.join(RESERVED_PREFIXES)})",
                field="writes",
            )
        if not isinstance(self.attributes, Mapping):
            raise InvalidInputError("writes: attributes must be a mapping", field="writes")
        for name, value in self.attributes.items():
            _check_attribute(name)
            _check_scalar(value, name)
        if not self.attributes and self.condition is None:
            raise InvalidInputError(
                f"writes: {self.pk}/{self.sk} sets nothing and checks nothing", field="writes"
            )
        if self.condition is not None and not isinstance(self.condition, Condition):
            raise InvalidInputError("writes: condition must be a Condition", field="writes")
        object.__setattr__(self, "attributes", MappingProxyType(dict(self.attributes)))

    @property
    def size(self) -> int:
        """Bytes this item counts for, as DynamoDB sizes it (names plus values)."""
        total = len(self.pk.encode()) + len(self.sk.encode()) + len(PARTITION_KEY + SORT_KEY)
        for name, value in self.attributes.items():
            total += len(name.encode()) + len(json.dumps(value, ensure_ascii=False).encode())
        return total

    def applied_to(self, stored: Mapping[str, Scalar] | None) -> dict[str, Scalar]:
        """The item after this write (``None`` values remove their attribute)."""
        merged = dict(stored or {})
        for name, value in self.attributes.items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        return merged


@dataclass(frozen=True)
class LedgerWrite(ExtraWrite):
    """An item the ledger writes for itself in a claim's transaction (under its reserved
    prefixes: ``stepsaga.ledger._latest``); never built from a caller's input."""

    _ledger_owned: ClassVar[bool] = True


OutcomeWrites = Sequence[ExtraWrite] | Callable[["Record"], Sequence[ExtraWrite]]


@dataclass(frozen=True)
class Writes:
    """Extra writes for one action: with its first claim, and with its outcome.

    ``with_outcome`` may be a function of the finished record (status, result) — e.g. the
    session cursor that names the tool's result; it is called for ``COMPLETED`` and
    ``FAILED`` only, and what it returns is checked like a static list. A list that fails
    the checks after the effect happened leaves the record ``UNKNOWN``, as any result the
    ledger cannot store does.
    """

    with_claim: Sequence[ExtraWrite] = ()
    with_outcome: OutcomeWrites = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "with_claim", checked(self.with_claim))
        if not callable(self.with_outcome):
            object.__setattr__(self, "with_outcome", checked(self.with_outcome))

    def for_outcome(self, record: Record) -> tuple[ExtraWrite, ...]:
        if not callable(self.with_outcome):
            return tuple(self.with_outcome)
        try:
            built = self.with_outcome(record)
        except InvalidInputError:
            raise
        except Exception as exc:
            raise InvalidInputError(
                f"writes: with_outcome raised {type(exc).__name__}: {exc}", field="writes"
            ) from exc
        return checked(built)


def checked(
    writes: Sequence[ExtraWrite], *, ledger_items: int = LEDGER_ITEMS
) -> tuple[ExtraWrite, ...]:
    """``writes`` as a tuple, refused (one line naming ``writes``) beyond the limits or
    with two writes to one item (DynamoDB refuses that in one transaction)."""
    if isinstance(writes, ExtraWrite) or not isinstance(writes, Sequence):
        raise InvalidInputError("writes must be a list of ExtraWrite", field="writes")
    batch = tuple(writes)
    for write in batch:
        if not isinstance(write, ExtraWrite):
            raise InvalidInputError("writes must be a list of ExtraWrite", field="writes")
    allowed = LIMITS.items - ledger_items
    if len(batch) > allowed:
        raise InvalidInputError(
            f"writes: {len(batch)} extra writes do not fit one transaction: DynamoDB allows "
            f"{LIMITS.items} items and the ledger uses {ledger_items}, so at most {allowed}",
            field="writes",
        )
    seen: set[tuple[str, str]] = set()
    for write in batch:
        if (write.pk, write.sk) in seen:
            raise InvalidInputError(
                f"writes: {write.pk}/{write.sk} is written twice in one transaction",
                field="writes",
            )
        seen.add((write.pk, write.sk))
        if write.size > LIMITS.item_bytes:
            raise InvalidInputError(
                f"writes: {write.pk}/{write.sk} is {write.size} bytes; an item holds at most "
                f"{LIMITS.item_bytes}",
                field="writes",
            )
    budget = LIMITS.transaction_bytes - ledger_items * LIMITS.item_bytes
    total = sum(write.size for write in batch)
    if total > budget:
        raise InvalidInputError(
            f"writes: {total} bytes of extra writes exceed the {budget} bytes one transaction "
            f"leaves them ({LIMITS.transaction_bytes} minus the ledger's own items)",
            field="writes",
        )
    return batch


def _check_attribute(name: object) -> None:
    if not isinstance(name, str) or not _ATTRIBUTE.match(name) or name in RESERVED_ATTRIBUTES:
        raise InvalidInputError(
            f"writes: attribute {name!r} must match {_ATTRIBUTE.pattern} and not be "
            f"{' or '.join(sorted(RESERVED_ATTRIBUTES))}",
            field="writes",
        )


def _check_scalar(value: object, name: str) -> None:
    if value is not None and not isinstance(value, str | int | bool):
        raise InvalidInputError(
            f"writes: {name} must be a string, an integer, a boolean or None "
            f"(not {type(value).__name__})",
            field="writes",
        )


__all__ = [
    "LIMITS",
    "Condition",
    "ConditionKind",
    "ExtraWrite",
    "Limits",
    "Writes",
    "absent",
    "at_most",
    "checked",
    "equals",
    "present",
]
