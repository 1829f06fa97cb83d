"""The ledger's ``ERROR_TABLE``, cell by cell, on both stores: through ``Ledger.perform``
and through a real forward handler — and, for any exception class and effect class, the
two record the same status and raise the same error."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepsaga import EffectClass, errors
from stepsaga._handlers import RecordingMetrics, build_handlers, local_deps
from stepsaga._handlers.guard import Handler
from stepsaga._handlers.step_handler import Call, Outcome, StepHandler
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.errors import OutcomeUnknownError, StepSagaError
from stepsaga.ledger import Ledger, Status, open_ledger
from stepsaga.ledger._models import Claim
from stepsaga.ledger._outcomes import (
    ERROR_TABLE,
    ErrorCell,
    ErrorFamily,
    RaiseAs,
    error_family,
    settlement_for,
)
from tests.framework.conformance.ledger.error_table import (
    EXAMPLES,
    EXPECTED,
    OU,
    RECALLS,
    TE,
    Case,
    case_id,
    cases,
    make_error,
)
from tests.framework.conformance.ledger.helpers import Counter, make_action
from tests.framework.unit.handlers import effect_probe
from tests.framework.unit.handlers.helpers import CapturedLogs, context

#: Effect class → the probe saga's step and operation.
STEPS = {
    EffectClass.READ: ("ReadNote", "read_note"),
    EffectClass.KEYED_WRITE: ("KeyedNote", "keyed_note"),
    EffectClass.BLIND_WRITE: ("BlindNote", "blind_note"),
    EffectClass.PHYSICAL: ("PhysicalNote", "physical_note"),
}
BUDGET, COST = 100, 5
_ids = itertools.count()


def check_raised(
    error: BaseException, original: BaseException, raised: type[Exception] | None
) -> None:
    """``raised`` None: the exception itself; else that class, caused by it."""
    if raised is None:
        assert error is original
        return
    assert type(error) is raised
    assert error.__cause__ is original


def status_of(ledger: Ledger, key: str) -> Status | None:
    record = ledger.get(key)
    return None if record is None else record.status


# --- the table itself ----------------------------------------------------------------------


def test_the_table_is_the_rule() -> None:
    assert set(ERROR_TABLE) == set(EXPECTED)
    raises: dict[type[Exception] | None, RaiseAs] = {
        None: RaiseAs.AS_IS,
        OU: RaiseAs.OUTCOME_UNKNOWN,
        TE: RaiseAs.TRANSIENT,
    }
    for cell, decided in ERROR_TABLE.items():
        status, raised = EXPECTED[(cell.family, cell.effect, cell.recalled)]
        assert (decided.status, decided.raises) == (status, raises[raised]), cell
    assert {cell for cell, decided in ERROR_TABLE.items() if decided.recall} == RECALLS


@pytest.mark.parametrize(
    ("family", "cls"),
    [(family, cls) for family, classes in EXAMPLES.items() for cls in classes],
    ids=lambda value: getattr(value, "__name__", str(value)),
)
def test_each_exception_class_has_its_family(family: ErrorFamily, cls: type[Exception]) -> None:
    assert error_family(make_error(cls)) is family
    subclass = type(f"Adapter{cls.__name__}", (cls,), {})
    assert error_family(make_error(subclass)) is family


def test_only_a_keyed_write_is_looked_up_after_a_re_call() -> None:
    assert settlement_for(ErrorFamily.REFUSED, EffectClass.KEYED_WRITE, recalled=True).status is (
        Status.UNKNOWN
    )
    for effect in (EffectClass.READ, EffectClass.BLIND_WRITE, EffectClass.PHYSICAL):
        with pytest.raises(ValueError, match="only a keyed_write"):
            settlement_for(ErrorFamily.REFUSED, effect, recalled=True)
    assert ErrorCell(ErrorFamily.REFUSED, EffectClass.PHYSICAL, True) not in ERROR_TABLE


# --- through Ledger.perform, on both stores ------------------------------------------------


@pytest.mark.parametrize("case", cases(recalled=False), ids=case_id)
def test_perform_records_each_cell(ledger: Ledger, case: Case) -> None:
    family, effect, _, cls = case
    status, raised = EXPECTED[(family, effect, False)]
    action = make_action(STEPS[effect][1], effect=effect, cost=COST if effect.recorded else None)
    ledger.set_budget(action.tenant_id, BUDGET)
    original = make_error(cls)
    attempts: list[int] = []

    def fn(claim: Claim) -> dict[str, Any]:
        attempts.append(claim.attempt)
        raise original

    with pytest.raises(raised or cls) as caught:
        ledger.perform(action, fn)

    check_raised(caught.value, original, raised)
    assert attempts == [1]  # perform never calls again, not even a keyed write
    assert status_of(ledger, action.key) is status
    # RELEASED and FAILED refund the claim's debit; UNKNOWN keeps it for reconciliation.
    assert ledger.budget(action.tenant_id) == BUDGET - (COST if status is Status.UNKNOWN else 0)
    # And the record means what it says to the next call.
    again = Counter()
    if status is Status.FAILED:
        with pytest.raises(cls):
            ledger.perform(action, again)
    elif status is Status.UNKNOWN:
        with pytest.raises(OutcomeUnknownError):
            ledger.perform(action, again)
    else:
        ledger.perform(action, again)
    assert again.calls == (0 if status in (Status.FAILED, Status.UNKNOWN) else 1)


# --- through a forward handler, on both stores ---------------------------------------------


class Scripted(StepHandler[effect_probe.Note, None]):
    """A step handler whose next calls raise the scripted exceptions, then succeed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.script: list[Exception] = []
        self.calls = 0

    def consequential(self, params: effect_probe.Note) -> Mapping[str, Any]:
        return {"text": params.text}

    def perform(self, clients: None, call: Call[effect_probe.Note]) -> Outcome:
        self.calls += 1
        if self.script:
            raise self.script.pop(0)
        return Outcome(result={"ok": True}, reference=call.action.key)


