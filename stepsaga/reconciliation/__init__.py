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

from stepsaga._lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.reconciliation.automatic import Verdict, reconcile_action
    from stepsaga.reconciliation.callbacks import TaskSuccessSender, sfn_task_success
    from stepsaga.reconciliation.lookup import Absent, Found, Lookup
    from stepsaga.reconciliation.notify import (
        Notice,
        Notifier,
        NullNotifier,
        RecordingNotifier,
        SnsNotifier,
    )
    from stepsaga.reconciliation.operator import (
        Resolution,
        decision_of,
        parse_outcome,
        resolve,
        resume_waiting,
    )
    from stepsaga.reconciliation.reasons import AUTO_RESOLVER, Reason

__all__ = [
    "AUTO_RESOLVER",
    "Absent",
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
    "Verdict",
    "decision_of",
    "parse_outcome",
    "reconcile_action",
    "resolve",
    "resume_waiting",
    "sfn_task_success",
]

_WHERE = {
    "Verdict": "stepsaga.reconciliation.automatic",
    "reconcile_action": "stepsaga.reconciliation.automatic",
    "TaskSuccessSender": "stepsaga.reconciliation.callbacks",
    "sfn_task_success": "stepsaga.reconciliation.callbacks",
    "Absent": "stepsaga.reconciliation.lookup",
    "Found": "stepsaga.reconciliation.lookup",
    "Lookup": "stepsaga.reconciliation.lookup",
    "Notice": "stepsaga.reconciliation.notify",
    "Notifier": "stepsaga.reconciliation.notify",
    "NullNotifier": "stepsaga.reconciliation.notify",
    "RecordingNotifier": "stepsaga.reconciliation.notify",
    "SnsNotifier": "stepsaga.reconciliation.notify",
    "Resolution": "stepsaga.reconciliation.operator",
    "decision_of": "stepsaga.reconciliation.operator",
    "parse_outcome": "stepsaga.reconciliation.operator",
    "resolve": "stepsaga.reconciliation.operator",
    "resume_waiting": "stepsaga.reconciliation.operator",
    "AUTO_RESOLVER": "stepsaga.reconciliation.reasons",
    "Reason": "stepsaga.reconciliation.reasons",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
