"""Deprecated since 0.2 (deprecated-shim): use ``stepsaga.lambdas.audit_copy``.

``stepsaga.audit_copy.handler`` is kept for one release,
so functions deployed with it keep working.
"""

import warnings

from stepsaga.lambdas import audit_copy as handler

warnings.warn(
    "stepsaga.audit_copy.handler is deprecated: use stepsaga.lambdas.audit_copy",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["handler"]
