"""A tiny saga whose steps cover every effect class, over an in-memory downstream.

``Downstream`` counts the effects it applied; a step's first ``uncertain`` calls apply the
effect and lose the reply (like ``lose_response``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from stepsaga import (
    Absent,
    Call,
    EffectClass,
    Escalate,
    Found,
    Lookup,
    Outcome,
    Saga,
    Step,
    StepHandler,
)
from stepsaga.errors import OutcomeUnknownError


class Note(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    text: str


class Downstream:
    """Effects by key, and how many of the next calls lose their reply."""

    def __init__(self) -> None:
        self.applied: list[str] = []
        self.calls = 0
        self.uncertain = 0

    def call(self, key: str, *, keyed: bool) -> Outcome:
        self.calls += 1
        if not (keyed and key in self.applied):
            self.applied.append(key)
        if self.uncertain:
            self.uncertain -= 1
            raise OutcomeUnknownError("downstream: reply lost")
        return Outcome(result={"key": key}, reference=key)


DOWNSTREAM = Downstream()


class _Probe(StepHandler[Note, None]):
    name: str
    keyed = False

    def consequential(self, params: Note) -> Mapping[str, Any]:
        return {"text": params.text}

    def perform(self, clients: None, call: Call[Note]) -> Outcome:
        return DOWNSTREAM.call(call.action.key, keyed=self.keyed)

    def lookup(self, clients: None, call: Call[Note]) -> Lookup:
        if call.action.key in DOWNSTREAM.applied:
            return Found("in memory", {"key": call.action.key}, call.action.key)
        return Absent("in memory")


class Keyed(_Probe):
    name = "keyed_note"
    keyed = True


class Blind(_Probe):
    name = "blind_note"


class Physical(_Probe):
    name = "physical_note"


class Read(_Probe):
    name = "read_note"


PATH = "tests.framework.unit.handlers.effect_probe:handler"
OPERATIONS: dict[str, StepHandler[Any, Any]] = {
    op.name: op for op in (Keyed(), Blind(), Physical(), Read())
}
handler = None  # the reference the saga names; build_handlers gets OPERATIONS instead


def _step(name: str, operation: str, effect: EffectClass) -> Step:
    later = None if effect is EffectClass.READ else Escalate("look at it")
    return Step(
        name,
        operation=operation,
        effect=effect,
        params="note",
        params_model=Note,
        on_later_failure=later,
        handler=PATH,
    )


def saga() -> Saga:
    return Saga(
        name="effect-probe",
        steps=[
            _step("ReadNote", "read_note", EffectClass.READ),
            _step("KeyedNote", "keyed_note", EffectClass.KEYED_WRITE),
            _step("BlindNote", "blind_note", EffectClass.BLIND_WRITE),
            _step("PhysicalNote", "physical_note", EffectClass.PHYSICAL),
        ],
    )
