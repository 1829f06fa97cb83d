"""Agent tools bound to an approved intent, over a real stdio MCP client (issue 28).

Each test starts ``examples/agent_tools/mcp_server.py`` in its own process and talks to it
as an agent host would; the ledger is the server's ``ledger.sqlite3`` in the stepsaga home,
so ``stepsaga recon`` works on what the tools left.
"""

from __future__ import annotations

import asyncio
import json
import os
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

from mcp import types

from stepsaga._project.home import StateHome
from stepsaga.agents import KeyBook, Limits
from stepsaga.ledger import Ledger, Status, open_ledger
from stepsaga.ledger._models import ReconStatus
from tests.framework.functional.agent_stdio import (
    REPO,
    downstream_calls,
    effects,
    env_for,
    lose_replies,
    served,
    text,
)
from tests.framework.functional.console_support import client, local_config

pytestmark = pytest.mark.slow

FAILURE_FIELDS = {
    "error",
    "retryable",
    "retry_after_s",
    "reuse_same_key",
    "item_id",
    "message",
    "advice",
}


def ledger_of(folder: Path) -> Ledger:
    folder.mkdir(parents=True, exist_ok=True)
    return open_ledger(f"sqlite:///{folder / 'ledger.sqlite3'}")


def stepsaga(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stepsaga", *args],
        capture_output=True,
        text=True,
        env=env_for(folder),
        cwd=REPO,
        timeout=120,
        check=False,
    )


def refund(key: str, cents: int = 1000, order: str = "ORD-1") -> dict[str, Any]:
    return {"order_id": order, "amount_cents": cents, "idempotencyKey": key}


def test_one_key_is_one_effect_across_two_tools(tmp_path: Path) -> None:
    with ledger_of(tmp_path) as ledger:
        book = KeyBook(ledger)
        bound = book.issue(
            "acme", tool="create_refund", args={"order_id": "ORD-1", "amount_cents": 1000}
        )
        loose = book.issue("acme", unbound=True)

    async def scenario() -> dict[str, Any]:
        async with served(tmp_path) as session:
            return {
                "refund": await session.call_tool("create_refund", refund(bound)),
                "credit": await session.call_tool("issue_credit", refund(bound)),
                "loose_credit": await session.call_tool("issue_credit", refund(loose, 500)),
                "loose_refund": await session.call_tool("create_refund", refund(loose, 500)),
                "loose_again": await session.call_tool("issue_credit", refund(loose, 500)),
            }

    out = asyncio.run(scenario())
    assert out["refund"].structured_content["refund_id"] == "RF-1"
    for refused in ("credit", "loose_refund"):
        result = out[refused]
        assert result.is_error
        assert result.structured_content["error"] == "ActionConflictError"
        assert result.structured_content["reuse_same_key"] is False
    assert "approved for create_refund with arguments digest" in text(out["credit"])
    assert "approved for issue_credit (any arguments, issued unbound)" in text(out["loose_refund"])
    assert out["loose_again"].structured_content == out["loose_credit"].structured_content
    # Two keys, two effects: the refund under the bound key, the credit under the loose one.
    assert effects(tmp_path) == [("refund", "ORD-1", "1000"), ("credit", "ORD-1", "500")]


def test_a_key_approved_with_limits_takes_calls_within_them_only(tmp_path: Path) -> None:
    limits = Limits(fixed={"order_id": "ORD-1"}, at_most={"amount_cents": 1000})
    with ledger_of(tmp_path) as ledger:
        key = KeyBook(ledger).issue("acme", tool="create_refund", limits=limits)

    async def scenario() -> list[types.CallToolResult]:
        async with served(tmp_path) as session:
            return [
                await session.call_tool("create_refund", refund(key, 1500)),
                await session.call_tool("create_refund", refund(key, 900, "ORD-2")),
                await session.call_tool("create_refund", refund(key, 900)),
            ]

    over, other_order, within = asyncio.run(scenario())
    assert over.is_error
    assert "amount_cents at most 1000" in text(over)
    assert "this call's amount_cents is 1500" in text(over)
    assert other_order.is_error
    assert 'order_id = "ORD-1"' in text(other_order)
    assert within.structured_content["amount_cents"] == 900
    assert effects(tmp_path) == [("refund", "ORD-1", "900")]


