"""Agent tool calls through the ledger: issued idempotency keys and an MCP adapter.

``KeyBook`` issues the per-intent keys (seed 001), bound to what a person approved
(``Limits`` or exact arguments), and turns them into ledger intents (``Grant``);
``ToolFailure`` is every error result's structured content;
``LedgeredTools`` serves mutating tools over MCP through the ledger (needs the ``mcp``
extra, imported only when the name is used); ``EmfMetrics`` / ``RecordingMetrics`` count
its replays, conflicts and exhausted budgets (CloudWatch EMF lines, or in memory).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga._handlers.metrics import EmfMetrics, RecordingMetrics
    from stepsaga.agents._keys import Grant, KeyBook, Limits
    from stepsaga.agents._mcp import LedgeredTools
    from stepsaga.agents._results import ToolFailure

#: Where each public name is defined; loaded on first use (PEP 562).
_WHERE = {
    "EmfMetrics": "stepsaga._handlers.metrics",
    "RecordingMetrics": "stepsaga._handlers.metrics",
    "Grant": "stepsaga.agents._keys",
    "KeyBook": "stepsaga.agents._keys",
    "Limits": "stepsaga.agents._keys",
    "LedgeredTools": "stepsaga.agents._mcp",
    "ToolFailure": "stepsaga.agents._results",
}

#: The same names (a literal, so linters and type checkers read it; a test keeps the
#: three statements equal).
__all__ = [
    "EmfMetrics",
    "Grant",
    "KeyBook",
    "LedgeredTools",
    "Limits",
    "RecordingMetrics",
    "ToolFailure",
]

if not TYPE_CHECKING:  # so mypy sees only the names imported above
    __getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return __all__
