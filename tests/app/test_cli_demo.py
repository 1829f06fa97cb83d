"""``stepsaga demo`` (``make demo``): end to end, repeatable, exactly once — checked from
the simulated services' own effects table, not from what the demo says — and runnable
with the runtime dependencies only."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from stepsaga._project.home import StateHome
from stepsaga.cli._app import app
from tests.framework.functional.cli_support import ROOT, effects

runner = CliRunner()

EXPECTED_EFFECTS = {
    "CASE-1001": {"reserve": 1, "refund": 1, "create_shipment": 1},
    "CASE-1002": {"reserve": 1, "refund": 1, "release": 1},
    "CASE-1003": {"reserve": 1, "refund": 1, "create_shipment": 1},
    "CASE-1004": {"reserve": 1, "refund": 1, "create_shipment": 1},
}


def _demo(home_dir: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["demo", "--home-dir", str(home_dir), *args])
    return result.exit_code, result.stdout, result.stderr


def test_demo_json_and_effects(tmp_path: Path) -> None:
    home_dir = tmp_path / "demo"
    code, out, err = _demo(home_dir, "--json")
    assert code == 0, err
    summary = json.loads(out)
    outcomes = {case["case_id"]: case["outcome"] for case in summary["cases"]}
    assert outcomes == {
        "CASE-1001": "completed",
        "CASE-1002": "compensated",
        "CASE-1003": "completed",
        "CASE-1004": "completed",
    }
    assert summary["problems"] == []
    [resolution] = summary["resolutions"]
    assert resolution["item"]["case_id"] == "CASE-1004"
    assert resolution["execution"]["outcome"] == "completed"
    home = StateHome(home_dir)
    for case_id, expected in EXPECTED_EFFECTS.items():
        assert effects(home, case_id) == Counter(expected), case_id


def test_demo_is_repeatable_and_readable(tmp_path: Path) -> None:
    home_dir = tmp_path / "demo"
    first = _demo(home_dir)
    second = _demo(home_dir)
    assert first[0] == second[0] == 0
    out = second[1]
    for section in (
        "1. CASE-1001",
        "2. CASE-1002",
        "3. CASE-1003",
        "4. CASE-1004",
        "5. recon list",
        "6. recon resolve",
        "7. where every case ended",
    ):
        assert section in out
    assert "outcome awaiting_reconciliation" in out
    assert "✓ at most one refund and one shipment per case" in out
    home = StateHome(home_dir)
    for case_id, expected in EXPECTED_EFFECTS.items():
        assert effects(home, case_id) == Counter(expected), case_id  # not doubled by rerun


def test_demo_leaves_unknown_files_alone(tmp_path: Path) -> None:
    home_dir = tmp_path / "demo"
    assert _demo(home_dir, "--json")[0] == 0  # the demo's own home
    keep = home_dir / "notes.txt"
    keep.write_text("mine")
    assert _demo(home_dir, "--json")[0] == 0
    assert keep.read_text() == "mine"


def _runtime_distributions() -> set[str]:
    """Distributions reachable from stepsaga's own (non-extra) requirements."""
    seen: set[str] = set()
    todo = ["stepsaga"]
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        try:
            requirements = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for requirement in requirements:
            if ";" in requirement and "extra ==" in requirement:
                continue
            todo.append(re.split(r"[\s<>=!~\[;(]", requirement, maxsplit=1)[0])
    return seen


@pytest.mark.slow  # the demo in a fresh interpreter
def test_demo_imports_only_runtime_dependencies(tmp_path: Path) -> None:
    modules_file = tmp_path / "modules.json"
    code = (
        "import atexit, json, sys\n"
        f"out = {str(modules_file)!r}\n"
        "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules))))\n"
        "from stepsaga.cli._app import main\n"
        "main()\n"
    )
    env = {**os.environ, "STEPSAGA_TIME_SCALE": "0"}
    done = subprocess.run(
        [sys.executable, "-c", code, "demo", "--home-dir", str(tmp_path / "demo"), "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    imported: list[Any] = json.loads(modules_file.read_text())
    tops = {name.split(".")[0] for name in imported}
    allowed_dists = _runtime_distributions()
    owners = importlib.metadata.packages_distributions()
    ours = {"stepsaga", "workflows", "tasks", "compensations", "services"}
    # Imported by a runtime dependency only when present (httpx's CLI imports click when a
    # dev tool, e.g. DBOS, installed it); never imported by our code.
    optional = {"click"}
    foreign = sorted(
        top
        for top in tops
        if top not in sys.stdlib_module_names
        and top not in ours
        and top not in optional
        and not top.startswith("_")
        and not any(d.lower().replace("_", "-") in allowed_dists for d in owners.get(top, []))
    )
    assert foreign == [], f"the demo imports modules outside the runtime dependencies: {foreign}"


def test_demo_refuses_to_empty_a_home_it_did_not_make(tmp_path: Path) -> None:
    real = tmp_path / "real-home"
    real.mkdir()
    (real / "ledger.sqlite3").write_bytes(b"somebody's ledger")
    code, _, err = _demo(real)
    assert code == 2
    assert err.startswith(f"error: demo home {real} holds state the demo did not create")
    assert (real / "ledger.sqlite3").read_bytes() == b"somebody's ledger"
    assert sorted(p.name for p in real.iterdir()) == ["ledger.sqlite3"]


def test_demo_honours_the_home_option(tmp_path: Path) -> None:
    home = tmp_path / "chosen"
    result = runner.invoke(app, ["--home", str(home), "demo", "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["home"] == str(home)
    assert effects(StateHome(home), "CASE-1001") == Counter(EXPECTED_EFFECTS["CASE-1001"])


@pytest.mark.slow  # the demo, then four `stepsaga` processes
def test_the_closing_hint_pastes_as_printed(tmp_path: Path) -> None:
    home = tmp_path / "a home with spaces"
    code, out, err = _demo(home)
    assert code == 0, err
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith("STEPSAGA_HOME=")]
    assert len(lines) == 4
    for line in lines:
        done = subprocess.run(
            line,
            shell=True,
            cwd=ROOT,
            env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, (line, done.stderr)
