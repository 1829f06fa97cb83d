"""The reference app's *other* saga (a parallel group and a per-item step) deployed on moto:
every verb finds it from the stack although the project's default is replacement-order,
and ``cancel`` undoes each reserved line with the deployed ReleaseLine function."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services import load_faults, open_simulation
from stepsaga._project.home import StateHome
from stepsaga.ledger._models import ReconStatus
from stepsaga.testing import moto_deployment
from stepsaga.testing._moto_stack import MotoDeployment
from tests.framework.functional.cli_support import EXAMPLES, effects
from tests.framework.functional.test_moto_end_to_end import (
    aws,
    ledger,
    printed_json,
    synthesize,
)

SAGA = "multi-warehouse-replacement"
CASE = "CASE-2001"


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    return synthesize(tmp_path_factory, SAGA)


@pytest.fixture
def deployed(synthesized: tuple[str, dict[str, Any]], home: StateHome) -> Iterator[MotoDeployment]:
    stack_name, template = synthesized
    services = {"STEPSAGA_SERVICES": "simulated", "STEPSAGA_HOME": str(home.root)}
    with moto_deployment(template, stack_name=stack_name, environment=services) as deployment:
        yield deployment


def test_cancel_of_the_parallel_saga_undoes_each_line_on_its_own_stack(
    deployed: MotoDeployment, home: StateHome, tmp_path: Path
) -> None:
    faults = EXAMPLES / "faults-multi-warehouse-line-uncertain.json"
    open_simulation(home).attach_faults("acme", CASE, load_faults(faults))
    case = tmp_path / "case.json"
    case.write_text((EXAMPLES / "case-multi-warehouse.json").read_text())
    started = aws(deployed, "start", "--saga", SAGA, str(case), "--json")
    assert started.code == 0, started.err
    arn = started.json()["executionArn"]

    def waiting(_: Any) -> bool:
        return any(i.task_token for i in ledger(deployed).list_items(status=ReconStatus.OPEN))

    assert deployed.wait(arn, until=waiting)["status"] == "RUNNING"
    # No --saga: the stack's state machine names it (the project's default is the other).
    status = aws(deployed, "status", CASE, "--json")
    assert status.code == 0, status.err
    assert status.json()["saga"] == SAGA

    who = ("--by", "ops@acme.example", "--note", "customer cancelled")
    cancelled = aws(deployed, "cancel", "--case", CASE, *who, "--json")

    assert cancelled.code == 0, cancelled.err
    undone = printed_json(cancelled.out)["undone"]
    completed = [
        s["action_key"]
        for s in status.json()["steps"]
        if s["kind"] == "step" and s["ledger_status"] == "COMPLETED"
    ]
    assert completed
    # Each completed line released by the deployed ReleaseLine, last first.
    assert [u["action_key"] for u in undone] == completed[::-1]
    assert {(u["step"], u["kind"]) for u in undone} == {("ReserveLine", "compensated")}
    assert [call.error for call in deployed.calls("ReleaseLine")] == [None] * len(completed)
    assert effects(home, CASE)["release"] == len(completed)
    assert json.loads(json.dumps(undone))  # the output is plain JSON
