"""Tenant isolation: the same case id under two tenants shares nothing, and an event that
names another tenant's action is refused.

The seeded chaos run (``test_crash_harness.py``) also runs every case id under two tenants
and checks each record, item and effect belongs to its own case.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepsaga._project.home import StateHome
from stepsaga.errors import InvalidInputError, OutcomeUnknownError
from stepsaga.ledger._models import ReconStatus
from tests.framework.functional.cli_support import case_data, cli, write_json
from tests.framework.unit.handlers.helpers import (
    World,
    await_event,
    case_input,
    compensation_event,
    compensation_failed_event,
    escalate_event,
    make_world,
    reconcile_event,
    step_event,
)

pytestmark = pytest.mark.slow

TENANTS = ("acme", "globex")
UNVERIFIABLE = {
    "faults": [
        {"service": "shipping", "operation": "create_shipment", "fault": "lose_response"},
        {"service": "shipping", "operation": "find_shipment_by_reference", "fault": "throttle"},
    ]
}


def test_one_case_id_under_two_tenants_shares_no_record_result_or_item(tmp_path: Path) -> None:
    home = StateHome(tmp_path / "home")
    faults = write_json(tmp_path / "faults.json", UNVERIFIABLE)
    views = {}
    for tenant in TENANTS:  # the very same case, byte for byte, but for the tenant
        case = write_json(tmp_path / f"{tenant}.json", case_data("CASE-1001", tenant_id=tenant))
        views[tenant] = cli(home, "start", str(case), "--faults", str(faults), "--json").json()
        assert views[tenant]["outcome"] == "awaiting_reconciliation"

    records = {
        t: cli(home, "ledger", "list", "--tenant", t, "--json").json()["records"] for t in TENANTS
    }
    items = {
        t: cli(home, "recon", "list", "--tenant", t, "--json").json()["items"] for t in TENANTS
    }
    effects = {t: cli(home, "sim", "effects", "--tenant", t, "--json").json() for t in TENANTS}
    for tenant in TENANTS:
        assert records[tenant], tenant
        assert all(r["key"].startswith(f"{tenant}:CASE-1001:") for r in records[tenant])
        assert all(i["tenant_id"] == tenant for i in items[tenant])
        assert all(i["action_key"].startswith(f"{tenant}:") for i in items[tenant])
        assert sorted(e["operation"] for e in effects[tenant]) == [
            "create_shipment",
            "refund",
            "reserve",
        ]
    acme, globex = (set(map(str, (r["key"] for r in records[t]))) for t in TENANTS)
    assert not acme & globex
    assert not {i["id"] for i in items["acme"]} & {i["id"] for i in items["globex"]}
    results = {  # refund ids, reservation ids, shipment ids: each tenant its own
        t: {e["resource_id"] for e in effects[t]} for t in TENANTS
    }
    assert not results["acme"] & results["globex"]

    # A case id under two tenants needs the tenant; resolving one tenant's item moves only it.
    ambiguous = cli(home, "status", "CASE-1001")
    assert ambiguous.code == 2
    assert "--tenant" in ambiguous.err
    resolved = cli(
        home,
        "recon",
        "resolve",
        items["acme"][0]["id"],
        "--outcome",
        "applied",
        "--by",
        "ops@acme.example",
        "--note",
        "carrier shows it",
        "--json",
    ).json()
    assert resolved["execution"]["tenant_id"] == "acme"
    assert resolved["execution"]["outcome"] == "completed"
    other = cli(home, "status", "CASE-1001", "--tenant", "globex", "--json").json()
    assert other["outcome"] == "awaiting_reconciliation"
    still = cli(home, "recon", "list", "--tenant", "globex", "--json").json()["items"]
    assert [i["status"] for i in still] == ["OPEN"]


# --- events naming another tenant's action -----------------------------------------------

ACME = case_input()
GLOBEX = case_input(tenant_id="globex")


def original(tenant: str, operation: str) -> dict[str, Any]:
    return {
        "action_key": f"{tenant}:CASE-1001:r1:{operation}",
        "status": "COMPLETED",
        "result": {},
        "replayed": False,
    }


@pytest.fixture
def world(tmp_path: Path) -> World:
    """Both tenants reserved and refunded CASE-1001; globex's shipment is uncertain and
    waits on an item."""
    built = make_world(
        tmp_path,
        faults={
            "faults": [
                {
                    "service": "shipping",
                    "operation": "create_shipment",
                    "fault": "lose_response",
                },
                {
                    "service": "shipping",
                    "operation": "find_shipment_by_reference",
                    "fault": "throttle",
                },
            ]
        },
    )
    for case in (ACME, GLOBEX):
        built.run("ReserveStock", step_event("ReserveStock", case))
        built.run("RefundPayment", step_event("RefundPayment", case))
    return built


def _globex_item(world: World) -> str:
    with pytest.raises(OutcomeUnknownError):
        world.run("CreateShipment", step_event("CreateShipment", GLOBEX))
    verdict = world.run("Reconcile", reconcile_event("CreateShipment", case=GLOBEX))
    item_id = verdict["item_id"]
    assert isinstance(item_id, str)
    return item_id


def test_acme_events_naming_globex_actions_are_refused(world: World) -> None:
    item_id = _globex_item(world)
    before = {r.key: r for r in world.ledger.list()}
    effects_before = len(world.effects())
    hostile = {
        "release globex's reservation": (
            "ReleaseReservation",
            compensation_event(original("globex", "reserve_stock"), ACME),
        ),
        "escalate globex's refund": (
            "Reconcile",
            escalate_event(original("globex", "refund_payment"), ACME),
        ),
        "record globex's compensation as failed": (
            "Reconcile",
            compensation_failed_event(original("globex", "reserve_stock"), ACME),
        ),
        "wait on globex's item": (
            "Reconcile",
            await_event("CreateShipment", item_id, case=ACME),
        ),
    }
    for name, (function, event) in hostile.items():
        with pytest.raises(InvalidInputError) as caught:
            world.run(function, event)
        assert not caught.value.retryable, name

    assert {r.key: r for r in world.ledger.list()} == before
    assert len(world.effects()) == effects_before
    item = world.ledger.get_item(item_id)
    assert item is not None
    assert (item.tenant_id, item.status, item.task_token) == ("globex", ReconStatus.OPEN, None)


def test_the_same_step_under_another_tenant_is_its_own_action(world: World) -> None:
    """Identical parameters, another tenant: a new refund, never a replay of acme's."""
    acme = world.run("RefundPayment", step_event("RefundPayment", ACME))
    globex = world.run("RefundPayment", step_event("RefundPayment", GLOBEX))

    assert acme["action_key"] != globex["action_key"]
    assert acme["result"] != globex["result"]
    refunds = world.effects("refund")
    assert sorted(e.tenant_id for e in refunds) == ["acme", "globex"]
