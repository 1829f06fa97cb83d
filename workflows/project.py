"""The reference app as a ``stepsaga.Project`` made in Python: what its tests and its chaos
harness hand to ``LocalBackend`` (the CLI finds the same project in ``pyproject.toml``)."""

from __future__ import annotations

from typing import Any

from services.dependencies import ReferenceDependencies
from stepsaga import Project
from workflows.multi_warehouse import saga as multi_warehouse
from workflows.replacement_order import saga


def reference_project(**options: Any) -> Project:
    """The replacement-order saga (the default) and the multi-warehouse one over the
    simulated services; ``options`` are ``ReferenceDependencies``' (``faults``, ``crash``,
    ``default_stock``)."""
    return Project.of(
        saga,
        multi_warehouse,
        dependencies=ReferenceDependencies(**options),
        default=saga.name,
    )