@dataclass
class Probe:
    """The probe saga's forward handlers over the store under test."""

    handlers: dict[str, Handler]
    operations: dict[EffectClass, Scripted]

    def run(self, effect: EffectClass, case: str) -> dict[str, Any]:
        step, operation = STEPS[effect]
        event = {
            "kind": "step",
            "saga": "effect-probe",
            "tenant_id": "acme",
            "case_id": case,
            "revision": 1,
            "approved_at": "2026-11-29T09:30:00Z",
            "step": step,
            "operation": operation,
            "effect": effect.value,
            "params": {"text": "hello"},
            "execution": {"name": f"acme-{case}-r1", "state": step, "retry_count": 0},
        }
        return self.handlers[step](event, context(step))

    @staticmethod
    def key(effect: EffectClass, case: str) -> str:
        return f"acme:{case}:r1:{STEPS[effect][1]}"


@pytest.fixture
def probe(ledger_url: str, clock: ManualClock, tmp_path: Path) -> Iterator[Probe]:
    local = local_deps(
        StateHome(tmp_path / "home"),
        None,
        clock=clock,
        logger=CapturedLogs().logger,
        metrics=RecordingMetrics(),
    )
    local.ledger.close()
    deps = replace(local, ledger=open_ledger(ledger_url, clock=clock))
    operations = {effect: Scripted(name) for effect, (_, name) in STEPS.items()}
    catalog: dict[str, StepHandler[Any, Any]] = {op.name: op for op in operations.values()}
    yield Probe(build_handlers(deps, effect_probe.saga(), catalog), operations)
    deps.close()


@pytest.mark.parametrize("case", cases(), ids=case_id)
def test_a_handler_records_each_cell(probe: Probe, ledger: Ledger, case: Case) -> None:
    family, effect, recalled, cls = case
    status, raised = EXPECTED[(family, effect, recalled)]
    operation = probe.operations[effect]
    original = make_error(cls)
    # A re-called cell: the first call's outcome was uncertain, ``original`` answers the
    # same-key call after it.
    operation.script = [OutcomeUnknownError("reply lost"), original] if recalled else [original]
    key = probe.key(effect, "CASE-1")

    if (family, effect, recalled) in RECALLS and not recalled:
        result = probe.run(effect, "CASE-1")  # the re-call meets the same key: applied once
        assert result["status"] == "COMPLETED"
        assert operation.calls == 2
        assert status_of(ledger, key) is Status.COMPLETED
        return
    with pytest.raises(StepSagaError) as caught:
        probe.run(effect, "CASE-1")

    check_raised(caught.value, original, raised)
    assert operation.calls == (2 if recalled else 1)
    assert status_of(ledger, key) is status


# --- perform and the handlers agree --------------------------------------------------------


def _error_classes() -> list[type[Exception]]:
    ours = [
        cls
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, StepSagaError)
    ]
    theirs: list[type[Exception]] = [
        RuntimeError,
        KeyError,
        ValueError,
        TypeError,
        OSError,
        TimeoutError,
        ConnectionError,
        ZeroDivisionError,
        AssertionError,
    ]
    return sorted([*ours, *theirs], key=lambda cls: cls.__name__)


def _subclassed(cls: type[Exception]) -> type[Exception]:
    return type(f"Adapter{cls.__name__}", (cls,), {})


exception_classes = st.sampled_from(_error_classes()).flatmap(
    lambda cls: st.sampled_from([cls, _subclassed(cls)])
)


def _outcome(call: Callable[[], object]) -> str | None:
    """The raised error's name on the wire (a subclass goes as its framework class)."""
    try:
        call()
    except StepSagaError as exc:
        return exc.error_name()
    except Exception as exc:
        return type(exc).__name__
    return None


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(cls=exception_classes, effect=st.sampled_from(list(EffectClass)))
def test_perform_and_the_handlers_record_the_same(
    ledger: Ledger, probe: Probe, cls: type[Exception], effect: EffectClass
) -> None:
    n = next(_ids)
    action = make_action(
        STEPS[effect][1], case=f"CASE-P{n}", effect=effect, params={"text": "hello"}
    )

    def fn(_: Claim) -> dict[str, Any]:
        raise make_error(cls)

    # Every call fails the same way, a keyed write's same-key re-call too.
    probe.operations[effect].script = [make_error(cls), make_error(cls)]
    by_perform = _outcome(lambda: ledger.perform(action, fn))
    by_handler = _outcome(lambda: probe.run(effect, f"CASE-H{n}"))
    probe.operations[effect].script = []

    assert status_of(ledger, action.key) is status_of(ledger, probe.key(effect, f"CASE-H{n}"))
    assert by_perform == by_handler is not None
