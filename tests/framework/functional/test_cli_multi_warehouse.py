"""The multi-warehouse saga (a per-item step and a parallel group) through the CLI on the
embedded backend: every applied effect is undone exactly once, checked against the
simulated services' own effects table; an uncertain item waits for a person and completes.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from services.simulated import ServicesDb, Simulation
from stepsaga._project.home import StateHome
from stepsaga._util.clock import SystemClock
from tests.framework.functional.cli_support import EXAMPLES, cli, write_json

SAGA = ("--saga", "multi-warehouse-replacement")
CASE = "CASE-2001"
LINES = ("L1", "L2", "L3")


def _case(folder: Path) -> Path:
    data: dict[str, Any] = json.loads((EXAMPLES / "case-multi-warehouse.json").read_text())
    data["approval"]["approved_at"] = SystemClock().now().strftime("%Y-%m-%dT%H:%M:%SZ")
    return write_json(folder / "case.json", data)


def _start(home: StateHome, tmp_path: Path, faults: str | None = None) -> dict[str, Any]:
    args = ["start", *SAGA, str(_case(tmp_path)), "--json"]
    if faults is not None:
        args += ["--faults", str(EXAMPLES / faults)]
    result = cli(home, *args)
    assert result.code == 0, result.err
    view: dict[str, Any] = result.json()
    return view


def _effects(home: StateHome) -> Counter[tuple[str, str]]:
    """(operation, action key) → how often the services applied it."""
    simulation = Simulation(ServicesDb(home.services_path), SystemClock())
    return Counter((str(e.operation), e.action_key) for e in simulation.effects(case_id=CASE))


def _key(operation: str) -> str:
    return f"acme:{CASE}:r1:{operation}"


def _ledger(view: dict[str, Any]) -> dict[str, str | None]:
    return {step["action_key"]: step["ledger_status"] for step in view["steps"]}


def test_happy_path_reserves_each_line_once_under_its_own_key(
    home: StateHome, tmp_path: Path
) -> None:
    view = _start(home, tmp_path)

    assert (view["status"], view["outcome"]) == ("SUCCEEDED", "completed")
    reserved = {_key(f"reserve_line#{line}") for line in LINES}
    assert {key for op, key in _effects(home) if op == "reserve"} == reserved
    assert all(n == 1 for n in _effects(home).values())
    ledger = _ledger(view)
    assert all(ledger[key] == "COMPLETED" for key in reserved)
    assert ledger[_key("refund_payment")] == ledger[_key("create_shipment")] == "COMPLETED"


def test_a_rejected_branch_undoes_every_applied_effect_exactly_once(
    home: StateHome, tmp_path: Path
) -> None:
    view = _start(home, tmp_path, "faults-multi-warehouse-shipment-rejected.json")

    assert (view["status"], view["outcome"]) == ("FAILED", "compensated")
    effects = _effects(home)
    assert all(n == 1 for n in effects.values()), effects
    ops = Counter(op for op, _ in effects.elements())
    # Three lines reserved and released, the refund (the other branch) kept and escalated.
    assert ops == Counter({"reserve": 3, "release": 3, "refund": 1})
    released = {key for op, key in effects if op == "release"}
    assert released == {_key(f"reserve_line#{line}:compensate:release_line") for line in LINES}
    items = cli(home, "recon", "list", "--json").json()["items"]
    assert [(i["step"], i["action_key"]) for i in items] == [
        ("RefundPayment", _key("refund_payment"))
    ]


def test_a_rejected_refund_releases_the_lines_and_escalates_the_shipment(
    home: StateHome, tmp_path: Path
) -> None:
    faults = write_json(
        tmp_path / "faults.json",
        {"faults": [{"service": "payments", "operation": "refund", "fault": "reject"}]},
    )
    result = cli(home, "start", *SAGA, str(_case(tmp_path)), "--faults", str(faults), "--json")
    view = result.json()

    assert (view["status"], view["outcome"]) == ("FAILED", "compensated")
    ops = Counter(op for op, _ in _effects(home).elements())
    assert ops == Counter({"reserve": 3, "release": 3, "create_shipment": 1})
    items = cli(home, "recon", "list", "--json").json()["items"]
    assert [i["step"] for i in items] == ["CreateShipment"]


def test_an_uncertain_line_waits_for_a_person_then_the_case_completes(
    home: StateHome, tmp_path: Path
) -> None:
    view = _start(home, tmp_path, "faults-multi-warehouse-line-uncertain.json")

    assert (view["status"], view["outcome"]) == ("RUNNING", "awaiting_reconciliation")
    assert view["waiting_for"] == ["AwaitDecisionReserveLine"]
    ledger = _ledger(view)
    assert ledger[_key("reserve_line#L2")] == "UNKNOWN"
    # The other lines kept their proof while L2 waits.
    assert ledger[_key("reserve_line#L1")] == ledger[_key("reserve_line#L3")] == "COMPLETED"
    (item,) = view["open_items"]
    shown = cli(home, "recon", "show", item, "--json").json()
    assert shown["action_key"] == _key("reserve_line#L2")

    resolved = cli(
        home, "recon", "resolve", item, "--outcome", "applied", "--by", "ops@acme.example",
        "--note", "reservation seen in the warehouse system", "--json",
    )  # fmt: skip
    assert resolved.code == 0, resolved.err

    status = cli(home, "status", CASE, "--json").json()
    assert (status["status"], status["outcome"]) == ("SUCCEEDED", "completed")
    effects = _effects(home)
    assert all(n == 1 for n in effects.values()), effects
    assert Counter(op for op, _ in effects.elements()) == Counter(
        {"reserve": 3, "refund": 1, "create_shipment": 1}
    )


def test_graph_shows_the_group_and_the_items(home: StateHome) -> None:
    result = cli(home, "graph", "multi-warehouse-replacement")

    assert result.code == 0, result.err
    for name in ("ReserveLines", "ReserveLine", "RefundAndShip", "UndoReserveLineItems"):
        assert name in result.out
    assert "subgraph" in result.out


def test_duplicate_line_ids_are_refused_and_nothing_is_written(
    home: StateHome, tmp_path: Path
) -> None:
    data = json.loads(_case(tmp_path).read_text())
    data["lines"][1]["line_id"] = "L1"
    path = write_json(tmp_path / "dup.json", data)

    result = cli(home, "start", *SAGA, str(path))

    assert result.code == 2
    assert "line_id 'L1' appears twice" in result.err
    assert not home.root.exists()


def test_an_uncertain_branch_waits_while_the_other_keeps_its_proof(
    home: StateHome, tmp_path: Path
) -> None:
    view = _start(home, tmp_path, "faults-shipment-unverifiable.json")

    assert (view["status"], view["outcome"]) == ("RUNNING", "awaiting_reconciliation")
    assert view["waiting_for"] == ["AwaitDecisionCreateShipment"]
    ledger = _ledger(view)
    assert ledger[_key("refund_payment")] == "COMPLETED"  # the other branch finished
    assert ledger[_key("create_shipment")] == "UNKNOWN"
    (item,) = view["open_items"]

    resolved = cli(
        home, "recon", "resolve", item, "--outcome", "applied", "--by", "ops@acme.example",
        "--note", "carrier confirms the parcel", "--json",
    )  # fmt: skip
    assert resolved.code == 0, resolved.err

    status = cli(home, "status", CASE, "--json").json()
    assert (status["status"], status["outcome"]) == ("SUCCEEDED", "completed")
    assert all(n == 1 for n in _effects(home).values())
