"""Faults file: failures the simulated services inject on purpose (format:
docs/explanation/design.md).

```json
{"faults": [
  {"service": "payments", "operation": "refund", "case_id": "CASE-1001", "attempt": 1,
   "fault": "lose_response"},
  {"service": "shipping", "operation": "create_shipment", "fault": "reject"}]}
```

A rule matches a call by ``operation`` (of ``service``), and optionally ``case_id``, ``item``
(one item of a per-item step: the ``#<item>`` of the call's action key) and ``attempt`` —
the 1-based number of the call for that (service, operation, tenant, case),
counted by the simulated services themselves and persisted, so it survives restarts and
redrives. ``times`` caps how often the rule fires per (tenant, case); omitted, it fires on
every matching call. Which error each kind produces is decided in ``error_mapping``.

This module is pure: validation and rule selection. Counting and firing live in
``services.simulated.injector``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)

from services.values import Operation, Service
from stepsaga import CaseId, Reference
from stepsaga.errors import InvalidInputError
from stepsaga.workflow import read_json_file, validate_object

MAX_FAULTS_FILE_BYTES = 64 * 1024
MAX_RULES = 1000
MAX_SLOW_SECONDS = 600.0


class FaultKind(StrEnum):
    THROTTLE = "throttle"
    """Refused before the effect, as a 429 would: ``TransientError``, nothing applied."""
    TIMEOUT_BEFORE_EFFECT = "timeout_before_effect"
    """Nothing applied, but the caller only sees its request time out — which it cannot tell
    apart from a lost reply: ``OutcomeUnknownError`` on writes, ``TransientError`` on reads."""
    LOSE_RESPONSE = "lose_response"
    """Applied, reply lost: ``OutcomeUnknownError`` (reads: ``TransientError``)."""
    REJECT = "reject"
    """Permanent business refusal: ``BusinessRejectedError``, nothing applied. Writes only."""
    SLOW = "slow"
    """The call takes ``seconds`` longer (through the injected sleeper), then proceeds."""
    CRASH_AFTER_EFFECT = "crash_after_effect"
    """Applied and committed, then the process dies before the caller hears back. Writes only."""

    @property
    def after_effect(self) -> bool:
        """Fires once the effect is committed (the others fire before it)."""
        return self in (FaultKind.LOSE_RESPONSE, FaultKind.CRASH_AFTER_EFFECT)


_WRITE_ONLY = frozenset({FaultKind.REJECT, FaultKind.CRASH_AFTER_EFFECT})


class FaultRule(BaseModel):
    """One line of the faults file. Field order matters: later validators read earlier ones."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    service: Service
    operation: Operation
    fault: FaultKind
    case_id: CaseId | None = None
    item: Reference | None = None
    attempt: int | None = Field(default=None, ge=1, le=1_000_000, strict=True)
    times: int | None = Field(default=None, ge=1, le=1_000_000, strict=True)
    seconds: float | None = Field(default=None, validate_default=True)

    @field_validator("operation")
    @classmethod
    def _operation_of_service(cls, value: Operation, info: ValidationInfo) -> Operation:
        service = info.data.get("service")
        if service is not None and value.service is not service:
            offered = ", ".join(op.value for op in Operation if op.service is service)
            raise ValueError(f"{service} offers {offered}, not {value}")
        return value

    @field_validator("fault")
    @classmethod
    def _fault_fits_operation(cls, value: FaultKind, info: ValidationInfo) -> FaultKind:
        operation = info.data.get("operation")
        if operation is not None and not operation.is_write and value in _WRITE_ONLY:
            raise ValueError(f"{value} needs an operation with an effect, not {operation}")
        return value

    @field_validator("seconds", mode="before")
    @classmethod
    def _seconds_only_when_slow(cls, value: Any, info: ValidationInfo) -> Any:
        fault = info.data.get("fault")
        if fault is None:
            return value  # the fault field itself failed; that error is reported
        if fault is not FaultKind.SLOW:
            if value is not None:
                raise ValueError(f"only a slow fault takes seconds, not {fault}")
            return value
        if value is None:
            raise ValueError("a slow fault needs seconds")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a number")
        if not 0 < value <= MAX_SLOW_SECONDS:
            raise ValueError(f"must be more than 0 and at most {MAX_SLOW_SECONDS:g}")
        return float(value)

    def matches(
        self, operation: Operation, case_id: str, attempt: int, action_key: str = ""
    ) -> bool:
        return (
            self.operation is operation
            and (self.case_id is None or self.case_id == case_id)
            and (self.item is None or self.item == item_of(action_key))
            and (self.attempt is None or self.attempt == attempt)
        )

    def to_data(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

    @property
    def fingerprint(self) -> str:
        """Identity of the rule for counting fires: the same rule attached again (a redrive,
        a restarted process) keeps counting where it left off."""
        canonical = json.dumps(self.to_data(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:32]


class Faults(BaseModel):
    """A validated faults file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    faults: tuple[FaultRule, ...] = Field(default=(), max_length=MAX_RULES)

    @field_validator("faults")
    @classmethod
    def _no_repeated_rules(cls, rules: tuple[FaultRule, ...]) -> tuple[FaultRule, ...]:
        seen: dict[str, int] = {}
        for index, rule in enumerate(rules):
            first = seen.setdefault(rule.fingerprint, index)
            if first != index:
                raise ValueError(
                    f"faults.{index} repeats faults.{first}; use times to fire a rule again"
                )
        return rules

    def to_json(self) -> str:
        return json.dumps({"faults": [rule.to_data() for rule in self.faults]}, sort_keys=True)


def parse_faults(data: object) -> Faults:
    """Validate decoded JSON; raises ``InvalidInputError`` naming the field."""
    return validate_object(Faults.model_validate, data, "faults")


def faults_from_json(text: str) -> Faults:
    """Faults stored as JSON text (e.g. attached to a case); bad text is ``InvalidInputError``."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise InvalidInputError(
            "faults: stored faults are not valid JSON", field="faults"
        ) from None
    return parse_faults(data)


def load_faults(path: Path) -> Faults:
    """Read and validate a faults file; every failure is one ``InvalidInputError`` line."""
    return parse_faults(read_json_file(path, what="faults file", max_bytes=MAX_FAULTS_FILE_BYTES))


def item_of(action_key: str) -> str | None:
    """The item of a per-item step's action key (``…:reserve_line#L2[:compensate:…]``)."""
    if "#" not in action_key:
        return None
    return action_key.split("#", 1)[1].split(":", 1)[0]


def select_rules(
    rules: Sequence[FaultRule],
    operation: Operation,
    case_id: str,
    attempt: int,
    fired: Mapping[str, int],
    action_key: str = "",
) -> list[FaultRule]:
    """The rules that fire on this call: every matching ``slow`` rule (delays add up), then
    at most one other rule — the first matching one, in file order, with fires left.
    ``fired`` maps a rule's fingerprint to how often it already fired for this tenant and
    case."""
    chosen: list[FaultRule] = []
    outcome_chosen = False
    for rule in rules:
        if not rule.matches(operation, case_id, attempt, action_key):
            continue
        if rule.times is not None and fired.get(rule.fingerprint, 0) >= rule.times:
            continue
        if rule.fault is FaultKind.SLOW:
            chosen.append(rule)
        elif not outcome_chosen:
            chosen.append(rule)
            outcome_chosen = True
    return chosen
