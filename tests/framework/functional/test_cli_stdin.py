"""``-`` reads stdin wherever a file is read (case, faults, mock config): the same size
bound and strict JSON as a file, while FIFOs and devices given by path stay refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stepsaga._model.case import MAX_CASE_FILE_BYTES
from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import EXAMPLES, case_data, cli, files, write_case

MOCK_CONFIG = EXAMPLES / "mock-config" / "replacement-order.json"


def _one_line(code: int, err: str, says: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert says in lines[0], lines[0]


def test_a_case_from_stdin_runs_like_the_file(home: StateHome) -> None:
    piped = cli(home, "start", "-", "--json", stdin=json.dumps(case_data()).encode())
    assert piped.code == 0, piped.err
    assert (piped.json()["case_id"], piped.json()["outcome"]) == ("CASE-1001", "completed")


def test_faults_and_mock_config_from_stdin(home: StateHome, tmp_path: Path) -> None:
    faults = (EXAMPLES / "faults-shipment-rejected.json").read_bytes()
    case = write_case(tmp_path, "CASE-2")
    run = cli(home, "start", str(case), "--faults", "-", "--json", stdin=faults)
    assert run.code == 0, run.err
    assert run.json()["outcome"] == "compensated"
    mocked = cli(
        home,
        "start",
        str(write_case(tmp_path, "CASE-3")),
        "--mock-config",
        "-",
        "--test-case",
        "HappyPath",
        "--json",
        stdin=MOCK_CONFIG.read_bytes(),
    )
    assert mocked.code == 0, mocked.err


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b'{"tenant_id": "acme", "tenant_id": "evil"}', "<stdin>: duplicate key tenant_id"),
        (b"", "<stdin>: empty file"),
        (b"[1, 2]", "case: must be a JSON object"),
        (b'{"a": NaN}', "<stdin>: NaN is not a JSON value"),
        (b" " * (MAX_CASE_FILE_BYTES + 1), f"<stdin>: larger than {MAX_CASE_FILE_BYTES} bytes"),
    ],
)
def test_stdin_follows_the_file_rules(home: StateHome, data: bytes, says: str) -> None:
    result = cli(home, "start", "-", stdin=data)
    _one_line(result.code, result.err, says)
    assert files(home) == []


def test_stdin_is_read_once(home: StateHome) -> None:
    result = cli(home, "start", "-", "--faults", "-", stdin=b"{}")
    _one_line(result.code, result.err, "only one of CASE.json, --faults and --mock-config")
    assert files(home) == []


def test_a_fifo_by_path_is_still_refused(home: StateHome, tmp_path: Path) -> None:
    fifo = tmp_path / "case.fifo"
    os.mkfifo(fifo)
    result = cli(home, "start", str(fifo))
    _one_line(result.code, result.err, "is a named pipe (FIFO), not a regular file")
    assert files(home) == []


_SOURCE = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


def test_a_real_pipe_into_the_real_cli(home: StateHome) -> None:
    """stdin is a pipe here (what a FIFO path is refused for), read because ``-`` asked."""
    process = subprocess.run(
        [sys.executable, "-m", "stepsaga", "start", "-", "--json"],
        input=json.dumps(case_data()).encode(),
        capture_output=True,
        env={**os.environ, **_SOURCE, "STEPSAGA_HOME": str(home.root), "STEPSAGA_TIME_SCALE": "0"},
        timeout=120,
        check=False,
    )
    assert process.returncode == 0, process.stderr.decode()
    assert json.loads(process.stdout)["outcome"] == "completed"
