"""Revisions supersede and ``stepsaga stop``, through the CLI on the embedded backend:
counted against the simulated services' own table of effects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stepsaga._project.home import StateHome
from stepsaga.ledger import Status, open_ledger
from stepsaga.ledger._models import Claim
from tests.framework.conformance.ledger.helpers import make_action
from tests.framework.functional.cli_support import EXAMPLES, case_data, cli, effects, write_json

UNVERIFIABLE = str(EXAMPLES / "faults-shipment-unverifiable.json")
REJECTED = str(EXAMPLES / "faults-shipment-rejected.json")
BY = ("--by", "ops@acme.example", "--note", "customer cancelled")


def _revision(tmp_path: Path, revision: int, **changes: Any) -> str:
    data = case_data()
    data["approval"]["revision"] = revision
    for section, values in changes.items():
        data[section] = {**data[section], **values}
    return str(write_json(tmp_path / f"r{revision}.json", data))


def _steps(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["state"]: step for step in view["steps"]}


def test_a_new_revision_of_a_completed_case_adopts_every_effect(
    home: StateHome, tmp_path: Path
) -> None:
    assert cli(home, "start", _revision(tmp_path, 1)).code == 0
    result = cli(home, "start", _revision(tmp_path, 2), "--json")
    assert result.code == 0, result.err
    view = result.json()
    assert (view["name"], view["outcome"]) == ("acme-CASE-1001-r2", "completed")
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}  # not 2 each
    assert {s["attempts"] for s in view["steps"] if s["kind"] == "step"} == {0}


def test_a_changed_refund_waits_for_a_person_who_reads_the_change(
    home: StateHome, tmp_path: Path
) -> None:
    assert cli(home, "start", _revision(tmp_path, 1)).code == 0
    changed = _revision(tmp_path, 2, refund={"amount": "25.00"})
    view = cli(home, "start", changed, "--json").json()
    assert view["outcome"] == "awaiting_reconciliation"
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}
    (item,) = cli(home, "recon", "list", "--json").json()["items"]
    assert item["reason"].startswith("revision conflict")
    assert item["evidence"]["last_error"]["message"] == (
        "revision 2 changes refund_payment already applied under revision 1: "
        "amount 20.00 → 25.00 USD"
    )
    # "applied": revision 1's refund stands for revision 2; the case goes on, nothing re-sent.
    resolved = cli(home, "recon", "resolve", item["id"], "--outcome", "applied", *BY, "--json")
    assert resolved.code == 0, resolved.err
    assert resolved.json()["execution"]["outcome"] == "completed"
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}


def test_a_revision_starts_only_when_the_earlier_one_is_closed(
    home: StateHome, tmp_path: Path
) -> None:
    waiting = cli(home, "start", _revision(tmp_path, 1), "--faults", UNVERIFIABLE, "--json")
    assert waiting.json()["outcome"] == "awaiting_reconciliation"
    refused = cli(home, "start", _revision(tmp_path, 2))
    assert refused.code == 2
    assert refused.err.count("\n") == 1
    assert "execution acme-CASE-1001-r1 (revision 1) is RUNNING; stop it first" in refused.err
    assert "stepsaga stop acme-CASE-1001-r1" in refused.err
    assert "acme-CASE-1001-r2" not in cli(home, "status", "CASE-1001").out


def test_stop_closes_the_case_and_its_uncertain_shipment_goes_to_a_person(
    home: StateHome, tmp_path: Path
) -> None:
    cli(home, "start", _revision(tmp_path, 1), "--faults", UNVERIFIABLE)
    stopped = cli(home, "stop", "--case", "CASE-1001", *BY, "--json")
    assert stopped.code == 0, stopped.err
    view = stopped.json()
    assert (view["status"], view["error"], view["outcome"]) == (
        "ABORTED",
        "Stepsaga.Stopped",
        "stopped",
    )
    assert view["cause"] == "stopped by ops@acme.example: customer cancelled"
    assert view["waiting_for"] == []
    (item,) = cli(home, "recon", "list", "--json").json()["items"]
    assert item["waiting"] is False  # open, still to decide, but nothing waits on it
    assert view["open_items"] == [item["id"]]
    # Stopped: never redriven, and stopping again changes nothing.
    redrive = cli(home, "redrive", "acme-CASE-1001-r1")
    assert redrive.code == 2
    assert "cannot be redriven: it was stopped (stopped by ops@acme.example" in redrive.err
    again = cli(home, "stop", "acme-CASE-1001-r1", *BY, "--json")
    assert again.code == 0
    assert again.json()["outcome"] == "stopped"
    # Revision 2 may start now: the shipment revision 1 left uncertain goes to a person
    # instead of shipping a second time.
    second = cli(home, "start", _revision(tmp_path, 2), "--json").json()
    assert second["outcome"] == "awaiting_reconciliation"
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}
    reasons = sorted(i["reason"] for i in cli(home, "recon", "list", "--json").json()["items"])
    assert reasons[-1].startswith("revision conflict")


def test_stop_settles_an_in_flight_claim_into_an_item(home: StateHome, tmp_path: Path) -> None:
    """A claim held when the execution stops (a worker mid-call: here a release claimed and
    never finished) becomes UNKNOWN with an open item, never a silently dropped
    IN_PROGRESS whose lease would just run out."""
    cli(home, "start", _revision(tmp_path, 1), "--faults", UNVERIFIABLE)
    release = make_action("reserve_stock:compensate:release_reservation", params={})
    with open_ledger(home.ledger_url) as ledger:
        assert isinstance(ledger.claim(release), Claim)
    result = cli(home, "stop", "acme-CASE-1001-r1", *BY, "--json")
    assert result.code == 0, result.err
    with open_ledger(home.ledger_url) as ledger:
        record = ledger.get(release.key)
        assert record is not None
        assert record.status is Status.UNKNOWN
        items = [i for i in ledger.list_items(status="OPEN") if i.record_key == release.key]
    assert [i.reason for i in items] == ["execution stopped: outcome unknown (attempt 1)"]
    assert items[0].step == "ReleaseReservation"
    assert set(result.json()["open_items"]) >= {items[0].item_id}


def test_stop_refuses_what_is_not_running(home: StateHome, tmp_path: Path) -> None:
    cli(home, "start", _revision(tmp_path, 1))
    result = cli(home, "stop", "acme-CASE-1001-r1", *BY)
    assert result.code == 2
    assert result.err == (
        "error: execution acme-CASE-1001-r1 is SUCCEEDED, not running: there is nothing to stop\n"
    )
    assert cli(home, "stop", "acme-CASE-1001-r1", "--by", "x", "--note", "n").code == 2
    assert (
        cli(home, "stop", "acme-CASE-1001-r1", "--by", "ops@acme.example", "--note", " ").code == 2
    )
    assert cli(home, "stop", *BY).code == 2  # neither EXECUTION nor --case


def test_compensated_and_superseded_executions_are_not_redriven(
    home: StateHome, tmp_path: Path
) -> None:
    first = cli(home, "start", _revision(tmp_path, 1), "--faults", REJECTED, "--json").json()
    assert first["outcome"] == "compensated"
    refused = cli(home, "redrive", "acme-CASE-1001-r1")
    assert refused.code == 2
    assert "cannot be redriven: it ended compensated" in refused.err
    # A new revision after compensation reserves again (the first reservation was released)
    # and adopts the refund (escalated, never undone): one refund in all. The faults attach
    # to the case, so shipping refuses revision 2 too, and it compensates its own reservation.
    second = cli(home, "start", _revision(tmp_path, 2), "--json").json()
    assert second["outcome"] == "compensated"
    steps = _steps(second)
    assert steps["ReserveStock"]["attempts"] == 1
    assert steps["RefundPayment"]["attempts"] == 0
    assert effects(home) == {"reserve": 2, "release": 2, "refund": 1}
    # Revision 1 stays not redrivable, and a revision older than the newest never starts.
    assert "it ended compensated" in cli(home, "redrive", "acme-CASE-1001-r1").err
    data = case_data(case_id="CASE-1001")
    data["approval"]["revision"] = 1
    data["order_id"] = "ORD-78"
    older = cli(home, "start", str(write_json(tmp_path / "other-r1.json", data)))
    assert older.code == 2  # same revision, another input: refused naming the execution
    assert "approve revision 2" in older.err


def test_a_revision_older_than_the_newest_does_not_start(home: StateHome, tmp_path: Path) -> None:
    assert cli(home, "start", _revision(tmp_path, 3)).code == 0
    refused = cli(home, "start", _revision(tmp_path, 2))
    assert refused.code == 2
    assert "revision 3 exists (execution acme-CASE-1001-r3)" in refused.err
    assert "superseded and does not start" in refused.err


def test_a_superseded_execution_is_not_redriven(home: StateHome, tmp_path: Path) -> None:
    throttled = write_json(
        tmp_path / "throttled.json",
        {
            "faults": [
                {"service": "payments", "operation": "refund", "times": 8, "fault": "throttle"}
            ]
        },
    )
    first = cli(home, "start", _revision(tmp_path, 1), "--faults", str(throttled), "--json")
    assert first.json()["outcome"] == "failed"  # retries ran out: closed, redrivable
    assert cli(home, "start", _revision(tmp_path, 2)).code == 0
    refused = cli(home, "redrive", "acme-CASE-1001-r1")
    assert refused.code == 2
    assert "cannot be redriven: it is superseded by revision 2 (execution acme-CASE-1001-r2)" in (
        refused.err
    )
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}


def test_stop_prints_the_stopped_case(home: StateHome, tmp_path: Path) -> None:
    cli(home, "start", _revision(tmp_path, 1), "--faults", UNVERIFIABLE)
    result = cli(home, "stop", "acme-CASE-1001-r1", *BY)
    assert result.code == 0, result.err
    assert "outcome stopped" in result.out
    view = cli(home, "status", "CASE-1001", "--json").json()
    assert (view["outcome"], view["redriveStatus"]) == ("stopped", "NOT_REDRIVABLE")
