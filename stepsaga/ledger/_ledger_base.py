"""What every part of :class:`~stepsaga.ledger.Ledger` shares: its store, clock and
policy, the contention bound, and the checks of what callers hand it."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, TypeVar, overload

from stepsaga._util.clock import Clock, SystemClock
from stepsaga.errors import ConditionFailedError, InvalidInputError
from stepsaga.ledger._models import Status
from stepsaga.ledger._policy import LedgerPolicy
from stepsaga.ledger._store import LedgerStore, WriteOutcome
from stepsaga.ledger._writes import ExtraWrite

log = logging.getLogger("stepsaga.ledger._rules")  # one logger for every part

#: Rounds of read → conditional write before contention is reported as unavailability.
MAX_ROUNDS = 8
#: Largest result / error / evidence stored (JSON characters).
MAX_JSON_CHARS = 64 * 1024

#: ``json.dumps(value, allow_nan=False, sort_keys=True)``, built once (not on every call).
_STRICT_JSON = json.JSONEncoder(allow_nan=False, sort_keys=True)


#: An enum users name in any case (``parse_choice``).
_Choice = TypeVar("_Choice", bound=StrEnum)


class LedgerBase:
    """The state every part of the ledger reads: store, clock, policy."""

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


def _text(value: object, name: str = "reason") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be a non-empty string", field=name)
    return value


@overload
def parse_choice(kind: type[_Choice], value: _Choice | str, what: str) -> _Choice: ...
@overload
def parse_choice(kind: type[_Choice], value: _Choice | str | None, what: str) -> _Choice | None: ...
def parse_choice(kind: type[_Choice], value: _Choice | str | None, what: str) -> _Choice | None:
    """A member of ``kind`` from user input in any case (its members are spelled in one
    case), None for None; an unknown name is bad input naming the members, and the field
    is the last word of ``what``."""
    if value is None:
        return None
    fold = str.lower if next(iter(kind)).value.islower() else str.upper
    try:
        return kind(fold(str(value)))
    except ValueError:
        raise InvalidInputError(
            f"unknown {what} {value!r}; one of " + ", ".join(m.value for m in kind),
            field=what.split()[-1],
        ) from None


def parse_status(value: Status | str | None) -> Status | None:
    """A status filter from user input (any case); unknown names are bad input."""
    return parse_choice(Status, value, "status")


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
