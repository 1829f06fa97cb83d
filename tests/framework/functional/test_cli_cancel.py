"""``stepsaga cancel`` on the embedded backend: the execution stops and what it applied is
undone, last step first, with the saga's own compensations; uncertain and irreversible
steps become open items. ``stop`` is the freeze: nothing is undone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import EXAMPLES, cli, effects, write_case
from tests.framework.functional.test_cli_recon import _waiting_case

CANCEL = ("--by", "ops@acme.example", "--note", "customer cancelled")
MULTI = ("--saga", "multi-warehouse-replacement")


def _revision_2(tmp_path: Path) -> Path:
    data = json.loads(write_case(tmp_path).read_text())
    data["approval"]["revision"] = 2
    second = tmp_path / "r2.json"
    second.write_text(json.dumps(data))
    return second


def _items(home: StateHome) -> dict[str, dict[str, Any]]:
    listed = cli(home, "recon", "list", "--json").json()["items"]
    return {item["step"]: item for item in listed}


def test_cancel_undoes_in_reverse_and_leaves_uncertain_and_irreversible_to_people(
    home: StateHome, tmp_path: Path
) -> None:
    waiting = _waiting_case(home, tmp_path)  # reserved, refunded, shipment uncertain
    assert effects(home)["release"] == 0

    result = cli(home, "cancel", "--case", "CASE-1001", *CANCEL, "--json")

    assert result.code == 0, result.err
    view = result.json()
    execution = view["execution"]
    assert (execution["status"], execution["outcome"]) == ("ABORTED", "stopped")
    assert execution["cause"] == "cancelled by ops@acme.example: customer cancelled"
    assert [(u["step"], u["kind"]) for u in view["undone"]] == [
        ("RefundPayment", "escalated"),  # a refund is not taken back: a person decides
        ("ReserveStock", "compensated"),
    ]
    assert effects(home)["release"] == 1  # the reservation released, once
    items = _items(home)
    assert set(items) == {"CreateShipment", "RefundPayment"}
    assert items["CreateShipment"]["id"] == waiting["open_items"][0]  # still the person's
    assert items["CreateShipment"]["waiting"] is False  # nothing waits on it any more
    assert items["RefundPayment"]["dual_control"] is True  # money: two people, as ever
    steps = {s["state"]: s["ledger_status"] for s in execution["steps"]}
    assert steps["ReleaseReservation"] == "COMPLETED"

    # Cancelling again replays every undo by its key: nothing happens twice.
    again = cli(home, "cancel", "CASE-1001", *CANCEL, "--json")
    assert again.code == 0, again.err
    assert [u["kind"] for u in again.json()["undone"]] == ["escalated", "compensated"]
    assert effects(home)["release"] == 1
    assert set(_items(home)) == {"CreateShipment", "RefundPayment"}


def test_stop_freezes_and_a_later_cancel_undoes_what_stop_left(
    home: StateHome, tmp_path: Path
) -> None:
    _waiting_case(home, tmp_path)
    stopped = cli(home, "stop", "--case", "CASE-1001", *CANCEL, "--json")
    assert stopped.code == 0, stopped.err
    assert effects(home)["release"] == 0  # the freeze: the reservation stays
    cancelled = cli(home, "cancel", "--case", "CASE-1001", *CANCEL, "--json")
    assert cancelled.code == 0, cancelled.err
    assert effects(home)["release"] == 1


def test_cancel_of_an_ended_execution_is_exit_2_and_undoes_nothing(
    home: StateHome, tmp_path: Path
) -> None:
    started = cli(home, "start", str(write_case(tmp_path)), "--json")
    assert started.json()["outcome"] == "completed"
    result = cli(home, "cancel", "--case", "CASE-1001", *CANCEL)
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        "error: execution acme-CASE-1001-r1 is SUCCEEDED, not running: there is nothing to "
        "cancel (an ended case is changed by a new revision)"
    ]
    assert effects(home)["release"] == 0


def test_a_cancelled_revision_lets_the_next_revision_start(home: StateHome, tmp_path: Path) -> None:
    _waiting_case(home, tmp_path)
    assert cli(home, "cancel", "--case", "CASE-1001", *CANCEL).code == 0
    second = _revision_2(tmp_path)
    started = cli(home, "start", str(second), "--json")
    assert started.code == 0, started.err
    assert started.json()["revision"] == 2


def test_cancel_undoes_each_item_of_a_per_item_step(home: StateHome, tmp_path: Path) -> None:
    data = json.loads((EXAMPLES / "case-multi-warehouse.json").read_text())
    case = tmp_path / "mw.json"
    case.write_text(json.dumps(data))
    faults = EXAMPLES / "faults-multi-warehouse-line-uncertain.json"
    started = cli(home, "start", *MULTI, str(case), "--faults", str(faults), "--json")
    assert started.code == 0, started.err
    assert started.json()["status"] == "RUNNING"
    steps = started.json()["steps"]
    reserved = {s["action_key"] for s in steps if s["ledger_status"] == "COMPLETED"}

    result = cli(home, "cancel", "--case", data["case_id"], *CANCEL, "--json")

    assert result.code == 0, result.err
    undone = result.json()["undone"]
    assert {u["action_key"] for u in undone} == reserved
    assert {u["kind"] for u in undone} <= {"compensated", "escalated"}
    lines = [u for u in undone if u["step"] == "ReserveLine"]
    assert lines
    assert all(u["kind"] == "compensated" for u in lines)
    assert result.json()["execution"]["outcome"] == "stopped"


def test_cancelling_a_later_revision_undoes_what_it_adopted_once(
    home: StateHome, tmp_path: Path
) -> None:
    """Revision 2 adopted revision 1's reservation and refund (no new effects); cancelling
    it releases the reservation under the key that went downstream, once."""
    _waiting_case(home, tmp_path)
    assert cli(home, "stop", "--case", "CASE-1001", *CANCEL).code == 0
    second = _revision_2(tmp_path)
    assert cli(home, "start", str(second), "--json").json()["revision"] == 2

    result = cli(home, "cancel", "acme-CASE-1001-r2", *CANCEL, "--json")

    assert result.code == 0, result.err
    undone = {u["step"]: u for u in result.json()["undone"]}
    assert undone["ReserveStock"]["kind"] == "compensated"
    assert undone["ReserveStock"]["action_key"] == "acme:CASE-1001:r2:reserve_stock"
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1, "release": 1}
    # Revision 1, cancelled after, is superseded: it undoes nothing and says who owns the
    # case's effects (the ledger would refuse its keys anyway). Nothing twice.
    earlier = cli(home, "cancel", "acme-CASE-1001-r1", *CANCEL, "--json")
    assert earlier.code == 0, earlier.err
    assert earlier.json()["undone"] == []
    assert earlier.json()["superseded_by"] == "acme-CASE-1001-r2"
    assert effects(home)["release"] == 1
