"""Exit codes through the real entry point: 0 done, 2 usage (one line), 1 unexpected (one
line, no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import ROOT, cli, write_case

ENTRY = "from stepsaga.cli._app import main; main()"


def stepsaga(home: StateHome, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STEPSAGA_HOME": str(home.root), "STEPSAGA_TIME_SCALE": "0"}
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["start"], "Missing argument"),
        (["start", "x.json", "--bogus"], "No such option"),
        (["start", "x.json", "--time-scale", "-1"], "--time-scale"),
        (["recon", "list", "--status", "maybe"], "--status"),
        (["recon", "resolve", "rec-1", "--outcome", "applied"], "Missing option"),
        (["status", "CASE-1"], "no executions yet"),
    ],
)
def test_usage_errors_are_one_line(home: StateHome, args: list[str], says: str) -> None:
    done = stepsaga(home, *args)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    assert says in lines[0]
    assert not home.root.exists()


def test_done_is_zero_whatever_the_outcome(home: StateHome, tmp_path: Path) -> None:
    case = write_case(tmp_path)
    faults = ROOT / "examples" / "faults-shipment-rejected.json"
    done = stepsaga(home, "start", str(case), "--faults", str(faults), "--json")
    assert done.returncode == 0, done.stderr
    assert '"outcome": "compensated"' in done.stdout


def test_unexpected_errors_are_one_line_and_exit_1(home: StateHome) -> None:
    home.ensure()
    home.executions_path.write_text("this is not a database, it is a poem")
    result = cli(home, "status", "CASE-1001")
    assert result.code == 1
    lines = result.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    done = stepsaga(home, "status", "CASE-1001")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_shell_completion_completes_the_verbs() -> None:
    """``stepsaga --show-completion bash`` prints the script; the script's protocol answers
    with the verbs (project commands included)."""
    script = Path(sys.executable).with_name("stepsaga")
    env = {**os.environ, "COMP_WORDS": "stepsaga st", "COMP_CWORD": "1"}
    env["_STEPSAGA_COMPLETE"] = "complete_bash"
    done = subprocess.run(
        [str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["start", "status", "stop"]
    env["COMP_WORDS"] = "stepsaga si"
    done = subprocess.run(
        [str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.split() == ["sim"]
