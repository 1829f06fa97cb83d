"""Reconciliation: deciding actions whose outcome the saga could not establish.

* ``automatic.reconcile_action`` — the rules: look downstream and resolve what the evidence
  decides (``stepsaga:auto``), open an item for a person otherwise.
* ``operator.resolve`` / ``resume_waiting`` — the API ``stepsaga recon resolve`` calls:
  ledger record and item in one transaction, then resume the waiting case.
* ``questions`` — one item per (action key, reason), asked again after an answer.
* ``notify`` — ``Notifier`` (SNS on AWS, null/recording locally).
* ``callbacks`` — ``TaskSuccessSender`` and the boto3 adapter.

Items themselves live in the ledger (``Ledger.open_item`` … ``resolve_item``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga._reconciliation.automatic import AutoVerdict, reconcile_action
    from stepsaga._reconciliation.callbacks import TaskSuccessSender, sfn_task_success
    from stepsaga._reconciliation.lookup import Absent, Found, Lookup
    from stepsaga._reconciliation.notify import (
        Notice,
        Notifier,
        NullNotifier,
        RecordingNotifier,
        SnsNotifier,
    )
    from stepsaga._reconciliation.operator import (
        Resolution,
        decision_of,
        parse_outcome,
        resolve,
        resume_waiting,
    )
    from stepsaga._reconciliation.reasons import AUTO_RESOLVER, Reason

__all__ = [
    "AUTO_RESOLVER",
    "Absent",
    "AutoVerdict",
    "Found",
    "Lookup",
    "Notice",
    "Notifier",
    "NullNotifier",
    "Reason",
    "RecordingNotifier",
    "Resolution",
    "SnsNotifier",
    "TaskSuccessSender",
    "decision_of",
    "parse_outcome",
    "reconcile_action",
    "resolve",
    "resume_waiting",
    "sfn_task_success",
]

_WHERE = {
    "AutoVerdict": "stepsaga._reconciliation.automatic",
    "reconcile_action": "stepsaga._reconciliation.automatic",
    "TaskSuccessSender": "stepsaga._reconciliation.callbacks",
    "sfn_task_success": "stepsaga._reconciliation.callbacks",
    "Absent": "stepsaga._reconciliation.lookup",
    "Found": "stepsaga._reconciliation.lookup",
    "Lookup": "stepsaga._reconciliation.lookup",
    "Notice": "stepsaga._reconciliation.notify",
    "Notifier": "stepsaga._reconciliation.notify",
    "NullNotifier": "stepsaga._reconciliation.notify",
    "RecordingNotifier": "stepsaga._reconciliation.notify",
    "SnsNotifier": "stepsaga._reconciliation.notify",
    "Resolution": "stepsaga._reconciliation.operator",
    "decision_of": "stepsaga._reconciliation.operator",
    "parse_outcome": "stepsaga._reconciliation.operator",
    "resolve": "stepsaga._reconciliation.operator",
    "resume_waiting": "stepsaga._reconciliation.operator",
    "AUTO_RESOLVER": "stepsaga._reconciliation.reasons",
    "Reason": "stepsaga._reconciliation.reasons",
}

if not TYPE_CHECKING:  # so mypy sees only the names imported above
    __getattr__ = lazy_getattr(__name__, _WHERE)
