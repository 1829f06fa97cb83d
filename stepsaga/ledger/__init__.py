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

from stepsaga._lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.ledger.connect import open_ledger, parse_url
    from stepsaga.ledger.models import (
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
    from stepsaga.ledger.regions import HomeRegions, RegionalLedgers
    from stepsaga.ledger.rules import Ledger
    from stepsaga.ledger.tools import ActionScope, ledgered_tool
    from stepsaga.ledger.writes import ExtraWrite, Writes

# Names load on first use: importing ``stepsaga.ledger.models`` no longer loads the rules,
# the stores and their canonicalization for every command.
_WHERE = {
    "open_ledger": "stepsaga.ledger.connect",
    "parse_url": "stepsaga.ledger.connect",
    "Action": "stepsaga.ledger.models",
    "Approval": "stepsaga.ledger.models",
    "Claim": "stepsaga.ledger.models",
    "EffectClass": "stepsaga.ledger.models",
    "Intent": "stepsaga.ledger.models",
    "ReconItem": "stepsaga.ledger.models",
    "ReconOutcome": "stepsaga.ledger.models",
    "ReconStatus": "stepsaga.ledger.models",
    "Record": "stepsaga.ledger.models",
    "Replay": "stepsaga.ledger.models",
    "ResolutionAudit": "stepsaga.ledger.models",
    "Status": "stepsaga.ledger.models",
    "ERROR_TABLE": "stepsaga.ledger.outcomes",
    "ErrorCell": "stepsaga.ledger.outcomes",
    "ErrorFamily": "stepsaga.ledger.outcomes",
    "RaiseAs": "stepsaga.ledger.outcomes",
    "Settlement": "stepsaga.ledger.outcomes",
    "error_family": "stepsaga.ledger.outcomes",
    "settlement_for": "stepsaga.ledger.outcomes",
    "LedgerPolicy": "stepsaga.ledger.policy",
    "HomeRegions": "stepsaga.ledger.regions",
    "RegionalLedgers": "stepsaga.ledger.regions",
    "Ledger": "stepsaga.ledger.rules",
    "ActionScope": "stepsaga.ledger.tools",
    "ledgered_tool": "stepsaga.ledger.tools",
    "ExtraWrite": "stepsaga.ledger.writes",
    "Writes": "stepsaga.ledger.writes",
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
