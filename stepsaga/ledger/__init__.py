"""The action ledger: durable claims that make every side effect retry-safe.

``open_ledger(url)`` gives a ``Ledger``; ``ledger.perform(action, fn)`` claims the action,
runs ``fn`` at most once per successful claim, records the outcome and returns it — or
replays the recorded outcome on a duplicate. The rules live in ``rules.py`` — what an
exception does to a record in ``outcomes.py``'s ``ERROR_TABLE``, which the saga handlers
use too; ``sqlite.py`` and ``dynamodb.py`` only store and conditionally update records.
"""

from stepsaga.ledger.connect import open_ledger, parse_url
from stepsaga.ledger.models import (
    Action,
    Claim,
    EffectClass,
    Intent,
    ReconItem,
    ReconOutcome,
    ReconStatus,
    Record,
    Replay,
    Status,
)
from stepsaga.ledger.outcomes import (
    ERROR_TABLE,
    ErrorCell,
    ErrorFamily,
    RaiseAs,
    Settlement,
    error_family,
    settlement_for,
)
from stepsaga.ledger.policy import LedgerPolicy
from stepsaga.ledger.rules import Ledger
from stepsaga.ledger.tools import ActionScope, ledgered_tool

__all__ = [
    "ERROR_TABLE",
    "Action",
    "ActionScope",
    "Claim",
    "EffectClass",
    "ErrorCell",
    "ErrorFamily",
    "Intent",
    "Ledger",
    "LedgerPolicy",
    "RaiseAs",
    "ReconItem",
    "ReconOutcome",
    "ReconStatus",
    "Record",
    "Replay",
    "Settlement",
    "Status",
    "error_family",
    "ledgered_tool",
    "open_ledger",
    "parse_url",
    "settlement_for",
]
