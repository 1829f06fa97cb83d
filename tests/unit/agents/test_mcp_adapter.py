"""The MCP adapter in process: scope from the server's tenant and an issued key."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

try:
    from mcp.server.mcpserver import Context, MCPServer
except ImportError:  # pragma: no cover - the dev extra installs it
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("mcp is not installed: pip install 'stepsaga[mcp]'", allow_module_level=True)

from stepsaga.agents import KeyBook, LedgeredTools, case_for_key
from stepsaga.errors import InvalidInputError, NotFoundError
from stepsaga.ledger import ActionScope, EffectClass, Ledger, open_ledger


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite3'}")


def serve(ledger: Ledger, tenant: Any = "acme") -> tuple[MCPServer[Any], list[ActionScope]]:
    server: MCPServer[Any] = MCPServer("t")
    tools = LedgeredTools(server, ledger=ledger, tenant=tenant)
    scopes: list[ActionScope] = []

    @tools.mutating(effect=EffectClass.KEYED_WRITE)
    def create_refund(order_id: str, amount_cents: int, *, scope: ActionScope) -> dict[str, Any]:
        scopes.append(scope)
        return {"refund": order_id, "cents": amount_cents}

    @tools.read()
    def lookup(order_id: str) -> dict[str, Any]:
        return {"order_id": order_id}

    return server, scopes


def call(server: MCPServer[Any], name: str, arguments: dict[str, Any]) -> Any:
    context: Any = None
    return asyncio.run(server.call_tool(name, arguments, context))


def test_the_scope_is_the_servers_tenant_and_the_issued_key(ledger: Ledger) -> None:
    server, scopes = serve(ledger)
    key = KeyBook(ledger).issue("acme")
    call(server, "create_refund", {"order_id": "7", "amount_cents": 5, "idempotencyKey": key})
    assert scopes[0].tenant_id == "acme"
    assert scopes[0].intent.case_id == case_for_key(key)
    assert ledger.list()[0].key == f"acme:{case_for_key(key)}:r1:create_refund"


def test_a_key_never_issued_or_issued_to_another_tenant_is_refused(ledger: Ledger) -> None:
    server, scopes = serve(ledger)
    invented = "call_abc123-model-made-this"
    from mcp.server.mcpserver.exceptions import ToolError

    with pytest.raises(ToolError, match="was not issued to tenant acme"):
        call(
            server,
            "create_refund",
            {"order_id": "7", "amount_cents": 5, "idempotencyKey": invented},
        )
    other = KeyBook(ledger).issue("globex")
    with pytest.raises(ToolError, match="NotFoundError"):
        call(server, "create_refund", {"order_id": "7", "amount_cents": 5, "idempotencyKey": other})
    assert scopes == []
    assert ledger.list() == []


def test_the_tenant_can_come_from_the_request_context(ledger: Ledger) -> None:
    seen: list[object] = []

    def tenant_of(context: Context[Any, Any]) -> str:
        seen.append(context)
        return "globex"

    server, scopes = serve(ledger, tenant_of)
    key = KeyBook(ledger).issue("globex")
    call(server, "create_refund", {"order_id": "7", "amount_cents": 5, "idempotencyKey": key})
    assert scopes[0].tenant_id == "globex"
    assert len(seen) == 1


def test_read_tools_take_no_key_and_write_nothing(ledger: Ledger) -> None:
    server, _ = serve(ledger)
    tools = {tool.name: tool for tool in asyncio.run(server.list_tools())}
    assert "idempotencyKey" not in tools["lookup"].input_schema["properties"]
    assert tools["lookup"].annotations is not None
    assert tools["lookup"].annotations.read_only_hint is True
    assert tools["create_refund"].meta == {"stepsaga/effect": "keyed_write"}
    call(server, "lookup", {"order_id": "7"})
    assert ledger.list() == []


def test_the_adapter_refuses_what_would_break_it(ledger: Ledger) -> None:
    tools = LedgeredTools(MCPServer("t"), ledger=ledger, tenant="acme")
    with pytest.raises(InvalidInputError, match="use read"):
        tools.mutating(effect="read")
    with pytest.raises(InvalidInputError, match="adapter's own"):

        @tools.mutating()
        def bad(idempotencyKey: str, *, scope: ActionScope) -> dict[str, Any]:  # noqa: N803
            return {}


def test_keys_are_checked_and_issued_once(ledger: Ledger) -> None:
    book = KeyBook(ledger)
    with pytest.raises(InvalidInputError, match="16 to 128"):
        book.issue("acme", key="short")
    key = book.issue("acme", key="k" * 128)
    with pytest.raises(InvalidInputError, match="already issued"):
        book.issue("acme", key=key)
    with pytest.raises(NotFoundError):
        book.intent("acme", "n" * 16)
    assert len(book.issue("acme")) >= 16
