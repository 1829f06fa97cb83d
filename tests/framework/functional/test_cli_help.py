"""``-h`` as people read it, for every command (the project's included): flags show no
value type, and every command that prints data takes ``--output json|table`` and its
``--json`` alias."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from stepsaga.cli._app import app, project_commands

runner = CliRunner()


def _commands() -> Iterator[tuple[list[str], Any]]:
    project_commands([])  # the reference app's demo and sim, as main() mounts them
    root = typer.main.get_command(app)

    def walk(path: list[str], command: Any) -> Iterator[tuple[list[str], Any]]:
        yield path, command
        subcommands = getattr(command, "commands", None) or {}  # a group
        for name, sub in sorted(subcommands.items()):
            if not sub.hidden:
                yield from walk([*path, name], sub)

    yield from walk([], root)


COMMANDS = list(_commands())


def _help(path: list[str]) -> str:
    result = runner.invoke(app, [*path, "-h"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("path", [path for path, _ in COMMANDS], ids=" ".join)
def test_flags_render_without_a_value_type(path: list[str]) -> None:
    text = _help(path)
    assert "<bool>" not in text
    assert re.search(r"--help\s+-h\s+Show this message", text), text


@pytest.mark.parametrize(
    "path",
    [path for path, command in COMMANDS if any("--json" in p.opts for p in command.params)],
    ids=" ".join,
)
def test_every_json_command_takes_output(path: list[str]) -> None:
    text = _help(path)
    assert re.search(r"--output\s+-o\s+<json\|table>", text), text
    assert re.search(r"--json\s+Same as --output json\.", text), text


def test_every_data_command_is_covered() -> None:
    with_json = {" ".join(p) for p, c in COMMANDS if any("--json" in o.opts for o in c.params)}
    assert with_json >= {
        "start", "status", "history", "redrive", "list", "recon list", "recon show",
        "recon resolve", "ledger list", "ledger show", "ledger sweep", "sim effects", "demo",
    }  # fmt: skip


def test_markup_in_help_text_is_shown_as_written() -> None:
    assert "[tool.stepsaga]" in _help(["init"])
    assert "[tool.stepsaga]" in _help([])
