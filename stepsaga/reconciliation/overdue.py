"""Deprecated since 0.2 (deprecated-shim): use ``stepsaga.lambdas.overdue_check``.

``stepsaga.reconciliation.overdue.handler`` is kept for one release,
so functions deployed with it keep working.
"""

from stepsaga.lambdas import _deprecated_path

handler = _deprecated_path("stepsaga.reconciliation.overdue.handler", "overdue_check")

__all__ = ["handler"]
