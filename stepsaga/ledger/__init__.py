"""The action ledger: durable claims that make every side effect retry-safe.

``open_ledger(url)`` gives a :class:`Ledger`; ``ledger.perform(action, fn)`` claims the
:class:`Action` (an :class:`Intent` plus an operation), runs ``fn`` at most once per
successful claim, records the outcome (a :class:`Record` in a :class:`Status`) and returns
it — or replays the recorded outcome on a duplicate. :func:`ledgered_tool` and
:class:`ActionScope` do the same for a plain function (agent tools); :class:`Writes`,
:class:`ExtraWrite`, :func:`absent` and :func:`equals` commit the caller's own items with
the outcome; :class:`LedgerPolicy` sets leases and budgets; :class:`ReconItem` is what a
person decides; ``ERROR_TABLE`` is the one table that turns an exception into a record's
status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.ledger._connect import open_ledger
    from stepsaga.ledger._models import Action, Intent, ReconItem, Record, Status
    from stepsaga.ledger._outcomes import ERROR_TABLE
    from stepsaga.ledger._policy import LedgerPolicy
    from stepsaga.ledger._rules import Ledger
    from stepsaga.ledger._tools import ActionScope, ledgered_tool
    from stepsaga.ledger._writes import ExtraWrite, Writes, absent, equals

#: Where each public name is defined; loaded on first use (PEP 562).
_WHERE = {
    "open_ledger": "stepsaga.ledger._connect",
    "Action": "stepsaga.ledger._models",
    "Intent": "stepsaga.ledger._models",
    "ReconItem": "stepsaga.ledger._models",
    "Record": "stepsaga.ledger._models",
    "Status": "stepsaga.ledger._models",
    "ERROR_TABLE": "stepsaga.ledger._outcomes",
    "LedgerPolicy": "stepsaga.ledger._policy",
    "Ledger": "stepsaga.ledger._rules",
    "ActionScope": "stepsaga.ledger._tools",
    "ledgered_tool": "stepsaga.ledger._tools",
    "ExtraWrite": "stepsaga.ledger._writes",
    "Writes": "stepsaga.ledger._writes",
    "absent": "stepsaga.ledger._writes",
    "equals": "stepsaga.ledger._writes",
}

#: The same names (a literal, so linters and type checkers read it; a test keeps the
#: three statements equal).
__all__ = [
    "ERROR_TABLE",
    "Action",
    "ActionScope",
    "ExtraWrite",
    "Intent",
    "Ledger",
    "LedgerPolicy",
    "ReconItem",
    "Record",
    "Status",
    "Writes",
    "absent",
    "equals",
    "ledgered_tool",
    "open_ledger",
]

if not TYPE_CHECKING:  # so mypy sees only the names imported above
    __getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return __all__
