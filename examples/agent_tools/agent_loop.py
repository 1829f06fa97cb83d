"""A whole agent loop: pydantic-ai driving the MCP tools, with a local scripted model.

Run: ``python examples/agent_tools/agent_loop.py DIR`` (no network: the model is a
pydantic-ai ``FunctionModel`` that plays a careful LLM by reading its tool results).

The host (this script) plays the approval flow — one key per approved call, bound to its
tool and arguments — and the link between the agent and ``mcp_server.py`` over stdio.
The run shows the three things an agent builder needs from the tools:

1. the first refund's reply is lost on the way back (the server applied it): the agent
   retries with the SAME key, as the error result says, and gets the one refund;
2. the agent then tries the same key with another amount: refused, ``reuse_same_key``
   false, so it does not retry;
3. the warehouse loses the shipment's reply: the result names a reconciliation item, and
   the agent tells the user that a person decides (``stepsaga recon list`` shows it).

Prints a JSON summary (the last line).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from payments import Payments
from pydantic_ai import Agent, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from stepsaga.agents import KeyBook
from stepsaga.ledger import open_ledger

HERE = Path(__file__).resolve().parent
folder = Path(sys.argv[1] if len(sys.argv) > 1 else ".stepsaga-agent").resolve()
ORDER, SKU = "ORD-77", "SKU-RED-MUG"


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A stand-in LLM with a fixed plan that obeys the tools' error results: retry only
    with the same key when ``reuse_same_key`` says so, never invent a key, report items."""
    prompt = next(
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    )
    keys = dict(re.findall(r"(\w+) key: (\S+)", prompt))
    returns = [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    last: dict[str, Any] = returns[-1].content if returns else {}
    refund = {"order_id": ORDER, "amount_cents": 2000, "idempotencyKey": keys["refund"]}
    if not returns:
        return _call("create_refund", refund)
    if last.get("is_error") and last.get("reuse_same_key") and last.get("retryable"):
        previous = returns[-1]
        return _call(previous.tool_name, _arguments_of(messages, previous.tool_call_id))
    done = {r.tool_name for r in returns if not r.content.get("is_error")}
    tried_more = any(
        _arguments_of(messages, r.tool_call_id).get("amount_cents") == 2500 for r in returns
    )
    if "create_refund" in done and not tried_more:
        # The customer asked for 25.00: the model tries the approved key once more.
        return _call("create_refund", refund | {"amount_cents": 2500})
    if not any(r.tool_name == "ship_replacement" for r in returns):
        shipment = {"order_id": ORDER, "sku": SKU, "idempotencyKey": keys["shipment"]}
        return _call("ship_replacement", shipment)
    item = last.get("item_id")
    return ModelResponse(
        parts=[
            TextPart(
                f"Refunded 20.00 (the 25.00 refund needs a new approval). "
                f"The replacement's shipment is uncertain: item {item} waits for a person."
            )
        ]
    )


def _call(tool: str, arguments: dict[str, Any]) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, arguments)])


def _arguments_of(messages: list[ModelMessage], call_id: str) -> dict[str, Any]:
    for message in messages:
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart) and part.tool_call_id == call_id:
                    return part.args_as_dict()
    return {}


class Link:
    """The host's link to the MCP server; the first refund's reply is lost on the way
    back (after the server applied it), as a timeout would lose it."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.trace: list[dict[str, Any]] = []
        self._lost = {"create_refund"}

    async def tools(self) -> list[Tool[Any]]:
        listed = (await self.session.list_tools()).tools
        return [
            Tool.from_schema(
                self._caller(tool.name),
                name=tool.name,
                description=tool.description,
                json_schema=tool.input_schema,
            )
            for tool in listed
            if tool.name != "request_approval"
        ]

    def _caller(self, name: str) -> Any:
        async def call(**arguments: Any) -> dict[str, Any]:
            result = await self.session.call_tool(name, arguments)
            answer = {"is_error": bool(result.is_error), **(result.structured_content or {})}
            if name in self._lost:
                self._lost.discard(name)
                answer = {
                    "is_error": True,
                    "error": "TimeoutError",
                    "retryable": True,
                    "reuse_same_key": True,
                    "message": "no reply within 30 s; the call may have been applied",
                    "advice": "retry this call with the SAME idempotencyKey; "
                    "do not request a new key",
                }
            self.trace.append({"tool": name, "arguments": arguments, "answer": answer})
            return answer

        return call


async def main() -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "faults.json").write_text(json.dumps({"lose_reply": {"shipment": [1]}}))
    with open_ledger(f"sqlite:///{folder / 'ledger.sqlite3'}") as ledger:
        book = KeyBook(ledger)  # the approval flow: a person approved exactly these calls
        refund_key = book.issue(
            "acme", tool="create_refund", args={"order_id": ORDER, "amount_cents": 2000}
        )
        shipment_key = book.issue(
            "acme", tool="ship_replacement", args={"order_id": ORDER, "sku": SKU}
        )
    server = StdioServerParameters(
        command=sys.executable,
        args=[str(HERE / "mcp_server.py"), str(folder)],
        env={"AGENT_TENANT": "acme"}
        | {name: os.environ[name] for name in ("PYTHONPATH",) if name in os.environ},
    )
    with (folder / "server.stderr").open("w") as errlog:
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            link = Link(session)
            agent = Agent(FunctionModel(scripted_model), tools=await link.tools())
            run = await agent.run(
                f"Order {ORDER}: refund 20.00 and ship a replacement {SKU}. "
                f"Approved refund key: {refund_key} shipment key: {shipment_key}"
            )
    return {
        "calls": [
            {
                "tool": step["tool"],
                "amount_cents": step["arguments"].get("amount_cents"),
                "same_refund_key": step["arguments"].get("idempotencyKey") == refund_key,
                "error": step["answer"].get("error") if step["answer"]["is_error"] else None,
                "reuse_same_key": step["answer"].get("reuse_same_key"),
                "item_id": step["answer"].get("item_id"),
            }
            for step in link.trace
        ],
        "effects": [list(row) for row in Payments(folder).effects()],
        "answer": run.output,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
