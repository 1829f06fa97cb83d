"""``stepsaga console`` as a person runs it: it prints a URL with a token and serves the
pages on 127.0.0.1; bad flags are one line and exit 2."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import ROOT, cli


def test_a_port_out_of_range_is_exit_2(home: StateHome) -> None:
    result = cli(home, "console", "--port", "70000")
    assert result.code == 2
    assert "--port" in result.err


def test_a_port_in_use_is_one_line_and_exit_2(home: StateHome) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = cli(home, "console", "--port", str(port))
    assert result.code == 2
    assert result.err.startswith(f"error: --port {port}: cannot listen on 127.0.0.1:{port}")
    assert len(result.err.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_console_prints_a_token_url_and_refuses_requests_without_it(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STEPSAGA_HOME": str(tmp_path / "home")}
    process = subprocess.Popen(
        [sys.executable, "-m", "stepsaga", "console", "--port", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        found = re.search(r"(http://127\.0\.0\.1:\d+/)\?token=([\w-]{40,})", "".join(lines))
        assert found is not None, lines
        base, token = found.groups()
        with httpx.Client(base_url=base, follow_redirects=True, timeout=10) as client:
            assert client.get("/executions").status_code == 403
            page = client.get(f"/reconciliation?token={token}")
            assert page.status_code == 200
            assert "Reconciliation queue" in page.text
            assert "token" not in str(page.url)
            assert client.get("/ledger").status_code == 200  # the cookie it set
    finally:
        process.terminate()
        process.wait(10)
    assert not (tmp_path / "home").exists()  # looking wrote nothing


def test_a_token_file_keeps_the_token_across_starts(tmp_path: Path) -> None:
    """``--token-file``: made 0600 with a fresh token when absent, read back as is after."""
    from stepsaga.console._security import token_from_file

    path = tmp_path / "console.token"
    first = token_from_file(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert token_from_file(path) == first
    assert len(first) >= 32


@pytest.mark.parametrize(
    ("content", "mode", "said"),
    [
        ("short", 0o600, "at least 32"),
        ("a&b" * 20, 0o600, "letters, digits"),
        ("x" * 40, 0o644, "readable by other users"),
    ],
)
def test_a_bad_token_file_is_one_line_and_exit_2(
    home: StateHome, tmp_path: Path, content: str, mode: int, said: str
) -> None:
    path = tmp_path / "console.token"
    path.write_text(content)
    path.chmod(mode)
    result = cli(home, "console", "--port", "0", "--token-file", str(path))
    assert result.code == 2
    assert result.err.startswith("error: --token-file: ")
    assert said in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert path.read_text() == content


def test_add_operator_prints_a_personal_url_and_keeps_only_its_digest(
    home: StateHome, tmp_path: Path
) -> None:
    path = tmp_path / "operators"
    first = cli(home, "console", "--operators-file", str(path), "--add-operator", "alice")
    assert first.code == 0, first.err
    found = re.search(r"http://127\.0\.0\.1:8765/\?token=([\w-]{40,})", first.out)
    assert found is not None, first.out
    token = found.group(1)
    assert path.stat().st_mode & 0o777 == 0o600
    assert token not in path.read_text()
    assert path.read_text().startswith("alice\t")
    again = cli(home, "console", "--operators-file", str(path), "--add-operator", "alice")
    assert again.code == 0
    assert token not in again.out  # a new token replaces the old one
    assert cli(home, "console", "--operators-file", str(path), "--add-operator", "bob").code == 0
    assert [line.split("\t")[0] for line in path.read_text().splitlines()] == ["alice", "bob"]
    assert not home.root.exists()  # nothing else written


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--add-operator", "alice"], "--add-operator: name the file with --operators-file"),
        (["--add-operator", " ", "--operators-file", "OPS"], "--add-operator: "),
        (["--operators-file", "OPS", "--backend", "aws"], "--operators-file: on the aws backend"),
        (["--operators-file", "MISSING"], "--operators-file: cannot read"),
        (["--operators-file", "BAD"], "--operators-file: "),
    ],
)
def test_a_bad_operators_option_is_one_line_and_exit_2(
    home: StateHome, tmp_path: Path, args: list[str], said: str
) -> None:
    bad = tmp_path / "bad"
    bad.write_text("alice\tnot-a-digest\n")
    bad.chmod(0o600)
    paths = {"OPS": str(tmp_path / "ops"), "MISSING": str(tmp_path / "none"), "BAD": str(bad)}
    result = cli(home, "console", "--port", "0", *[paths.get(a, a) for a in args])
    assert result.code == 2, result.out
    assert result.err.startswith(f"error: {said}"), result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not (tmp_path / "ops").exists()