def test_an_uncertain_outcome_becomes_an_item_that_recon_resolve_settles(tmp_path: Path) -> None:
    lose_replies(tmp_path, shipment=[1])
    with ledger_of(tmp_path) as ledger:
        key = KeyBook(ledger).issue(
            "acme", tool="ship_replacement", args={"order_id": "ORD-1", "sku": "SKU-MUG"}
        )
    call = {"order_id": "ORD-1", "sku": "SKU-MUG", "idempotencyKey": key}

    async def twice() -> list[types.CallToolResult]:
        async with served(tmp_path) as session:
            return [await session.call_tool("ship_replacement", call) for _ in range(2)]

    first, retry = asyncio.run(twice())
    failure = first.structured_content
    assert first.is_error
    assert set(failure) == FAILURE_FIELDS
    assert failure["error"] == "OutcomeUnknownError"
    assert failure["reuse_same_key"] is True
    assert failure["retryable"] is False
    item_id = failure["item_id"]
    assert item_id
    assert item_id in text(first)
    assert "retry this call with the SAME idempotencyKey; do not request a new key" in text(first)
    assert retry.structured_content["item_id"] == item_id  # the same question, asked once

    listed = stepsaga(tmp_path, "recon", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    items = json.loads(listed.stdout)["items"]
    assert [item["id"] for item in items] == [item_id]
    assert items[0]["step"] == "ship_replacement"
    assert "agent tool ship_replacement: outcome unknown" in items[0]["reason"]
    records = stepsaga(tmp_path, "ledger", "list", "--status", "UNKNOWN", "--json")
    assert records.returncode == 0, records.stderr
    assert "ship_replacement" in records.stdout
    console = client(local_config(StateHome(tmp_path)))
    assert item_id in console.get("/reconciliation").text
    assert "ship_replacement" in console.get("/ledger").text

    resolved = stepsaga(
        tmp_path,
        "recon", "resolve", item_id, "--outcome", "applied",
        "--note", "parcel SH-1 left the warehouse", "--by", "ops@acme.example", "--json",
    )  # fmt: skip
    assert resolved.returncode == 0, resolved.stderr

    async def after() -> tuple[types.Tool, types.CallToolResult]:
        async with served(tmp_path) as session:
            (tool,) = [
                t for t in (await session.list_tools()).tools if t.name == "ship_replacement"
            ]
            # The client holds the result to the published outputSchema (it raises if not).
            return tool, await session.call_tool("ship_replacement", call)

    tool, settled = asyncio.run(after())
    assert tool.output_schema is not None
    shipment, reconciled = tool.output_schema["anyOf"]
    assert tool.output_schema["type"] == "object"
    assert set(shipment["required"]) == {"shipment_id", "order_id", "sku"}  # typed: Shipment
    assert reconciled["title"] == "Reconciled"
    assert not settled.is_error, text(settled)
    assert settled.structured_content["reconciled"] == {
        "item_id": item_id,
        "outcome": "applied",
        "by": "ops@acme.example",
    }
    assert effects(tmp_path) == [("shipment", "ORD-1", "SKU-MUG")]  # never shipped twice
    with ledger_of(tmp_path) as ledger:
        item = ledger.get_item(item_id)
        assert item is not None
        assert item.status is ReconStatus.RESOLVED
        assert item.evidence["tool"] == "ship_replacement"
        assert item.evidence["approved"].startswith("ship_replacement with arguments digest")
        assert item.evidence["request_digest"] == ledger.list()[0].digest


def test_a_retry_after_not_applied_runs_the_call_again_with_the_same_key(tmp_path: Path) -> None:
    lose_replies(tmp_path, shipment=[1])
    with ledger_of(tmp_path) as ledger:
        key = KeyBook(ledger).issue(
            "acme", tool="ship_replacement", args={"order_id": "ORD-1", "sku": "SKU-MUG"}
        )
    call = {"order_id": "ORD-1", "sku": "SKU-MUG", "idempotencyKey": key}

    async def once() -> types.CallToolResult:
        async with served(tmp_path) as session:
            return await session.call_tool("ship_replacement", call)

    first = asyncio.run(once())
    item_id = first.structured_content["item_id"]
    assert item_id
    # The person finds no parcel (wrongly: the warehouse shipped and lost the reply).
    resolved = stepsaga(
        tmp_path,
        "recon", "resolve", item_id, "--outcome", "not-applied",
        "--note", "no parcel found", "--by", "ops@acme.example",
    )  # fmt: skip
    assert resolved.returncode == 0, resolved.stderr
    with ledger_of(tmp_path) as ledger:
        assert ledger.list()[0].status is Status.RELEASED

    retry = asyncio.run(once())
    assert not retry.is_error, text(retry)
    # Run again, with the same key downstream: the warehouse deduplicates on it.
    assert downstream_calls(tmp_path) == ["shipment", "shipment"]
    assert effects(tmp_path) == [("shipment", "ORD-1", "SKU-MUG")]
    assert retry.structured_content == {
        "shipment_id": "SH-1",
        "order_id": "ORD-1",
        "sku": "SKU-MUG",
    }
    with ledger_of(tmp_path) as ledger:
        (record,) = ledger.list()
        assert record.status is Status.COMPLETED
        assert record.attempts == 2


def test_a_lost_reply_the_lookup_finds_answers_with_the_effect_and_no_item_waits(
    tmp_path: Path,
) -> None:
    lose_replies(tmp_path, refund=[1])
    with ledger_of(tmp_path) as ledger:
        key = KeyBook(ledger).issue(
            "acme", tool="create_refund", args={"order_id": "ORD-1", "amount_cents": 1000}
        )

    async def scenario() -> types.CallToolResult:
        async with served(tmp_path) as session:
            return await session.call_tool("create_refund", refund(key))

    result = asyncio.run(scenario())
    assert not result.is_error, text(result)
    assert result.structured_content == {
        "refund_id": "RF-1",
        "order_id": "ORD-1",
        "amount_cents": 1000,
    }
    with ledger_of(tmp_path) as ledger:
        (record,) = ledger.list()
        assert record.status is Status.COMPLETED
        assert record.reference == "RF-1"
        (item,) = ledger.list_items(status="resolved")
        assert item.resolved_by == "stepsaga:auto"


def test_schemas_refuse_extra_arguments_and_coercion_and_describe_every_parameter(
    tmp_path: Path,
) -> None:
    with ledger_of(tmp_path) as ledger:
        key = KeyBook(ledger).issue(
            "acme", tool="create_refund", args={"order_id": "ORD-1", "amount_cents": 1500}
        )

    async def scenario() -> dict[str, Any]:
        async with served(tmp_path) as session:
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            return {
                "tools": listed,
                "extra": await session.call_tool(
                    "create_refund", refund(key, 1500) | {"note": "x"}
                ),
                "coerced": await session.call_tool(
                    "create_refund", refund(key) | {"amount_cents": "1500"}
                ),
                "short": await session.call_tool("create_refund", refund("short")),
            }

    out = asyncio.run(scenario())
    tool = out["tools"]["create_refund"]
    schema = tool.input_schema
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"order_id", "amount_cents", "idempotencyKey"}
    assert all(p.get("description") for p in schema["properties"].values())
    assert schema["properties"]["idempotencyKey"]["title"] == "Idempotency key"
    assert "SAME key" in schema["properties"]["idempotencyKey"]["description"]
    assert tool.title == "Create refund"
    assert tool.annotations.destructive_hint is True
    assert out["tools"]["ship_replacement"].annotations.destructive_hint is True
    assert out["tools"]["get_refunds"].annotations.read_only_hint is True
    assert tool.output_schema["type"] == "object"
    for case, field in (
        ("extra", "note"),
        ("coerced", "amount_cents"),
        ("short", "idempotencyKey"),
    ):
        result = out[case]
        assert result.is_error, case
        assert result.structured_content["error"] == "InvalidInputError"
        assert result.structured_content["message"].startswith(f"{field}: ")
        assert "pydantic" not in text(result)
        assert "http" not in text(result)
    assert effects(tmp_path) == []


