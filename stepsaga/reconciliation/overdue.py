"""Deprecated since 0.2 (deprecated-shim): use ``stepsaga.lambdas.overdue_check``.

``stepsaga.reconciliation.overdue.handler`` is kept for one release,
so functions deployed with it keep working.
"""

import warnings

from stepsaga.lambdas import overdue_check as handler

warnings.warn(
    "stepsaga.reconciliation.overdue.handler is deprecated: use stepsaga.lambdas.overdue_check",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["handler"]
