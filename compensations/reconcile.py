"""Reconcile: the one Lambda function for every reconciliation event.

``reconcile`` (decide an uncertain or refused step automatically, else open an item),
``await_decision`` (park the case on the item's task token and notify), ``escalate`` and
``compensation_failed`` (record items). The rules live in ``stepsaga.reconciliation``; the
event handling in ``stepsaga.handlers.reconcile``.
"""

from __future__ import annotations

from stepsaga.handlers.entrypoint import lambda_entry

handler = lambda_entry("Reconcile")