def test_the_key_from_meta_wins_and_a_made_up_key_is_refused(tmp_path: Path) -> None:
    with ledger_of(tmp_path) as ledger:
        key = KeyBook(ledger).issue(
            "acme", tool="create_refund", args={"order_id": "ORD-1", "amount_cents": 1000}
        )
    invented = "call_0123456789abcdef"
    plain: dict[str, Any] = {"order_id": "ORD-1", "amount_cents": 1000}

    async def scenario() -> list[types.CallToolResult]:
        async with served(tmp_path) as session:
            meta: Any = {"stepsaga/idempotencyKey": key}
            return [
                await session.call_tool("create_refund", plain, meta=meta),
                await session.call_tool(
                    "create_refund", plain | {"idempotencyKey": invented}, meta=meta
                ),
                await session.call_tool("create_refund", plain | {"idempotencyKey": invented}),
            ]

    by_meta, meta_wins, invented_alone = asyncio.run(scenario())
    assert by_meta.structured_content["refund_id"] == "RF-1"
    assert meta_wins.structured_content == by_meta.structured_content
    refused = invented_alone.structured_content
    assert refused["error"] == "NotFoundError"
    assert refused["reuse_same_key"] is False
    assert "was not issued to tenant acme" in refused["message"]
    assert len(effects(tmp_path)) == 1


