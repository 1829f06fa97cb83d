"""Deprecated since 0.2 (deprecated-shim): use ``stepsaga.lambdas.resolver``.

``stepsaga.resolver.handler`` is kept for one release,
so functions deployed with it keep working.
"""

from stepsaga.lambdas import _deprecated_path

handler = _deprecated_path("stepsaga.resolver.handler", "resolver")

__all__ = ["handler"]
