"""Lambda handlers of the compensations and of reconciliation.

``release_reservation`` undoes a confirmed reservation under its own key (derived from the
reservation's action key); ``reconcile`` is the one function for every reconciliation event
(``reconcile``, ``await_decision``, ``escalate``, ``compensation_failed`` — a failed release
is reconciled automatically like a forward step before it is left to a person).
"""
