"""``stepsaga ledger list|show|sweep``: JSON and tables, exit codes per cli/common.py."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.cli import _common as common
from stepsaga.cli._app import app
from stepsaga.ledger import open_ledger
from stepsaga.ledger._dynamodb import create_table
from stepsaga.ledger._models import Claim
from tests.framework.conformance.ledger.helpers import Counter, make_action

runner = CliRunner()


def ledger_cli(home: StateHome, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--home", str(home.root), "ledger", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def home(tmp_path: Path) -> StateHome:
    return StateHome(tmp_path / "home")


@pytest.fixture
def used_home(home: StateHome) -> StateHome:
    """Two completed actions and one claim whose worker vanished an hour ago."""
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    approved = hour_ago - timedelta(minutes=5)
    home.ensure()
    clock = ManualClock(hour_ago)
    with open_ledger(home.ledger_url, clock=clock) as ledger:
        ledger.perform(make_action("reserve_stock", approved_at=approved), Counter())
        clock.advance(1)
        ledger.perform(
            make_action("refund_payment", case="CASE-2", approved_at=approved), Counter()
        )
        clock.advance(1)
        claim = ledger.claim(
            make_action("create_shipment", effect="physical", approved_at=approved)
        )
        assert isinstance(claim, Claim)
    return home


def test_list_json(used_home: StateHome) -> None:
    code, out, _ = ledger_cli(used_home, "list", "--json")
    assert code == 0
    records = json.loads(out)["records"]
    assert [r["operation"] for r in records] == [
        "reserve_stock",
        "refund_payment",
        "create_shipment",
    ]
    assert records[0]["key"] == "acme:CASE-1001:r1:reserve_stock"
    assert records[0]["status"] == "COMPLETED"
    assert records[0]["expires_at"].endswith("Z")


def test_list_filters(used_home: StateHome) -> None:
    _, out, _ = ledger_cli(used_home, "list", "--case", "CASE-2", "--json")
    assert [r["operation"] for r in json.loads(out)["records"]] == ["refund_payment"]
    _, out, _ = ledger_cli(used_home, "list", "--status", "in_progress", "--json")
    assert [r["operation"] for r in json.loads(out)["records"]] == ["create_shipment"]
    _, out, _ = ledger_cli(used_home, "list", "--tenant", "globex", "--json")
    assert json.loads(out) == {"records": [], "next_token": None}
    _, out, _ = ledger_cli(used_home, "list", "--limit", "1", "--json")
    assert len(json.loads(out)["records"]) == 1


def test_list_table(used_home: StateHome, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common.stdout, "width", 250)
    code, out, _ = ledger_cli(used_home, "list")
    assert code == 0
    assert "acme:CASE-2:r1:refund_payment" in out
    assert "COMPLETED" in out


def test_list_of_a_home_without_a_ledger_creates_nothing(home: StateHome) -> None:
    code, out, _ = ledger_cli(home, "list", "--json")
    assert (code, json.loads(out)) == (0, {"records": [], "next_token": None})
    code, out, _ = ledger_cli(home, "list")
    assert (code, out.strip()) == (0, "no ledger records")
    assert not home.ledger_path.exists()


def test_show(used_home: StateHome) -> None:
    code, out, _ = ledger_cli(used_home, "show", "acme:CASE-1001:r1:reserve_stock", "--json")
    assert code == 0
    record = json.loads(out)
    assert record["result"] == {"refund_id": "RF-1"}
    assert record["attempts"] == 1
    code, out, _ = ledger_cli(used_home, "show", "acme:CASE-1001:r1:reserve_stock")
    assert code == 0
    assert "COMPLETED" in out


def test_show_of_a_missing_key_is_exit_2(used_home: StateHome) -> None:
    code, out, err = ledger_cli(used_home, "show", "acme:CASE-9:r1:nothing")
    assert code == 2
    assert out == ""
    assert err.strip() == "error: no ledger record 'acme:CASE-9:r1:nothing'"


def test_sweep(used_home: StateHome) -> None:
    code, out, _ = ledger_cli(used_home, "sweep", "--json")
    assert code == 0
    assert [r["operation"] for r in json.loads(out)["swept"]] == ["create_shipment"]
    assert json.loads(out)["swept"][0]["status"] == "UNKNOWN"
    code, out, _ = ledger_cli(used_home, "sweep")
    assert (code, out.strip()) == (0, "no stale claims")


@pytest.mark.parametrize(
    "args",
    [
        ["list", "--status", "DONE"],
        ["list", "--url", "postgres://x"],
        ["list", "--url", "sqlite:///l.db?synchronous=maybe"],
        ["show", "k", "--url", "dynamodb://"],
        ["sweep", "--url", "ftp://x"],
    ],
)
def test_bad_flags_and_urls_are_one_line_exit_2(home: StateHome, args: list[str]) -> None:
    code, out, err = ledger_cli(home, *args)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("error: ")


def test_unknown_options_are_usage_errors(home: StateHome) -> None:
    code, _, _ = ledger_cli(home, "list", "--colour", "red")
    assert code == 2


def test_a_corrupted_ledger_file_is_exit_2_not_a_traceback(tmp_path: Path, home: StateHome) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database" * 100)
    code, _, err = ledger_cli(home, "list", "--url", f"sqlite:///{broken}")
    assert code == 2
    assert "not a usable ledger database" in err
    assert "Traceback" not in err


def test_a_locked_ledger_file_is_exit_1_with_one_line(used_home: StateHome) -> None:
    holder = sqlite3.connect(used_home.ledger_path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        url = f"sqlite:///{used_home.ledger_path}?busy_timeout_ms=50"
        code, _, err = ledger_cli(used_home, "sweep", "--url", url)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 1
    assert err.strip().startswith("error: StoreUnavailableError:")
    assert "locked" in err
    assert len(err.strip().splitlines()) == 1


def test_aws_backend_without_a_stack_or_url_is_exit_2(
    home: StateHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("STEPSAGA_STACK", "STEPSAGA_STATE_MACHINE_ARN", "STEPSAGA_LEDGER_TABLE_NAME"):
        monkeypatch.delenv(name, raising=False)
    result = runner.invoke(app, ["--backend", "aws", "--home", str(home.root), "ledger", "list"])
    assert result.exit_code == 2
    assert "--stack NAME" in result.stderr


def test_dynamodb_url(home: StateHome) -> None:
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ledger")
        url = "dynamodb://ledger?region=us-east-1"
        with open_ledger(url) as ledger:
            ledger.perform(make_action(), Counter())
        code, out, _ = ledger_cli(home, "list", "--url", url, "--json")
        assert code == 0
        assert [r["key"] for r in json.loads(out)["records"]] == [
            "acme:CASE-1001:r1:refund_payment"
        ]
        code, out, _ = ledger_cli(home, "show", "acme:CASE-1001:r1:refund_payment", "--url", url)
        assert code == 0


def test_the_installed_command(home: StateHome) -> None:
    entry = Path(sys.executable).parent / "stepsaga"
    command = [str(entry)] if entry.exists() else None
    if command is None:
        pytest.skip("console script not installed")
    done = subprocess.run(
        [*command, "--home", str(home.root), "ledger", "list", "--status", "nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: unknown status 'nope'; one of IN_PROGRESS, COMPLETED, FAILED, UNKNOWN, RELEASED"
    ]
