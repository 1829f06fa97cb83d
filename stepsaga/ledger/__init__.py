"""The action ledger: durable claims that make every side effect retry-safe.

``open_ledger(url)`` gives a ``Ledger``; ``ledger.perform(action, fn)`` claims the action,
runs ``fn`` at most once per successful claim, records the outcome and returns it — or
replays the recorded outcome on a duplicate; ``Writes`` commit with it (``writes.py``), and
``HomeRegions`` keeps each tenant's writes in its home region (``regions.py``). The rules
live in ``rules.py`` — what an
exception does to a record in ``outcomes.py``'s ``ERROR_TABLE``, which the saga handlers
use too; ``sqlite.py`` and ``dynamodb.py`` only store and conditionally update records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.ledger._connect import open_ledger, parse_url
    from stepsaga.ledger._models import (
        Action,
        Approval,
        Claim,
        EffectClass,
        Intent,
        ReconItem,
        ReconOutcome,
        ReconStatus,
        Record,
        Replay,
        ResolutionAudit,
        Status,
    )
    from stepsaga.ledger._outcomes import (
        ERROR_TABLE,
        ErrorCell,
        ErrorFamily,
        RaiseAs,
        Settlement,
        error_family,
        settlement_for,
    )
    from stepsaga.ledger._policy import LedgerPolicy
    from stepsaga.ledger._regions import HomeRegions, RegionalLedgers
    from stepsaga.ledger._rules import Ledger
    from stepsaga.ledger._tools import ActionScope, ledgered_tool
    from stepsaga.ledger._writes import ExtraWrite, Writes

# Names load on first use: importing ``stepsaga.ledger._models`` no longer loads the rules,
# the stores and their canonicalization for every command.
_WHERE = {
    "open_ledger": "stepsaga.ledger._connect",
    "parse_url": "stepsaga.ledger._connect",
    "Action": "stepsaga.ledger._models",
    "Approval": "stepsaga.ledger._models",
    "Claim": "stepsaga.ledger._models",
    "EffectClass": "stepsaga.ledger._models",
    "Intent": "stepsaga.ledger._models",
    "ReconItem": "stepsaga.ledger._models",
    "ReconOutcome": "stepsaga.ledger._models",
    "ReconStatus": "stepsaga.ledger._models",
    "Record": "stepsaga.ledger._models",
    "Replay": "stepsaga.ledger._models",
    "ResolutionAudit": "stepsaga.ledger._models",
    "Status": "stepsaga.ledger._models",
    "ERROR_TABLE": "stepsaga.ledger._outcomes",
    "ErrorCell": "stepsaga.ledger._outcomes",
    "ErrorFamily": "stepsaga.ledger._outcomes",
    "RaiseAs": "stepsaga.ledger._outcomes",
    "Settlement": "stepsaga.ledger._outcomes",
    "error_family": "stepsaga.ledger._outcomes",
    "settlement_for": "stepsaga.ledger._outcomes",
    "LedgerPolicy": "stepsaga.ledger._policy",
    "HomeRegions": "stepsaga.ledger._regions",
    "RegionalLedgers": "stepsaga.ledger._regions",
    "Ledger": "stepsaga.ledger._rules",
    "ActionScope": "stepsaga.ledger._tools",
    "ledgered_tool": "stepsaga.ledger._tools",
    "ExtraWrite": "stepsaga.ledger._writes",
    "Writes": "stepsaga.ledger._writes",
}

__all__ = [
    "ERROR_TABLE",
    "Action",
    "ActionScope",
    "Approval",
    "Claim",
    "EffectClass",
    "ErrorCell",
    "ErrorFamily",
    "ExtraWrite",
    "HomeRegions",
    "Intent",
    "Ledger",
    "LedgerPolicy",
    "RaiseAs",
    "ReconItem",
    "ReconOutcome",
    "ReconStatus",
    "Record",
    "RegionalLedgers",
    "Replay",
    "ResolutionAudit",
    "Settlement",
    "Status",
    "Writes",
    "error_family",
    "ledgered_tool",
    "open_ledger",
    "parse_url",
    "settlement_for",
]


__getattr__ = lazy_getattr(__name__, _WHERE)
