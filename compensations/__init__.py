"""The replacement-order saga's compensations.

``release_reservation`` undoes a confirmed reservation under its own key (derived from the
reservation's action key). Reconciliation is stepsaga's built-in reconciler: it uses each
handler's ``lookup`` to decide an uncertain step or a failed release before a person does.
"""
