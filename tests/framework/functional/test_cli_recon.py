"""``stepsaga recon``: a case waits for a person; resolving lets it finish, exactly once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepsaga._project.home import StateHome
from stepsaga._reconciliation import resolve
from stepsaga.ledger import open_ledger
from tests.framework.functional.cli_support import EXAMPLES, cli, effects, write_case, write_faults

ITEM_KEYS = {
    "id",
    "tenant_id",
    "case_id",
    "step",
    "action_key",
    "reason",
    "status",
    "evidence",
    "outcome",
    "resolved_by",
    "note",
    "waiting",
    "created_at",
    "updated_at",
    "resolved_at",
    "dual_control",
    "first_approval",
    "awaiting_second_approver",
    "audit",
}
UNVERIFIABLE = EXAMPLES / "faults-shipment-unverifiable.json"


def _waiting_case(home: StateHome, tmp_path: Path, faults: Path = UNVERIFIABLE) -> dict[str, Any]:
    result = cli(home, "start", str(write_case(tmp_path)), "--faults", str(faults), "--json")
    assert result.code == 0, result.err
    view: dict[str, Any] = result.json()
    return view


def test_an_uncertain_shipment_waits_for_a_person(home: StateHome, tmp_path: Path) -> None:
    view = _waiting_case(home, tmp_path)
    assert (view["status"], view["outcome"]) == ("RUNNING", "awaiting_reconciliation")
    assert view["waiting_for"] == ["AwaitDecisionCreateShipment"]
    assert len(view["open_items"]) == 1
    steps = {s["state"]: s["ledger_status"] for s in view["steps"]}
    assert steps["CreateShipment"] == "UNKNOWN"
    status = cli(home, "status", "CASE-1001", "--json").json()
    assert status["outcome"] == "awaiting_reconciliation"


def test_recon_list_and_show_json(home: StateHome, tmp_path: Path) -> None:
    view = _waiting_case(home, tmp_path)
    listed = cli(home, "recon", "list", "--json")
    assert listed.code == 0
    assert listed.json()["next_token"] is None
    items = listed.json()["items"]
    assert [item["id"] for item in items] == view["open_items"]
    item = items[0]
    assert set(item) == ITEM_KEYS
    assert (item["tenant_id"], item["case_id"], item["step"], item["status"]) == (
        "acme",
        "CASE-1001",
        "CreateShipment",
        "OPEN",
    )
    assert item["action_key"] == "acme:CASE-1001:r1:create_shipment"
    assert item["waiting"] is True
    assert "outcome unknown" in item["reason"]
    shown = cli(home, "recon", "show", item["id"], "--json")
    assert shown.code == 0
    assert shown.json() == item
    assert cli(home, "recon", "list", "--status", "resolved", "--json").json()["items"] == []
    assert cli(home, "recon", "list", "--tenant", "globex", "--json").json()["items"] == []
    assert len(cli(home, "recon", "list", "--status", "all", "--json").json()["items"]) == 1


def test_recon_tables(home: StateHome, tmp_path: Path) -> None:
    view = _waiting_case(home, tmp_path)
    listed = cli(home, "recon", "list")
    assert view["open_items"][0] in listed.out
    shown = cli(home, "recon", "show", view["open_items"][0])
    assert "evidence." in shown.out
    status = cli(home, "status", "CASE-1001")
    assert "recon resolve" in status.out


def test_resolving_applied_continues_the_case(home: StateHome, tmp_path: Path) -> None:
    item_id = _waiting_case(home, tmp_path)["open_items"][0]
    assert effects(home)["create_shipment"] == 1  # the shipment went out; its reply was lost
    result = cli(
        home,
        "recon",
        "resolve",
        item_id,
        "--outcome",
        "applied",
        "--by",
        "ops@acme.example",
        "--note",
        "carrier shows it",
        "--json",
    )
    assert result.code == 0, result.err
    data = result.json()
    assert set(data) == {"item", "execution"}
    assert (data["item"]["status"], data["item"]["outcome"], data["item"]["resolved_by"]) == (
        "RESOLVED",
        "applied",
        "ops@acme.example",
    )
    assert data["item"]["note"] == "carrier shows it"
    assert (data["execution"]["status"], data["execution"]["outcome"]) == (
        "SUCCEEDED",
        "completed",
    )
    assert data["execution"]["open_items"] == []
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}

    same = cli(
        home,
        "recon",
        "resolve",
        item_id,
        "--outcome",
        "applied",
        "--by",
        "ops",
        "--note",
        "again",
        "--json",
    )
    assert same.code == 0
    # Idempotent: the same item (the first decision's by and note) and the case it let
    # continue, as it stands; nothing written, nothing resumed again.
    assert same.json()["item"] == data["item"]
    assert same.json()["execution"]["status"] == "SUCCEEDED"
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}
    other = cli(
        home,
        "recon",
        "resolve",
        item_id,
        "--outcome",
        "not-applied",
        "--by",
        "ops",
        "--note",
        "changed my mind",
    )
    assert other.code == 2
    assert "already resolved" in other.err
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}


def test_resolving_not_applied_performs_the_effect_once(home: StateHome, tmp_path: Path) -> None:
    faults = write_faults(
        tmp_path,
        {
            "service": "shipping",
            "operation": "create_shipment",
            "attempt": 1,
            "fault": "timeout_before_effect",
        },
        # Both automatic looks (reconcile, then await) fail, so a person must decide;
        # later lookups work.
        {
            "service": "shipping",
            "operation": "find_shipment_by_reference",
            "times": 2,
            "fault": "throttle",
        },
    )
    item_id = _waiting_case(home, tmp_path, faults)["open_items"][0]
    assert effects(home).get("create_shipment", 0) == 0
    result = cli(
        home,
        "recon",
        "resolve",
        item_id,
        "--outcome",
        "not-applied",
        "--by",
        "ops",
        "--note",
        "carrier has no such shipment",
    )
    assert result.code == 0, result.err
    assert "outcome completed" in result.out
    assert "→ CreateShipment" in result.out
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}


@pytest.mark.parametrize(
    "args",
    [
        ["--outcome", "maybe", "--by", "x", "--note", "n"],
        ["--outcome", "applied", "--note", "n"],
        ["--outcome", "applied", "--by", "x"],
        ["--outcome", "applied", "--by", " ", "--note", "n"],
    ],
)
def test_bad_resolutions_change_nothing(home: StateHome, tmp_path: Path, args: list[str]) -> None:
    item_id = _waiting_case(home, tmp_path)["open_items"][0]
    result = cli(home, "recon", "resolve", item_id, *args)
    assert result.code == 2
    item = cli(home, "recon", "show", item_id, "--json").json()
    assert (item["status"], item["waiting"]) == ("OPEN", True)


def test_unknown_item(home: StateHome, tmp_path: Path) -> None:
    _waiting_case(home, tmp_path)
    result = cli(home, "recon", "show", "rec-nope")
    assert result.code == 2
    assert result.err.strip() == "error: no reconciliation item 'rec-nope'"


def test_resolving_again_resumes_a_case_its_first_resolver_left_waiting(
    home: StateHome, tmp_path: Path
) -> None:
    """A ``recon resolve`` killed between its ledger commit and resuming the case leaves the
    item decided and the case waiting; repeating the decision must resume it (found by the
    chaos harness, ``tests/framework/chaos/test_crash_harness.py``)."""
    item_id = _waiting_case(home, tmp_path)["open_items"][0]
    with open_ledger(home.ledger_url) as ledger:  # the first resolver: committed, then died
        resolve(
            ledger,
            item_id,
            "applied",
            "ops@acme.example",
            "carrier shows it",
            send_task_success=None,
        )
    assert cli(home, "status", "CASE-1001", "--json").json()["outcome"] == (
        "awaiting_reconciliation"
    )

    again = cli(
        home,
        "recon",
        "resolve",
        item_id,
        "--outcome",
        "applied",
        "--by",
        "ops@acme.example",
        "--note",
        "carrier shows it",
        "--json",
    )

    assert again.code == 0, again.err
    execution = again.json()["execution"]
    assert (execution["status"], execution["outcome"]) == ("SUCCEEDED", "completed")
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}


def test_recon_list_by_case_and_limit(home: StateHome, tmp_path: Path) -> None:
    for case_id in ("CASE-2001", "CASE-2002", "CASE-2003"):
        case = write_case(tmp_path, case_id)
        started = cli(home, "start", str(case), "--faults", str(UNVERIFIABLE), "--json")
        assert started.json()["outcome"] == "awaiting_reconciliation", started.err
    every = cli(home, "recon", "list", "--json").json()["items"]
    assert [item["case_id"] for item in every] == ["CASE-2001", "CASE-2002", "CASE-2003"]
    only = cli(home, "recon", "list", "--case", "CASE-2002", "--json").json()["items"]
    assert [item["case_id"] for item in only] == ["CASE-2002"]
    oldest = cli(home, "recon", "list", "--limit", "2", "--json").json()["items"]
    assert oldest == every[:2]
    assert cli(home, "recon", "list", "--case", "CASE-404", "--json").json()["items"] == []
    refused = cli(home, "recon", "list", "--limit", "0")
    assert refused.code == 2


#: The refund's reply is lost twice and both automatic looks fail: a person decides the
#: refund (``RefundPayment`` is under dual control in the reference app).
REFUND_UNVERIFIABLE = (
    {"service": "payments", "operation": "refund", "times": 2, "fault": "lose_response"},
    {"service": "payments", "operation": "find_refund_by_key", "times": 2, "fault": "throttle"},
)


def _resolve(home: StateHome, item_id: str, outcome: str, by: str, note: str) -> Any:
    return cli(home, "recon", "resolve", item_id, "--outcome", outcome, "--by", by, "--note", note)


def test_not_applied_on_a_refund_needs_two_different_people(
    home: StateHome, tmp_path: Path
) -> None:
    faults = write_faults(tmp_path, *REFUND_UNVERIFIABLE)
    view = _waiting_case(home, tmp_path, faults)
    assert view["waiting_for"] == ["AwaitDecisionRefundPayment"]
    item_id = view["open_items"][0]
    assert effects(home)["refund"] == 1  # applied, reply lost: not_applied would be wrong

    first = _resolve(home, item_id, "not-applied", "ann@acme.example", "no refund at PSP")
    assert first.code == 0, first.err
    assert "awaiting a second approver" in first.out
    shown = cli(home, "recon", "show", item_id, "--json").json()
    assert (shown["status"], shown["dual_control"], shown["awaiting_second_approver"]) == (
        "OPEN",
        True,
        True,
    )
    assert shown["first_approval"]["by"] == "ann@acme.example"
    assert shown["first_approval"]["note"] == "no refund at PSP"
    assert shown["audit"] is None
    status = cli(home, "status", "CASE-1001", "--json").json()
    assert status["waiting_for"] == ["AwaitDecisionRefundPayment"]  # nothing resumed

    same = _resolve(home, item_id, "not-applied", " ANN@acme.example", "really")
    assert same.code == 2
    assert len(same.err.strip().splitlines()) == 1
    assert "needs a second approver" in same.err
    disagree = _resolve(home, item_id, "applied", "bob@acme.example", "PSP shows it")
    assert disagree.code == 2
    assert len(disagree.err.strip().splitlines()) == 1
    assert "ann@acme.example said not_applied" in disagree.err
    assert "bob@acme.example says applied" in disagree.err
    still = cli(home, "recon", "show", item_id, "--json").json()
    assert (still["status"], still["first_approval"]) == ("OPEN", shown["first_approval"])

    second = cli(
        home,
        "recon",
        "resolve",
        item_id,
        "--outcome",
        "not-applied",
        "--by",
        "bob@acme.example",
        "--note",
        "confirmed with PSP",
        "--json",
    )
    assert second.code == 0, second.err
    data = second.json()
    assert (data["item"]["status"], data["item"]["resolved_by"]) == (
        "RESOLVED",
        "bob@acme.example",
    )
    assert data["execution"]["outcome"] == "completed"
    # The step ran again under the same key: the payments service found its refund.
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}
    audit = cli(home, "recon", "show", item_id, "--json").json()["audit"]
    assert audit["outcome"] == "not_applied"
    assert [d["by"] for d in audit["deciders"]] == ["ann@acme.example", "bob@acme.example"]
    assert audit["notes"] == ["no refund at PSP", "confirmed with PSP"]
    assert audit["identity"] == {}
    table = cli(home, "recon", "show", item_id)
    assert "audit.decider.2" in table.out
    assert "bob@acme.example" in table.out


def test_applied_on_a_refund_needs_one_person_and_leaves_an_audit_record(
    home: StateHome, tmp_path: Path
) -> None:
    faults = write_faults(tmp_path, *REFUND_UNVERIFIABLE)
    item_id = _waiting_case(home, tmp_path, faults)["open_items"][0]
    # The first approver may change their own answer to applied.
    assert _resolve(home, item_id, "not-applied", "ann@acme.example", "none").code == 0
    result = _resolve(home, item_id, "applied", "ann@acme.example", "found it after all")
    assert result.code == 0, result.err
    shown = cli(home, "recon", "show", item_id, "--json").json()
    assert (shown["status"], shown["outcome"]) == ("RESOLVED", "applied")
    assert [d["by"] for d in shown["audit"]["deciders"]] == ["ann@acme.example"]
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}


def test_a_step_without_dual_control_resolves_in_one_call_with_an_audit_record(
    home: StateHome, tmp_path: Path
) -> None:
    item_id = _waiting_case(home, tmp_path)["open_items"][0]
    result = _resolve(home, item_id, "not-applied", "ops@acme.example", "carrier has none")
    assert result.code == 0, result.err
    assert "awaiting" not in result.out
    shown = cli(home, "recon", "show", item_id, "--json").json()
    assert (shown["status"], shown["dual_control"]) == ("RESOLVED", False)
    assert shown["audit"]["resolved_by"] == "ops@acme.example"