def test_a_host_that_sends_the_key_in_meta_leaves_the_model_no_key_to_invent(
    tmp_path: Path,
) -> None:
    with ledger_of(tmp_path) as ledger:
        key = KeyBook(ledger).issue(
            "acme", tool="create_refund", args={"order_id": "ORD-1", "amount_cents": 1000}
        )
    plain: dict[str, Any] = {"order_id": "ORD-1", "amount_cents": 1000}

    async def scenario() -> dict[str, Any]:
        async with served(tmp_path, env={"AGENT_KEY_IN_META": "1"}) as session:
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            meta: Any = {"stepsaga/idempotencyKey": key}
            return {
                "schema": listed["create_refund"].input_schema,
                "by_meta": await session.call_tool("create_refund", plain, meta=meta),
                "retry": await session.call_tool("create_refund", plain, meta=meta),
                "no_meta": await session.call_tool("create_refund", plain),
                "model_key": await session.call_tool(
                    "create_refund", plain | {"idempotencyKey": key}
                ),
            }

    out = asyncio.run(scenario())
    schema = out["schema"]
    assert "idempotencyKey" not in schema["properties"]
    assert set(schema["required"]) == {"order_id", "amount_cents"}
    assert out["by_meta"].structured_content["refund_id"] == "RF-1"
    assert out["retry"].structured_content == out["by_meta"].structured_content
    for case, message in (
        ("no_meta", "no idempotencyKey from the host"),  # nothing for the model to fix
        ("model_key", "idempotencyKey: "),  # not an argument here: an extra one
    ):
        refused = out[case].structured_content
        assert out[case].is_error, case
        assert refused["error"] == "InvalidInputError", case
        assert refused["reuse_same_key"] is False, case
        assert refused["message"].startswith(message), refused
    assert effects(tmp_path) == [("refund", "ORD-1", "1000")]


def test_the_approval_tool_mints_a_bound_key_after_a_person_approves(tmp_path: Path) -> None:
    asked: list[str] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        approve = "ORD-1" in params.message and "1000" in params.message
        return types.ElicitResult(action="accept", content={"approve": approve})

    async def scenario() -> dict[str, Any]:
        async with served(tmp_path, elicit=person) as session:
            approved = await session.call_tool(
                "request_approval",
                {"tool": "create_refund", "arguments": {"order_id": "ORD-1", "amount_cents": 1000}},
            )
            key = approved.structured_content["idempotencyKey"]
            return {
                "approved": approved,
                "declined": await session.call_tool(
                    "request_approval",
                    {
                        "tool": "create_refund",
                        "arguments": {"order_id": "ORD-9", "amount_cents": 5},
                    },
                ),
                "used": await session.call_tool("create_refund", refund(key)),
                "more": await session.call_tool("create_refund", refund(key, 5000)),
            }

    out = asyncio.run(scenario())
    assert len(asked) == 2
    assert "create_refund" in asked[0]
    assert out["used"].structured_content["refund_id"] == "RF-1"
    assert out["more"].structured_content["error"] == "ActionConflictError"
    assert out["declined"].structured_content["error"] == "BusinessRejectedError"

    async def without_elicitation() -> types.CallToolResult:
        async with served(tmp_path) as session:
            return await session.call_tool(
                "request_approval",
                {"tool": "create_refund", "arguments": {"order_id": "ORD-1", "amount_cents": 1}},
            )

    refused = asyncio.run(without_elicitation())
    assert refused.is_error
    assert "no elicitation capability" in text(refused)
