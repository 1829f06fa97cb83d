"""Deprecated since 0.2 (deprecated-shim): use ``stepsaga.lambdas.audit_copy``.

``stepsaga.audit_copy.handler`` is kept for one release,
so functions deployed with it keep working.
"""

from stepsaga.lambdas import _deprecated_path

handler = _deprecated_path("stepsaga.audit_copy.handler", "audit_copy")

__all__ = ["handler"]
