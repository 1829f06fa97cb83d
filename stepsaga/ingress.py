"""Deprecated since 0.2 (deprecated-shim): use ``stepsaga.lambdas.ingress``.

``stepsaga.ingress.handler`` is kept for one release,
so functions deployed with it keep working.
"""

import warnings

from stepsaga.lambdas import ingress as handler

warnings.warn(
    "stepsaga.ingress.handler is deprecated: use stepsaga.lambdas.ingress",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["handler"]
