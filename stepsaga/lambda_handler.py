"""Deprecated since 0.2 (deprecated-shim): use ``stepsaga.lambdas.step``.

``stepsaga.lambda_handler.handler`` is kept for one release,
so functions deployed with it keep working.
"""

from stepsaga.lambdas import _deprecated_path

handler = _deprecated_path("stepsaga.lambda_handler.handler", "step")

__all__ = ["handler"]
