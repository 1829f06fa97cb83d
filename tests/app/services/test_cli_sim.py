"""``stepsaga sim``: effects as JSON or a table, exit codes per cli/common.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from services import Services, open_simulated_services
from stepsaga._project.home import StateHome
from stepsaga.cli import _common as common
from stepsaga.cli._app import app
from tests.app.services.conftest import ctx_for, refund_request, reserve_request, shipment_request

runner = CliRunner()


@pytest.fixture
def used_home(tmp_path: Path) -> StateHome:
    home = StateHome(tmp_path / "home")
    services: Services = open_simulated_services(home)
    services.inventory.reserve(ctx_for("reserve"), reserve_request())
    services.payments.refund(ctx_for("refund"), refund_request())
    services.shipping.create_shipment(ctx_for("ship", case_id="CASE-2"), shipment_request())
    services.payments.refund(ctx_for("refund", tenant_id="globex"), refund_request())
    return home


def sim(home: StateHome, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--home", str(home.root), "sim", *args])
    return result.exit_code, result.stdout, result.stderr


def test_effects_json_shape(used_home: StateHome) -> None:
    code, out, _ = sim(used_home, "effects", "--json")
    assert code == 0
    effects = json.loads(out)
    assert [e["operation"] for e in effects] == ["reserve", "refund", "create_shipment", "refund"]
    for effect in effects:
        assert {"service", "operation", "tenant_id", "case_id", "reference", "at"} <= set(effect)
        assert effect["at"].endswith("Z")
    assert effects[1]["service"] == "payments"
    assert effects[1]["reference"] == refund_request().idempotency_key


def test_effects_filters(used_home: StateHome) -> None:
    _, out, _ = sim(used_home, "effects", "--case", "CASE-2", "--json")
    assert [e["operation"] for e in json.loads(out)] == ["create_shipment"]
    _, out, _ = sim(used_home, "effects", "--tenant", "globex", "--json")
    assert [(e["tenant_id"], e["operation"]) for e in json.loads(out)] == [("globex", "refund")]
    _, out, _ = sim(used_home, "effects", "--tenant", "acme", "--case", "CASE-1001", "--json")
    assert len(json.loads(out)) == 2


def test_effects_table(used_home: StateHome, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common.stdout, "width", 250)
    code, out, _ = sim(used_home, "effects")
    assert code == 0
    assert "4 effect(s)" in out
    assert "20.00 USD of PAY-991" in out
    assert "1 x SKU-RED-MUG @ eu-west" in out
    assert "Buyer" not in out


def test_effects_on_an_unused_home_is_empty_and_creates_nothing(tmp_path: Path) -> None:
    home = StateHome(tmp_path / "never-used")
    code, out, _ = sim(home, "effects", "--json")
    assert (code, json.loads(out)) == (0, [])
    code, out, _ = sim(home, "effects")
    assert (code, out.strip()) == (0, "no effects")
    assert not home.root.exists()


def test_sim_needs_the_local_backend(used_home: StateHome) -> None:
    result = runner.invoke(app, ["--backend", "aws", "sim", "effects", "--json"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: sim: simulated services exist only on the local backend"


def test_a_corrupt_store_is_one_line_exit_1(tmp_path: Path) -> None:
    home = StateHome(tmp_path / "home")
    home.ensure().services_path.write_bytes(b"garbage" * 1000)
    code, _, err = sim(home, "effects", "--json")
    assert code == 1
    assert err.count("\n") == 1
    assert err.startswith("error: TransientError: simulated services store unavailable")


def test_reset(used_home: StateHome) -> None:
    code, out, _ = sim(used_home, "reset", "--yes")
    assert (code, out.strip()) == (0, "simulated services reset")
    _, out, _ = sim(used_home, "effects", "--json")
    assert json.loads(out) == []


def test_reset_asks_first(used_home: StateHome, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("services.cli._interactive", lambda: True)
    result = runner.invoke(app, ["--home", str(used_home.root), "sim", "reset"], input="n\n")
    assert result.exit_code == 1
    _, out, _ = sim(used_home, "effects", "--json")
    assert len(json.loads(out)) == 4


def test_reset_without_a_terminal_needs_yes(used_home: StateHome) -> None:
    code, _, err = sim(used_home, "reset")
    assert code == 2
    assert err == "error: sim reset: no terminal to confirm on; pass --yes\n"
    _, out, _ = sim(used_home, "effects", "--json")
    assert len(json.loads(out)) == 4


def test_reset_on_an_unused_home(tmp_path: Path) -> None:
    code, out, _ = sim(StateHome(tmp_path / "none"), "reset", "--yes")
    assert (code, out.strip()) == (0, "nothing to reset")
