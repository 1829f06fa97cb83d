"""Every Lambda entry point stepsaga deploys, in one module.

The stack's functions name ``stepsaga.lambdas.<name>``; each entry point loads on first use,
so a function imports only its own code:

- ``step``: every saga function (steps, compensations, the reconciler), chosen by the
  function's ``STEPSAGA_SAGA``/``STEPSAGA_FUNCTION`` environment;
- ``ingress``: starts one execution per approved case sent to the ingress queue;
- ``auto_redrive``: redrives failed executions, with backoff, from the auto-redrive queue;
- ``overdue_check``: the schedule that notifies reconciliation items a person has not
  decided in time;
- ``audit_copy``: the ledger stream's write-once copy of every audit record;
- ``resolver``: operators' decisions (resolve, stop, redrive) through its function URL.

The paths of before (``stepsaga.lambda_handler.handler``, ``stepsaga._aws.ingress.handler``,
``stepsaga._aws.auto_redrive.handler``, ``stepsaga._aws.audit_copy.handler``,
``stepsaga._aws.resolver.handler``, ``stepsaga._reconciliation.overdue.handler``) keep working
for one release (see the CHANGELOG).
"""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING, Any

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga._aws.audit_copy import handler as audit_copy
    from stepsaga._aws.auto_redrive import handler as auto_redrive
    from stepsaga._aws.ingress import handler as ingress
    from stepsaga._aws.resolver import handler as resolver
    from stepsaga._handlers.entrypoint import handler as step
    from stepsaga._reconciliation.overdue import handler as overdue_check

_WHERE = {
    "audit_copy": "stepsaga._aws.audit_copy:handler",
    "auto_redrive": "stepsaga._aws.auto_redrive:handler",
    "ingress": "stepsaga._aws.ingress:handler",
    "overdue_check": "stepsaga._reconciliation.overdue:handler",
    "resolver": "stepsaga._aws.resolver:handler",
    "step": "stepsaga._handlers.entrypoint:handler",
}

#: The same names (a literal, so linters and type checkers read it; a test keeps the
#: three statements equal).
__all__ = ["audit_copy", "auto_redrive", "ingress", "overdue_check", "resolver", "step"]


if not TYPE_CHECKING:  # so mypy sees only the names imported above
    __getattr__ = lazy_getattr(__name__, _WHERE)


def _deprecated_path(old: str, entry: str) -> Any:
    """The entry point ``entry``, for a shim at its old handler path ``old``: warns once,
    where the shim is imported (Lambda's runtime imports it at a cold start)."""
    warnings.warn(f"{old} is deprecated: use {__name__}.{entry}", DeprecationWarning, 3)
    return getattr(sys.modules[__name__], entry)


def __dir__() -> list[str]:
    return __all__
