"""Backends the CLI drives: the embedded engine (``local.py``) and AWS (``aws/``).

``base.py`` is the contract (:class:`SagaBackend`), ``views.py`` what ``--json`` prints,
``outcome.py`` the one rule naming what became of a case, ``naming.py`` the execution
name of a case, ``progress.py`` the live notices, ``assemble.py`` the view builders both
backends share.
"""

from typing import TYPE_CHECKING

from stepsaga.backends._assemble import CaseIdentity, execution_view, item_view, planned_actions
from stepsaga.backends._base import SagaBackend, SupportsRetryDelays
from stepsaga.backends._naming import execution_name
from stepsaga.backends._outcome import OutcomeFacts, derive_outcome
from stepsaga.backends._progress import (
    Progress,
    ProgressKind,
    ProgressListener,
    entered_states,
    from_history_event,
)
from stepsaga.backends._views import (
    CancelView,
    CaseOutcome,
    ExecutionView,
    ReconFilter,
    ReconItemView,
    ReconPage,
    ResolutionView,
    StepKind,
    StepView,
    to_json,
)

if TYPE_CHECKING:
    from stepsaga.backends._local import LocalBackend

__all__ = [
    "CancelView",
    "CaseIdentity",
    "CaseOutcome",
    "ExecutionView",
    "LocalBackend",
    "OutcomeFacts",
    "Progress",
    "ProgressKind",
    "ProgressListener",
    "ReconFilter",
    "ReconItemView",
    "ReconPage",
    "ResolutionView",
    "SagaBackend",
    "StepKind",
    "StepView",
    "SupportsRetryDelays",
    "derive_outcome",
    "entered_states",
    "execution_name",
    "execution_view",
    "from_history_event",
    "item_view",
    "planned_actions",
    "to_json",
]


def __getattr__(name: str) -> object:
    """``LocalBackend`` loads on first use (it imports the engine)."""
    if name == "LocalBackend":
        from stepsaga.backends._local import LocalBackend

        return LocalBackend
    raise AttributeError(f"module 'stepsaga.backends' has no attribute {name!r}")
