"""A real MCP client against ``examples/agent_tools/mcp_server.py`` over stdio."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import ElicitationFnT

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "agent_tools"


@contextlib.asynccontextmanager
async def served(
    folder: Path,
    *,
    elicit: ElicitationFnT | None = None,
    tenant: str = "acme",
    env: dict[str, str] | None = None,
) -> AsyncIterator[ClientSession]:
    """A session with a fresh server process for ``tenant`` over ``folder`` (``env``: more
    of the server's settings)."""
    server = StdioServerParameters(
        command=sys.executable,
        args=[str(EXAMPLE / "mcp_server.py"), str(folder)],
        env={"AGENT_TENANT": tenant, "PYTHONPATH": str(REPO), **(env or {})},
    )
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "server.stderr").open("a") as errlog:
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write, elicitation_callback=elicit) as session,
        ):
            await session.initialize()
            yield session


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def effects(folder: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(folder / "payments.sqlite3") as db:
        return list(db.execute("SELECT kind, order_id, value FROM effects ORDER BY rowid"))


def lose_replies(folder: Path, **calls: list[int]) -> None:
    """The downstream applies these calls (1-based, per kind) and then loses the reply."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "faults.json").write_text(json.dumps({"lose_reply": calls}))


def key_schema(tool: Any) -> dict[str, Any]:
    schema: dict[str, Any] = tool.input_schema["properties"]["idempotencyKey"]
    return schema


def env_for(folder: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "STEPSAGA_HOME": str(folder)}


def downstream_calls(folder: Path) -> list[str]:
    """Every call that reached the downstream, in order (a deduplicated one too)."""
    with sqlite3.connect(folder / "payments.sqlite3") as db:
        return [kind for (kind,) in db.execute("SELECT kind FROM calls ORDER BY n")]
