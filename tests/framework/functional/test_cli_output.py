"""One output convention: ``--output json`` (``-o json``) prints what ``--json`` prints,
``--output table`` is the default, and the two disagreeing is a usage error."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import cli, write_case

COMMANDS = [
    ["status", "CASE-1001"],
    ["history", "CASE-1001"],
    ["list"],
    ["recon", "list", "--status", "all"],
    ["ledger", "list"],
    ["sim", "effects"],
]


@pytest.fixture
def started(home: StateHome, tmp_path: Path) -> StateHome:
    assert cli(home, "start", str(write_case(tmp_path))).code == 0
    return home


def test_output_json_is_json_and_table_is_the_default(started: StateHome) -> None:
    for command in COMMANDS:
        as_json = cli(started, *command, "--json")
        for flag in ("--output", "-o"):
            assert cli(started, *command, flag, "json").json() == as_json.json(), command
        table = cli(started, *command, "--output", "table")
        assert table.code == 0, (command, table.err)
        assert table.out == cli(started, *command).out, command


def test_json_and_output_table_disagree(started: StateHome) -> None:
    for command in COMMANDS:
        result = cli(started, *command, "--json", "--output", "table")
        assert result.code == 2, command
        assert result.err.strip() == "error: --json and --output table disagree: give one of them"
    assert cli(started, "status", "CASE-1001", "--output", "yaml").code == 2
