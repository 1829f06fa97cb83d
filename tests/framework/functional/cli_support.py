"""Helpers for the CLI's functional tests: run a command, write case files, look at the
home from outside (files, rows, the simulated services' effects)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from services.simulated import ServicesDb, Simulation
from stepsaga._project.home import StateHome
from stepsaga._util.clock import SystemClock
from stepsaga.cli._app import app

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
runner = CliRunner()


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def cli(
    home: StateHome, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> Result:
    """``stepsaga --home HOME ARGS`` in-process, time scale 0 unless ``env`` says otherwise;
    ``stdin`` is what ``-`` reads."""
    environment = {"STEPSAGA_TIME_SCALE": "0", **(env or {})}
    result = runner.invoke(app, ["--home", str(home.root), *args], env=environment, input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Result(result.exit_code, result.stdout, result.stderr)


def case_data(
    case_id: str = "CASE-1001", tenant_id: str = "acme", **changes: Any
) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / "case-clean.json").read_text())
    data["case_id"] = case_id
    data["tenant_id"] = tenant_id
    data["approval"]["approved_at"] = SystemClock().now().strftime("%Y-%m-%dT%H:%M:%SZ")
    data.update(changes)
    return data


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def write_case(folder: Path, case_id: str = "CASE-1001", **changes: Any) -> Path:
    return write_json(folder / f"{case_id}.json", case_data(case_id, **changes))


def write_faults(folder: Path, *rules: dict[str, Any], name: str = "faults.json") -> Path:
    return write_json(folder / name, {"faults": list(rules)})


def effects(home: StateHome, case_id: str | None = None) -> Counter[str]:
    """What the simulated services applied (their own table), by operation."""
    if not home.services_path.exists():
        return Counter()
    simulation = Simulation(ServicesDb(home.services_path), SystemClock())
    return Counter(str(e.operation) for e in simulation.effects(case_id=case_id))


def files(home: StateHome) -> list[str]:
    """Every file under the home (nothing written ⇔ empty)."""
    if not home.root.exists():
        return []
    return sorted(str(p.relative_to(home.root)) for p in home.root.rglob("*"))


def row_counts(home: StateHome) -> dict[str, int]:
    """Rows per table in every SQLite file of the home."""
    counts: dict[str, int] = {}
    for path in (home.ledger_path, home.executions_path, home.services_path):
        if not path.exists():
            continue
        with sqlite3.connect(path) as conn:
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            for table in tables:
                counts[f"{path.name}:{table}"] = conn.execute(
                    f'SELECT COUNT(*) FROM "{table}"'
                ).fetchone()[0]
    return counts
