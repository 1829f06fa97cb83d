"""Agent tool calls through the ledger: issued idempotency keys and an MCP adapter.

``KeyBook`` issues the per-intent keys (seed 001) and turns them into ledger intents;
``LedgeredTools`` serves mutating tools over MCP through ``ledgered_tool`` (needs the
``mcp`` extra, imported only when the name is used).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.agents.keys import KeyBook, case_for_key
    from stepsaga.agents.mcp import LedgeredTools

_WHERE = {
    "KeyBook": "stepsaga.agents.keys",
    "case_for_key": "stepsaga.agents.keys",
    "LedgeredTools": "stepsaga.agents.mcp",
}

__all__ = ["KeyBook", "LedgeredTools", "case_for_key"]

__getattr__ = lazy_getattr(__name__, _WHERE)
