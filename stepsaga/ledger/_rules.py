"""The ledger's rules, in one place; stores only keep records and check preconditions.

``perform`` is the whole protocol: claim → run ``fn`` once → record the outcome. The
lower-level ``claim`` / ``complete`` / ``fail`` / ``release`` / ``mark_unknown`` serve
handlers that need phases (pending → applied). Every status change is a conditional write
on status *and* owner, so a worker that lost its claim can never overwrite the winner.

``Ledger`` is assembled from one module per section: ``_listing`` (reading, extra items,
sweeping), ``_budgets``, ``_claims`` (the protocol and its rules), ``_items``
(reconciliation); ``_ledger_base`` holds what they share.
"""

from __future__ import annotations

from types import TracebackType

from stepsaga.ledger._claims import ActionFn, Performed
from stepsaga.ledger._items import LedgerItems, item_id_for
from stepsaga.ledger._ledger_base import parse_choice, parse_status
from stepsaga.ledger._models import EffectClass


class Ledger(LedgerItems):
    """Claims, outcomes, budgets and reconciliation over one ``LedgerStore``."""

    # --- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


__all__ = [
    "ActionFn",
    "EffectClass",
    "Ledger",
    "Performed",
    "item_id_for",
    "parse_choice",
    "parse_status",
]
