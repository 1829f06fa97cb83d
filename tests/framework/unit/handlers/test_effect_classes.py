"""One test per effect class: what a handler decides when a call's outcome is uncertain."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepsaga import EffectClass
from stepsaga._handlers import RecordingMetrics, build_handlers, local_deps
from stepsaga._handlers.decision import Decision, decision_for, looks_before_acting
from stepsaga._handlers.guard import Handler
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.errors import OutcomeUnknownError, TransientError
from stepsaga.ledger import Ledger, Status
from stepsaga.ledger._outcomes import ERROR_TABLE, ErrorFamily
from tests.framework.unit.handlers import effect_probe
from tests.framework.unit.handlers.helpers import NOW, CapturedLogs, context


@pytest.fixture
def downstream() -> effect_probe.Downstream:
    effect_probe.DOWNSTREAM.__init__()  # type: ignore[misc]
    return effect_probe.DOWNSTREAM


@pytest.fixture
def probe(tmp_path: Path) -> Iterator[tuple[dict[str, Handler], Ledger, CapturedLogs]]:
    logs = CapturedLogs()
    deps = local_deps(
        StateHome(tmp_path),
        None,
        clock=ManualClock(NOW),
        logger=logs.logger,
        metrics=RecordingMetrics(),
    )
    handlers = build_handlers(deps, effect_probe.saga(), effect_probe.OPERATIONS)
    yield handlers, deps.ledger, logs
    deps.close()


def event(step: str, operation: str, effect: str) -> dict[str, Any]:
    return {
        "kind": "step",
        "saga": "effect-probe",
        "tenant_id": "acme",
        "case_id": "CASE-1",
        "revision": 1,
        "approved_at": "2026-11-29T09:30:00Z",
        "step": step,
        "operation": operation,
        "effect": effect,
        "params": {"text": "hello"},
        "execution": {"name": "acme-CASE-1-r1", "state": step, "retry_count": 0},
    }


KEYED = event("KeyedNote", "keyed_note", "keyed_write")
BLIND = event("BlindNote", "blind_note", "blind_write")
PHYSICAL = event("PhysicalNote", "physical_note", "physical")
READ = event("ReadNote", "read_note", "read")


def decisions(logs: CapturedLogs) -> list[str]:
    return [line["decision"] for line in logs.lines() if line.get("decision")]


def test_keyed_write_calls_again_with_the_same_key(
    probe: Any, downstream: effect_probe.Downstream
) -> None:
    handlers, ledger, logs = probe
    downstream.uncertain = 1

    result = handlers["KeyedNote"](KEYED, context())

    assert result["replayed"] is False
    assert downstream.calls == 2
    assert downstream.applied == ["acme:CASE-1:r1:keyed_note"]
    assert ledger.get("acme:CASE-1:r1:keyed_note").status is Status.COMPLETED
    assert "recall_same_key" in decisions(logs)


def test_blind_write_releases_and_may_repeat(
    probe: Any, downstream: effect_probe.Downstream
) -> None:
    handlers, ledger, logs = probe
    downstream.uncertain = 1

    with pytest.raises(TransientError):
        handlers["BlindNote"](BLIND, context())
    assert ledger.get("acme:CASE-1:r1:blind_note").status is Status.RELEASED
    result = handlers["BlindNote"](BLIND, context())

    assert result["replayed"] is False
    assert downstream.calls == 2
    assert len(downstream.applied) == 2  # repeated verbatim: harmless by declaration
    assert decisions(logs)[0] == "released"


def test_physical_never_repeats_on_doubt(probe: Any, downstream: effect_probe.Downstream) -> None:
    handlers, ledger, logs = probe
    downstream.uncertain = 1

    for _ in range(3):
        with pytest.raises(OutcomeUnknownError):
            handlers["PhysicalNote"](PHYSICAL, context())

    assert downstream.calls == 1
    assert ledger.get("acme:CASE-1:r1:physical_note").status is Status.UNKNOWN
    assert decisions(logs)[0] == "unknown"


def test_read_records_nothing_and_repeats(probe: Any, downstream: effect_probe.Downstream) -> None:
    handlers, ledger, _ = probe
    downstream.uncertain = 1
    with pytest.raises(TransientError):
        handlers["ReadNote"](READ, context())
    first = handlers["ReadNote"](READ, context())
    second = handlers["ReadNote"](READ, context())

    assert first["replayed"] is second["replayed"] is False
    assert downstream.calls == 3
    assert ledger.get("acme:CASE-1:r1:read_note") is None


def test_who_looks_before_acting() -> None:
    assert looks_before_acting(EffectClass.KEYED_WRITE, 2)
    assert looks_before_acting(EffectClass.PHYSICAL, 2)
    assert not looks_before_acting(EffectClass.KEYED_WRITE, 1)
    assert not looks_before_acting(EffectClass.BLIND_WRITE, 2)


def test_the_logged_decision_names_the_recorded_status() -> None:
    expected = {
        Status.RELEASED: Decision.RELEASED,
        Status.UNKNOWN: Decision.UNKNOWN,
        Status.FAILED: Decision.REJECTED,
    }
    for cell, settlement in ERROR_TABLE.items():
        if settlement.status is None:
            continue
        named = decision_for(cell.family, settlement)
        if cell.family is ErrorFamily.KEY_CONFLICT and settlement.status is Status.FAILED:
            assert named is Decision.CONFLICT, cell
        else:
            assert named is expected[settlement.status], cell
