"""The compiled replacement-order saga on the embedded engine, with the real handlers.

This checks the contract between the state machine and the handlers end to end: the
payloads the ASL builds parse, results land where the next state reads them, and each
route (compensate, escalate, reconcile, wait for a person) ends as seed 002 says
(docs/explanation/background.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services import load_faults
from stepsaga._reconciliation import AUTO_RESOLVER, resolve
from stepsaga.engine import LocalEngine
from stepsaga.ledger._models import ReconStatus
from stepsaga.workflow import compile
from stepsaga.workflow._substitutions import render
from tests.framework.unit.handlers.helpers import (
    World,
    case_input,
    fault,
    make_world,
)
from workflows.replacement_order import saga


class Run:
    def __init__(
        self, root: Path, faults: dict[str, Any] | None = None, *, resumes: bool = False
    ) -> None:
        def send(token: str, output: dict[str, Any]) -> object:
            return self.engine.send_task_success(token, output)

        self.world: World = make_world(
            root, faults=faults, callbacks=False, send_task_success=send if resumes else None
        )
        self.engine = LocalEngine(
            self.world.home, self.world.handlers, clock=self.world.clock, time_scale=0
        )
        definition = render(compile(saga), saga.definition_substitutions(lambda f: f))
        self.arn = self.engine.create_state_machine(saga.name, definition)

    def start(self) -> dict[str, Any]:
        return self.engine.start_execution(self.arn, "acme-CASE-1001-r1", case_input())

    def applied(self, operation: str) -> int:
        return len(self.world.effects(operation))

    def close(self) -> None:
        self.engine.close()
        self.world.deps.close()


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[list[Run]]:
    opened: list[Run] = []
    yield opened
    for run in opened:
        run.close()


def start(
    runs: list[Run], root: Path, faults: dict[str, Any] | None = None, *, resumes: bool = False
) -> Run:
    run = Run(root / f"home-{len(runs)}", faults, resumes=resumes)
    runs.append(run)
    return run


def test_every_step_once(runs: list[Run], tmp_path: Path) -> None:
    run = start(runs, tmp_path)
    done = run.start()

    assert done["status"] == "SUCCEEDED"
    output = json.loads(done["output"])
    assert set(output["results"]) == {"ReserveStock", "RefundPayment", "CreateShipment"}
    assert (run.applied("reserve"), run.applied("refund"), run.applied("create_shipment")) == (
        1,
        1,
        1,
    )


def test_rejected_shipment_releases_the_reservation_and_escalates_the_refund(
    runs: list[Run], tmp_path: Path
) -> None:
    run = start(runs, tmp_path, {"faults": [fault("create_shipment", "reject")]})
    done = run.start()

    assert (done["status"], done["error"]) == ("FAILED", "Saga.Compensated")
    assert run.applied("reserve") == 1
    assert run.applied("release") == 1
    assert run.applied("refund") == 1  # never reversed automatically…
    items = run.world.ledger.list_items(status="OPEN")
    assert [i.reason for i in items] == ["escalated: refund issued, replacement not shipped"]


def test_lost_refund_reply_is_reconciled_by_key_and_the_saga_goes_on(
    runs: list[Run], tmp_path: Path
) -> None:
    run = start(runs, tmp_path, {"faults": [fault("refund", "lose_response")]})
    done = run.start()

    assert done["status"] == "SUCCEEDED"
    assert run.applied("refund") == 1
    (item,) = run.world.ledger.list_items()
    assert (item.status, item.resolved_by) == (ReconStatus.RESOLVED, AUTO_RESOLVER)


def test_undecidable_shipment_waits_for_an_operator(runs: list[Run], tmp_path: Path) -> None:
    run = start(
        runs,
        tmp_path,
        {
            "faults": [
                fault("create_shipment", "lose_response"),
                fault("find_shipment_by_reference", "throttle", times=1),
            ]
        },
    )
    waiting = run.start()
    assert waiting["status"] == "RUNNING"
    (item,) = run.world.ledger.list_items(status="OPEN")
    assert item.task_token is not None
    assert run.world.notifier.notices[0].waiting is True

    resolution = resolve(
        run.world.ledger,
        item.item_id,
        "applied",
        "ops@acme.example",
        "carrier shows the label",
        send_task_success=run.engine.send_task_success,
    )

    assert resolution.resumed is True
    done = run.engine.describe_execution(waiting["executionArn"])
    assert done["status"] == "SUCCEEDED"
    assert run.applied("create_shipment") == 1


def test_a_second_look_while_waiting_resumes_the_case_itself(
    runs: list[Run], tmp_path: Path
) -> None:
    run = start(
        runs,
        tmp_path,
        {
            "faults": [
                fault("create_shipment", "lose_response"),
                fault("find_shipment_by_reference", "throttle", times=1),
            ]
        },
        resumes=True,
    )
    done = run.start()

    assert done["status"] == "SUCCEEDED"
    (item,) = run.world.ledger.list_items()
    assert (item.status, item.resolved_by) == (ReconStatus.RESOLVED, AUTO_RESOLVER)
    assert run.applied("create_shipment") == 1


def test_failed_release_is_recorded_and_the_saga_says_so(runs: list[Run], tmp_path: Path) -> None:
    run = start(
        runs,
        tmp_path,
        {"faults": [fault("create_shipment", "reject"), fault("release", "reject")]},
    )
    done = run.start()

    assert (done["status"], done["error"]) == ("FAILED", "Saga.CompensationFailed")
    reasons = {i.reason for i in run.world.ledger.list_items(status="OPEN")}
    # A rejection is recorded FAILED: nothing for automatic reconciliation to decide.
    assert "compensation release_reservation failed (attempt 1)" in reasons
    assert run.applied("release") == 0


EXAMPLES = Path(__file__).parents[3] / "examples"
#: faults file → (status, error) the saga ends in (crash files: test_handlers_seed002.py).
EXPECTED = {
    "faults-lost-refund-response.json": ("SUCCEEDED", None),
    "faults-throttled-refund.json": ("SUCCEEDED", None),
    "faults-slow-reservation.json": ("SUCCEEDED", None),
    "faults-shipment-uncertain.json": ("SUCCEEDED", None),
    "faults-shipment-rejected.json": ("FAILED", "Saga.Compensated"),
    "faults-release-times-out.json": ("FAILED", "Saga.Compensated"),
    "faults-release-reply-lost.json": ("FAILED", "Saga.Compensated"),
    "faults-shipment-unverifiable.json": ("RUNNING", None),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_faults_files_never_double_an_effect(
    runs: list[Run], tmp_path: Path, name: str
) -> None:
    faults = load_faults(EXAMPLES / name)
    run = start(runs, tmp_path, faults.model_dump(mode="json", exclude_none=True))
    done = run.start()

    assert (done["status"], done.get("error")) == EXPECTED[name]
    for operation in ("reserve", "release", "refund", "create_shipment"):
        assert run.applied(operation) <= 1, operation
