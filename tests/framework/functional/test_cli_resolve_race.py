"""Two identical ``recon resolve`` at once, as two real processes: both succeed with the
same resolved item and the case it let continue (the loser is told nothing false: no
"could not be resumed"), and the case is resumed once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import ROOT, cli, effects, write_case
from tests.framework.functional.test_cli_recon import UNVERIFIABLE

ENTRY = "from stepsaga.cli._app import main; main()"
TRIALS = 4


def _resolve_twice(home: StateHome, item_id: str) -> list[subprocess.Popen[str]]:
    environment = {**os.environ, "STEPSAGA_HOME": str(home.root), "STEPSAGA_TIME_SCALE": "0"}
    args = ["recon", "resolve", item_id, "--outcome", "applied", "--by", "ops@acme.example"]
    args += ["--note", "carrier shows it", "--json"]
    return [
        subprocess.Popen(
            [sys.executable, "-c", ENTRY, *args],
            cwd=ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]


def test_two_identical_resolutions_at_once_both_succeed(home: StateHome, tmp_path: Path) -> None:
    for trial in range(TRIALS):
        folder = tmp_path / str(trial)
        folder.mkdir()
        case_id = f"CASE-{trial}"
        started = cli(
            home,
            "start",
            str(write_case(folder, case_id)),
            "--faults",
            str(UNVERIFIABLE),
            "--json",
        )
        assert started.code == 0, started.err
        item_id = started.json()["open_items"][0]
        done = [(p, *p.communicate(timeout=120)) for p in _resolve_twice(home, item_id)]
        results = []
        for process, out, err in done:
            assert process.returncode == 0, (trial, err)
            assert err == "", (trial, err)
            results.append(json.loads(out))
        items = [result["item"] for result in results]
        assert items[0] == items[1], trial
        assert (items[0]["status"], items[0]["outcome"]) == ("RESOLVED", "applied")
        for result in results:
            assert result["execution"] is not None, trial
            assert result["execution"]["name"] == started.json()["name"]
        final = cli(home, "status", case_id, "--json").json()
        assert (final["status"], final["outcome"]) == ("SUCCEEDED", "completed"), trial
        assert effects(home, case_id)["create_shipment"] <= 1
