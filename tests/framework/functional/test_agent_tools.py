"""Agent tools end to end: a real MCP client and server over stdio, and the decorator.

Both run the examples under ``examples/agent_tools/`` (the commands of
docs/how-to/agent-tools.md) as subprocesses and check what they did against the ledger and
the payments stand-in.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

try:
    import mcp  # noqa: F401
except ImportError:  # pragma: no cover - the dev extra installs it
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("mcp is not installed: pip install 'stepsaga[mcp]'", allow_module_level=True)

from stepsaga._aws import metric_names
from stepsaga.ledger import Status, open_ledger

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "agent_tools"


def run_example(script: str, folder: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / script), str(folder)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary


def downstream_calls(folder: Path) -> int:
    with sqlite3.connect(folder / "payments.sqlite3") as db:
        return int(db.execute("SELECT count(*) FROM calls").fetchone()[0])


def test_mcp_over_stdio_ten_deliveries_one_effect_a_new_key_a_second_a_reused_key_refused(
    tmp_path: Path,
) -> None:
    summary = run_example("mcp_client.py", tmp_path)

    # The schema requires the key, 16 to 128 characters; a short one never reaches the tool.
    assert "idempotencyKey" in summary["required"]
    assert summary["key_schema"]["minLength"] == 16
    assert summary["key_schema"]["maxLength"] == 128
    assert summary["short_key_error"] is True
    assert summary["read_only"] is True

    # Ten deliveries of one call: one result, one effect. The corrected amount: a second.
    assert summary["ten_errors"] == 0
    assert summary["ten_distinct_results"] == 1
    assert summary["first"]["amount_cents"] == 2000
    assert summary["corrected"]["amount_cents"] == 2500
    assert summary["refunds"] == {"refunds": [["ORD-77", 2000], ["ORD-77", 2500]]}
    assert downstream_calls(tmp_path) == 2

    with open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite3'}") as ledger:
        records = ledger.list(tenant="acme")
    assert [r.status for r in records] == [Status.COMPLETED, Status.COMPLETED]
    assert {r.operation for r in records} == {"create_refund"}  # the read recorded nothing
    first = records[0]
    assert first.attempts == 1

    # The first key with another amount, or on another tool: refused, naming the approved
    # digest (the record's); nothing changed.
    assert summary["reused_error"] is True
    refused = summary["reused_text"]
    assert "ActionConflictError" in refused
    assert f"approved for create_refund with arguments digest {first.digest}" in refused
    assert "this call's digest " in refused
    assert summary["reused_failure"]["reuse_same_key"] is False
    assert summary["other_tool_failure"]["error"] == "ActionConflictError"
    assert "this call is issue_credit" in summary["other_tool_failure"]["message"]

    # Per-tenant metrics on stderr (stdout is the protocol): no dimension but service.
    documents = [
        json.loads(line)
        for line in (tmp_path / "server.stderr").read_text().splitlines()
        if line.startswith('{"_aws"')
    ]
    counted = [m["Name"] for d in documents for m in d["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
    assert counted.count(metric_names.DUPLICATE_REPLAYED) == 9
    assert counted.count(metric_names.ACTION_CONFLICT) == 2
    assert all(d["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]] for d in documents)
    assert {d["tenant_id"] for d in documents} == {"acme"}


def test_the_decorator_tool_applies_once_and_moves_the_session_with_the_outcome(
    tmp_path: Path,
) -> None:
    summary = run_example("decorator_tool.py", tmp_path)
    assert summary == {
        "results": 1,
        "downstream_calls": 1,
        "refunds": [["ORD-77", 2000]],
        "session": {"cursor": 1, "last": "RF-1"},
        "duplicates_replayed": 9,
    }


def test_the_docs_show_the_examples_code_and_commands() -> None:
    page = (REPO / "docs" / "how-to" / "agent-tools.md").read_text(encoding="utf-8")
    section = page.split("\n## ", 1)[0]
    code = section.split("```py\n", 1)[1].split("```", 1)[0]
    sources = "".join(
        (EXAMPLE / name).read_text() for name in ("decorator_tool.py", "mcp_server.py")
    )
    shown = [line.strip() for line in code.splitlines() if line.startswith(("@", "def "))]
    assert shown
    for line in shown:
        assert line.split("  #")[0].removesuffix(" ...") in sources, line
    for script in ("decorator_tool.py", "mcp_client.py"):
        assert f"examples/agent_tools/{script}" in section


def test_the_agent_loop_retries_with_the_same_key_stops_at_a_refusal_and_asks_a_person(
    tmp_path: Path,
) -> None:
    if importlib.util.find_spec("pydantic_ai") is None:  # pragma: no cover - dev installs it
        if os.environ.get("CI") == "true":
            raise AssertionError("pydantic-ai-slim is not installed (the dev extra pins it)")
        pytest.skip("pydantic-ai-slim is not installed: pip install -e '.[dev]'")
    summary = run_example("agent_loop.py", tmp_path)
    lost, retried, more, shipment = summary["calls"]
    assert (lost["error"], lost["reuse_same_key"]) == ("TimeoutError", True)
    assert retried == lost | {"error": None, "reuse_same_key": None}  # same call, same key
    assert (more["amount_cents"], more["same_refund_key"]) == (2500, True)
    assert (more["error"], more["reuse_same_key"]) == ("ActionConflictError", False)
    assert shipment["error"] == "OutcomeUnknownError"
    item_id = shipment["item_id"]
    assert item_id in summary["answer"]
    # One refund although the agent sent it twice (the second was replayed by the ledger).
    assert summary["effects"] == [
        ["refund", "ORD-77", "2000"],
        ["shipment", "ORD-77", "SKU-RED-MUG"],
    ]
    assert downstream_calls(tmp_path) == 2
    listed = subprocess.run(
        [sys.executable, "-m", "stepsaga", "recon", "list", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "STEPSAGA_HOME": str(tmp_path)},
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert [item["id"] for item in json.loads(listed.stdout)["items"]] == [item_id]
