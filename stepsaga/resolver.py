"""Deprecated since 0.2 (deprecated-shim): use ``stepsaga.lambdas.resolver``.

``stepsaga.resolver.handler`` is kept for one release,
so functions deployed with it keep working.
"""

import warnings

from stepsaga.lambdas import resolver as handler

warnings.warn(
    "stepsaga.resolver.handler is deprecated: use stepsaga.lambdas.resolver",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["handler"]
