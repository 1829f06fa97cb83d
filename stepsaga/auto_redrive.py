"""Deprecated since 0.2 (deprecated-shim): use ``stepsaga.lambdas.auto_redrive``.

``stepsaga.auto_redrive.handler`` is kept for one release,
so functions deployed with it keep working.
"""

from stepsaga.lambdas import _deprecated_path

handler = _deprecated_path("stepsaga.auto_redrive.handler", "auto_redrive")

__all__ = ["handler"]
