"""Deprecated since 0.2 (deprecated-shim): use ``stepsaga.lambdas.step``.

``stepsaga.lambda_handler.handler`` is kept for one release,
so functions deployed with it keep working.
"""

import warnings

from stepsaga.lambdas import step as handler

warnings.warn(
    "stepsaga.lambda_handler.handler is deprecated: use stepsaga.lambdas.step",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["handler"]
