"""Deprecated since 0.2 (deprecated-shim): only ``stepsaga.reconciliation.overdue.handler`` is
kept here, for one release; the entry point is ``stepsaga.lambdas.overdue_check``."""
