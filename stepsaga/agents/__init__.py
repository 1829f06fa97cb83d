"""Agent tool calls through the ledger: issued idempotency keys and an MCP adapter.

``KeyBook`` issues the per-intent keys (seed 001), bound to what a person approved
(``Limits`` or exact arguments), and turns them into ledger intents (``Grant``);
``ToolFailure`` is every error result's structured content;
``LedgeredTools`` serves mutating tools over MCP through the ledger (needs the ``mcp``
extra, imported only when the name is used).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.agents._keys import Grant, KeyBook, Limits, case_for_key
    from stepsaga.agents._mcp import LedgeredTools
    from stepsaga.agents._results import ToolFailure

_WHERE = {
    "Grant": "stepsaga.agents._keys",
    "KeyBook": "stepsaga.agents._keys",
    "Limits": "stepsaga.agents._keys",
    "ToolFailure": "stepsaga.agents._results",
    "case_for_key": "stepsaga.agents._keys",
    "LedgeredTools": "stepsaga.agents._mcp",
}

__all__ = ["Grant", "KeyBook", "LedgeredTools", "Limits", "ToolFailure", "case_for_key"]

__getattr__ = lazy_getattr(__name__, _WHERE)
