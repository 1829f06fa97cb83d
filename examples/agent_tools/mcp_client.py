"""An MCP client against ``mcp_server.py`` over stdio.

Run: ``python examples/agent_tools/mcp_client.py DIR``.

Plays the approval flow (issues one key per approved call, bound to its tool and
arguments) and the agent: the same call delivered ten times, a corrected amount under a
new key, the first key with another amount and on another tool. Prints a JSON summary.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client

from stepsaga.agents import KeyBook
from stepsaga.ledger import open_ledger

HERE = Path(__file__).resolve().parent
folder = Path(sys.argv[1] if len(sys.argv) > 1 else ".stepsaga-agent").resolve()


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def main() -> dict[str, Any]:
    # The approval flow: one key per approved call, stored beside the ledger's records.
    folder.mkdir(parents=True, exist_ok=True)
    with open_ledger(f"sqlite:///{folder / 'ledger.sqlite3'}") as ledger:
        book = KeyBook(ledger)
        first = book.issue(
            "acme", tool="create_refund", args={"order_id": "ORD-77", "amount_cents": 2000}
        )
        corrected = book.issue(
            "acme", tool="create_refund", args={"order_id": "ORD-77", "amount_cents": 2500}
        )
    server = StdioServerParameters(
        command=sys.executable,
        args=[str(HERE / "mcp_server.py"), str(folder)],
        # The SDK passes only a safe environment on: the tenant, and where stepsaga is
        # (``PYTHONPATH`` when it runs from a clone rather than an install).
        env={"AGENT_TENANT": "acme"}
        | {name: os.environ[name] for name in ("PYTHONPATH",) if name in os.environ},
    )
    with (folder / "server.stderr").open("w") as errlog:
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            call = {"order_id": "ORD-77", "amount_cents": 2000, "idempotencyKey": first}
            ten = [await session.call_tool("create_refund", call) for _ in range(10)]
            fixed = await session.call_tool(
                "create_refund", {**call, "amount_cents": 2500, "idempotencyKey": corrected}
            )
            reused = await session.call_tool("create_refund", {**call, "amount_cents": 2600})
            other_tool = await session.call_tool("issue_credit", call)
            short = await session.call_tool("create_refund", {**call, "idempotencyKey": "x"})
            refunds = await session.call_tool("get_refunds", {})
    schema = listed["create_refund"].input_schema
    return {
        "required": schema["required"],
        "key_schema": schema["properties"]["idempotencyKey"],
        "read_only": getattr(listed["get_refunds"].annotations, "read_only_hint", None),
        "ten_distinct_results": len({json.dumps(r.structured_content) for r in ten}),
        "ten_errors": sum(bool(r.is_error) for r in ten),
        "first": ten[0].structured_content,
        "corrected": fixed.structured_content,
        "reused_error": reused.is_error,
        "reused_text": text(reused),
        "reused_failure": reused.structured_content,
        "other_tool_failure": other_tool.structured_content,
        "short_key_error": short.is_error,
        "refunds": refunds.structured_content,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
