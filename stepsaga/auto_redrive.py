"""Deprecated since 0.2 (deprecated-shim): use ``stepsaga.lambdas.auto_redrive``.

``stepsaga.auto_redrive.handler`` is kept for one release,
so functions deployed with it keep working.
"""

import warnings

from stepsaga.lambdas import auto_redrive as handler

warnings.warn(
    "stepsaga.auto_redrive.handler is deprecated: use stepsaga.lambdas.auto_redrive",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["handler"]
