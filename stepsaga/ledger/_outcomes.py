"""What an exception raised while performing an effect does to its record — one table.

``Ledger.perform`` and the saga handlers both settle a failed call here, so the two can no
longer disagree (docs/explanation/design.md, "What an exception does to a record"):

* ``RELEASED`` only when the failure is known to precede dispatch (``TransientError``);
* ``FAILED`` when validation or the downstream refused (``BusinessRejectedError``,
  ``InvalidInputError``, ``NotFoundError``, a downstream key conflict);
* (an exception's family is its routing class's row of ``stepsaga.errors.FATES``, the
  table the ASL's ``Catch`` lists come from; this module refuses to import if a record
  status and the raised error's route disagree anywhere);
* ``UNKNOWN`` for ``OutcomeUnknownError`` and for any unexpected exception — except a
  ``blind_write``, which is safe to repeat and is ``RELEASED``.

The rest follows from the effect classes: reads record nothing; a downstream "same key in
progress" releases what may be taken over (keyed and blind writes) and is uncertain for a
physical effect; a keyed write may call once more with the same key after an uncertain
outcome (the downstream deduplicates on it). What answers *that* call — a refusal, a
conflict, even a failure before it was sent — proves nothing about the first one, so the
record stays ``UNKNOWN``; only "same key in progress" (the first call is still being
processed) releases it for a retry with the same key.

``error_family(exc)`` names the exception's family; ``settlement_for(family, effect,
recalled=…)`` looks its cell up; ``Settlement.raised`` builds the error the caller raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final, NamedTuple

from stepsaga.errors import (
    FATES,
    ErrorFamily,
    OutcomeUnknownError,
    Route,
    TransientError,
    fate_of,
)
from stepsaga.ledger._models import EffectClass, Status


class RaiseAs(StrEnum):
    """What the caller raises after recording the settlement."""

    AS_IS = "as_is"
    """The exception itself: its name already says what happened."""
    OUTCOME_UNKNOWN = "outcome_unknown"
    """``OutcomeUnknownError`` (caused by the exception): reconciliation decides."""
    TRANSIENT = "transient"
    """``TransientError`` (caused by the exception): repeating is harmless, so retry."""


@dataclass(frozen=True)
class Settlement:
    """One cell of the table: the status to write and the error to raise.

    ``recall``: a caller that can call again with the same key (a keyed write's handler,
    bounded by its own count) may do that instead; one that cannot (``Ledger.perform``
    runs ``fn`` at most once per claim) records ``status``.
    """

    status: Status | None
    """``FAILED``, ``RELEASED`` or ``UNKNOWN``; ``None`` records nothing (reads)."""
    raises: RaiseAs
    recall: bool = False

    def __post_init__(self) -> None:
        if self.status not in (None, Status.FAILED, Status.RELEASED, Status.UNKNOWN):
            raise ValueError(f"a failed call cannot leave a record {self.status}")
        if self.recall and self.status is not Status.UNKNOWN:
            raise ValueError("only an uncertain outcome is worth calling again")

    def raised(self, exc: BaseException, *, key: str, attempts: int, reason: str) -> BaseException:
        """The error to raise for ``exc`` (``exc`` itself when ``AS_IS``). ``reason``
        describes ``exc`` without personal data; it ends up in the message."""
        if self.raises is RaiseAs.OUTCOME_UNKNOWN:
            return OutcomeUnknownError(
                f"{key}: the effect may or may not have happened; it goes to "
                f"reconciliation ({reason})",
                key=key,
                attempts=attempts,
            )
        if self.raises is RaiseAs.TRANSIENT:
            what = "a read" if self.status is None else "the effect"
            return TransientError(
                f"{key}: the call failed, but {what} is safe to repeat; retry ({reason})",
                key=key,
            )
        return exc


class ErrorCell(NamedTuple):
    """Where a failed call sits in the table."""

    family: ErrorFamily
    effect: EffectClass
    recalled: bool
    """The exception answers a same-key call made after an uncertain one (keyed only)."""


_PASS = Settlement(None, RaiseAs.AS_IS)  # nothing recorded; raised as is
_RETRY = Settlement(None, RaiseAs.TRANSIENT)  # nothing recorded; → TransientError
_RELEASE = Settlement(Status.RELEASED, RaiseAs.AS_IS)  # claimable again; raised as is
_REPEAT = Settlement(Status.RELEASED, RaiseAs.TRANSIENT)  # claimable again; → TransientError
_FAIL = Settlement(Status.FAILED, RaiseAs.AS_IS)  # replays raise the same failure
_UNKNOWN = Settlement(Status.UNKNOWN, RaiseAs.OUTCOME_UNKNOWN)  # → reconciliation
_RECALL = Settlement(Status.UNKNOWN, RaiseAs.OUTCOME_UNKNOWN, recall=True)  # same key once more

_K = EffectClass.KEYED_WRITE
_COLUMNS: Final = (
    (EffectClass.READ, False),
    (_K, False),
    (EffectClass.BLIND_WRITE, False),
    (EffectClass.PHYSICAL, False),
    (_K, True),
)
_F = ErrorFamily
_Row = tuple[Settlement, Settlement, Settlement, Settlement, Settlement]
# fmt: off
_GRID: Final[Mapping[ErrorFamily, _Row]] = {
    #                    read     keyed_write  blind_write  physical   keyed, re-called
    _F.BEFORE_DISPATCH: (_PASS,   _RELEASE,    _RELEASE,    _RELEASE,  _UNKNOWN),
    _F.REFUSED:         (_PASS,   _FAIL,       _FAIL,       _FAIL,     _UNKNOWN),
    _F.KEY_CONFLICT:    (_RETRY,  _FAIL,       _FAIL,       _FAIL,     _UNKNOWN),
    _F.KEY_BUSY:        (_RETRY,  _RELEASE,    _RELEASE,    _UNKNOWN,  _RELEASE),
    _F.UNCERTAIN:       (_RETRY,  _RECALL,     _REPEAT,     _UNKNOWN,  _RECALL),
    _F.UNEXPECTED:      (_RETRY,  _UNKNOWN,    _REPEAT,     _UNKNOWN,  _UNKNOWN),
}
# fmt: on

#: The table: every cell a failed call can land in, and its settlement.
ERROR_TABLE: Final[Mapping[ErrorCell, Settlement]] = MappingProxyType(
    {
        ErrorCell(family, effect, recalled): row[column]
        for family, row in _GRID.items()
        for column, (effect, recalled) in enumerate(_COLUMNS)
    }
)


def error_family(exc: BaseException) -> ErrorFamily:
    """The family of ``exc``: its routing class's row of ``stepsaga.errors.FATES``
    (a subclass counts as its nearest framework class; anything else is unexpected)."""
    return fate_of(exc).family


def settlement_for(
    family: ErrorFamily, effect: EffectClass, *, recalled: bool = False
) -> Settlement:
    """The table's cell for a failed call. ``recalled``: the call was the same-key call
    after an uncertain one, which only a keyed write makes."""
    cell = ErrorCell(family, effect, recalled)
    if cell not in ERROR_TABLE:
        raise ValueError(f"only a keyed_write calls again with the same key, not a {effect}")
    return ERROR_TABLE[cell]


#: What a record's status says the state machine must do with the error raised for it.
ROUTES_FOR_STATUS: Final[Mapping[Status, frozenset[Route]]] = MappingProxyType(
    {
        Status.FAILED: frozenset({Route.COMPENSATE, Route.RECONCILE}),  # a replay raises it again
        Status.UNKNOWN: frozenset({Route.RECONCILE}),  # only a person moves it on
        Status.RELEASED: frozenset({Route.RETRY}),  # claimable again
    }
)


def raised_class(settlement: Settlement, cls: type[BaseException]) -> type[BaseException]:
    """The class a caller raises for an exception of ``cls`` settled so."""
    if settlement.raises is RaiseAs.OUTCOME_UNKNOWN:
        return OutcomeUnknownError
    if settlement.raises is RaiseAs.TRANSIENT:
        return TransientError
    return cls


def disagreements() -> list[str]:
    """Cells where the record's status and the route of the raised error disagree (a
    ``FAILED`` record whose error no ``Catch`` matches fails on every redrive)."""
    found: list[str] = []
    for cls, fate in FATES.items():
        for cell, settlement in ERROR_TABLE.items():
            if cell.family is not fate.family or settlement.status is None:
                continue
            route = fate_of(raised_class(settlement, cls)).route
            if route not in ROUTES_FOR_STATUS[settlement.status]:
                found.append(
                    f"{cls.__name__} ({cell.effect}, recalled={cell.recalled}): record "
                    f"{settlement.status.value} but routed {route.value}"
                )
    return found


if disagreements():  # pragma: no cover - a table edit that breaks the contract
    raise RuntimeError(
        "stepsaga.errors.FATES and ERROR_TABLE disagree: " + "; ".join(disagreements())
    )


__all__ = [
    "ERROR_TABLE",
    "ErrorCell",
    "ErrorFamily",
    "RaiseAs",
    "Settlement",
    "error_family",
    "settlement_for",
]
