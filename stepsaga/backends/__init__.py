"""The operator's verbs, on the embedded engine (:class:`LocalBackend`) or the deployed
stack (:class:`AwsBackend`), both a :class:`SagaBackend`.

The views are what ``--json`` prints (:func:`to_json`): :class:`ExecutionView`,
:class:`CaseOutcome` (what became of a case), :class:`ReconItemView`; :class:`ReconFilter`
selects items and :class:`ReconOutcome` is a person's decision on one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.backends._aws.backend import AwsBackend
    from stepsaga.backends._base import SagaBackend
    from stepsaga.backends._local import LocalBackend
    from stepsaga.backends._views import (
        CaseOutcome,
        ExecutionView,
        ReconFilter,
        ReconItemView,
        to_json,
    )
    from stepsaga.ledger._models import ReconOutcome

#: Where each public name is defined; loaded on first use (PEP 562).
_WHERE = {
    "AwsBackend": "stepsaga.backends._aws.backend",
    "SagaBackend": "stepsaga.backends._base",
    "LocalBackend": "stepsaga.backends._local",
    "CaseOutcome": "stepsaga.backends._views",
    "ExecutionView": "stepsaga.backends._views",
    "ReconFilter": "stepsaga.backends._views",
    "ReconItemView": "stepsaga.backends._views",
    "to_json": "stepsaga.backends._views",
    "ReconOutcome": "stepsaga.ledger._models",
}

#: The same names (a literal, so linters and type checkers read it; a test keeps the
#: three statements equal).
__all__ = [
    "AwsBackend",
    "CaseOutcome",
    "ExecutionView",
    "LocalBackend",
    "ReconFilter",
    "ReconItemView",
    "ReconOutcome",
    "SagaBackend",
    "to_json",
]

if not TYPE_CHECKING:  # so mypy sees only the names imported above
    __getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return __all__
