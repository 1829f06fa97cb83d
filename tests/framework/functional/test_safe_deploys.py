"""A release while cases run: executions keep the definition they started with, handlers
tolerate fields another release added, and a payload that no longer fits fails the step for
redrive instead of compensating (the embedded engine, the real handlers)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepsaga._reconciliation import resolve
from stepsaga.engine import LocalEngine
from stepsaga.errors import EventMismatchError
from stepsaga.workflow import compile
from stepsaga.workflow._substitutions import render
from tests.framework.unit.handlers.helpers import World, case_input, fault, make_world
from workflows.replacement_order import saga

UNDECIDABLE_SHIPMENT = {
    "faults": [
        fault("create_shipment", "lose_response", case_id="CASE-1001"),
        fault("find_shipment_by_reference", "throttle", times=1),
    ]
}


def definition() -> dict[str, Any]:
    return render(compile(saga), saga.definition_substitutions(lambda f: f))


def with_payloads(changed: Any) -> dict[str, Any]:
    """The definition with ``changed(payload)`` applied to every Lambda task's payload."""
    released = copy.deepcopy(definition())
    for state in released["States"].values():
        payload = state.get("Parameters", {}).get("Payload")
        if isinstance(payload, dict):
            changed(payload)
    return released


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[tuple[World, LocalEngine, str]]:
    world = make_world(tmp_path / "home", faults=UNDECIDABLE_SHIPMENT, callbacks=False)
    engine = LocalEngine(world.home, world.handlers, clock=world.clock, time_scale=0)
    arn = engine.create_state_machine(saga.name, definition())
    yield world, engine, arn
    engine.close()
    world.deps.close()


def test_a_case_waiting_on_a_decision_survives_a_release(
    deployed: tuple[World, LocalEngine, str],
) -> None:
    world, engine, arn = deployed
    waiting = engine.start_execution(arn, "acme-CASE-1001-r1", case_input())
    assert waiting["status"] == "RUNNING"
    (item,) = world.ledger.list_items(status="OPEN")

    # The next release adds a field to every event (and ships handlers that ignore it).
    engine.update_state_machine(arn, with_payloads(lambda p: p.update({"release": "2"})))
    resolve(
        world.ledger,
        item.item_id,
        "applied",
        "ops@acme.example",
        "carrier shows the label",
        send_task_success=engine.send_task_success,
    )

    done = engine.describe_execution(waiting["executionArn"])
    assert done["status"] == "SUCCEEDED"
    assert len(world.effects("create_shipment")) == 1
    # A case started after the release runs the new definition with the same handlers.
    after = engine.start_execution(arn, "acme-CASE-1002-r1", case_input(case_id="CASE-1002"))
    assert after["status"] == "SUCCEEDED"


def test_a_payload_that_no_longer_fits_fails_for_redrive_and_compensates_nothing(
    deployed: tuple[World, LocalEngine, str],
) -> None:
    world, engine, arn = deployed
    engine.update_state_machine(arn, with_payloads(lambda p: p.pop("operation", None)))
    done = engine.start_execution(arn, "acme-CASE-1003-r1", case_input(case_id="CASE-1003"))

    assert (done["status"], done["error"]) == ("FAILED", EventMismatchError.error_name())
    assert world.effects("reserve") == []  # the first step refused before any effect
    assert world.effects("release") == []  # and nothing was compensated
    assert world.ledger.list_items() == []
    assert engine.describe_execution(done["executionArn"])["redriveStatus"] == "REDRIVABLE"
