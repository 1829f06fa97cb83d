"""Home regions: a tenant's writes happen in its home region only, routed or refused."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from stepsaga._util.clock import ManualClock
from stepsaga.errors import InvalidInputError, NotHomeRegionError
from stepsaga.ledger import Ledger, open_ledger
from stepsaga.ledger._dynamodb import DynamoDBStore, create_table
from stepsaga.ledger._regions import HomeRegionGuard, HomeRegions, RegionalLedgers, check_replicas
from stepsaga.ledger._writes import ExtraWrite, Writes
from tests.framework.conformance.ledger.conftest import StoreFactory
from tests.framework.conformance.ledger.helpers import Counter, make_action

HOMES = HomeRegions({"acme": "eu-west-1", "globex": "us-east-1"})


def guarded(make_store: StoreFactory, clock: ManualClock, region: str) -> Ledger:
    return Ledger(HomeRegionGuard(make_store(), region=region, homes=HOMES), clock=clock)


def test_a_claim_outside_the_tenants_home_is_refused_and_writes_nothing(
    make_store: StoreFactory, clock: ManualClock
) -> None:
    home = guarded(make_store, clock, "eu-west-1")
    away = guarded(make_store, clock, "us-east-1")
    home.set_budget("acme", 100)
    session = ExtraWrite("TENANT#acme#SESSION#s1", "META", {"cursor": 1})
    with pytest.raises(NotHomeRegionError, match="home region eu-west-1") as caught:
        away.perform(make_action(cost=10), Counter(), writes=Writes(with_claim=[session]))
    assert caught.value.data == {
        "tenant_id": "acme",
        "home_region": "eu-west-1",
        "region": "us-east-1",
    }
    assert home.get(make_action().key) is None
    assert home.budget("acme") == 100
    assert home.get_extra("TENANT#acme#SESSION#s1", "META") is None
    with pytest.raises(NotHomeRegionError):
        away.set_budget("acme", 5)
    # Reads are served anywhere; the home region writes as usual.
    assert away.budget("acme") == 100
    assert home.perform(make_action(cost=10), Counter()) == {"refund_id": "RF-1"}
    record = away.get(make_action().key)
    assert record is not None


def test_routing_sends_each_tenant_to_its_home_ledger(tmp_path: Path) -> None:
    opened: dict[str, Ledger] = {}

    def open_home(region: str) -> Ledger:
        ledger = open_ledger(f"sqlite:///{tmp_path / region}.sqlite3")
        opened[region] = ledger
        return ledger

    regional = RegionalLedgers(HOMES, open_home)
    for tenant in ("acme", "globex"):
        regional.for_tenant(tenant).perform(make_action(tenant=tenant), Counter())
    assert [r.tenant_id for r in opened["eu-west-1"].list()] == ["acme"]
    assert [r.tenant_id for r in opened["us-east-1"].list()] == ["globex"]
    with pytest.raises(InvalidInputError, match="no home region"):
        regional.for_tenant("initech")
    regional.close()


def test_a_global_table_without_home_regions_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="not serialized across replicas"):
        check_replicas(["eu-west-1", "us-east-1"], region="eu-west-1", homes=None)
    with pytest.raises(InvalidInputError, match="ap-south-1 hold no replica"):
        check_replicas(
            ["eu-west-1", "us-east-1"],
            region="eu-west-1",
            homes=HomeRegions({"acme": "ap-south-1"}),
        )
    check_replicas([], region="eu-west-1", homes=None)
    check_replicas(["eu-west-1", "us-east-1"], region="us-east-1", homes=HOMES)


def test_open_ledger_with_homes_checks_the_replicas_and_guards(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ledger")
        url = "dynamodb://ledger?region=us-east-1"
        # moto keeps no replicas: a single-region table cannot home eu-west-1's tenants.
        with pytest.raises(InvalidInputError, match="eu-west-1 hold no replica"):
            open_ledger(url, homes=HOMES)
        # A global table as DescribeTable reports it (moto ignores ReplicaUpdates).
        monkeypatch.setattr(
            DynamoDBStore, "replica_regions", lambda self: ["eu-west-1", "us-east-1"]
        )
        with open_ledger(url, homes=HOMES) as ledger:
            ledger.perform(make_action(tenant="globex"), Counter())
            with pytest.raises(NotHomeRegionError):
                ledger.perform(make_action(tenant="acme"), Counter())


def test_home_regions_are_checked_and_sqlite_takes_none(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="not a region name"):
        HomeRegions({"acme": "Europe"})
    with pytest.raises(InvalidInputError, match="one machine's"):
        open_ledger(f"sqlite:///{tmp_path / 'l.sqlite3'}", homes=HOMES)
    assert HomeRegions(default="eu-west-1").home_of("anyone") == "eu-west-1"
