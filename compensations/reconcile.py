"""Reconcile: the one Lambda function for every reconciliation event.

``reconcile`` and ``compensation_failed`` (decide an uncertain or refused step or
compensation automatically, else open an item), ``await_decision`` (park the case on the
item's task token and notify), ``escalate`` (record an item). The rules live in
``stepsaga.reconciliation``; the event handling in ``stepsaga.handlers.reconcile``.
"""

from __future__ import annotations

from stepsaga.handlers.entrypoint import lambda_entry

handler = lambda_entry("Reconcile")
