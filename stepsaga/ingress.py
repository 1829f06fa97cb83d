"""Deprecated since 0.2 (deprecated-shim): use ``stepsaga.lambdas.ingress``.

``stepsaga.ingress.handler`` is kept for one release,
so functions deployed with it keep working.
"""

from stepsaga.lambdas import _deprecated_path

handler = _deprecated_path("stepsaga.ingress.handler", "ingress")

__all__ = ["handler"]
