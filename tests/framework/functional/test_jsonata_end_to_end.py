"""The reference sagas in JSONata, end to end on the embedded backend: the real handlers,
the ledger and the simulated services see the same calls as with JSONPath, and each case
ends the same way with the same effects (replacement order; multi-warehouse, with its
parallel group and per-item step)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from services import load_faults, open_simulation
from services.dependencies import ReferenceDependencies
from stepsaga import Project
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.backends._local import LocalBackend
from stepsaga.backends._views import CaseOutcome
from stepsaga.testing._history import History
from tests.framework.unit.handlers.helpers import NOW
from workflows import multi_warehouse
from workflows.case import load_case
from workflows.replacement_order import saga

EXAMPLES = Path(__file__).parents[3] / "examples"
CASES = [
    ("case-clean.json", None),
    ("case-shipment-rejected.json", "faults-shipment-rejected.json"),
    ("case-lost-refund.json", "faults-lost-refund-response.json"),
    ("case-shipment-rejected.json", "faults-release-reply-lost.json"),
    ("case-multi-warehouse.json", None),
    ("case-multi-warehouse.json", "faults-multi-warehouse-shipment-rejected.json"),
    ("case-multi-warehouse.json", "faults-multi-warehouse-line-uncertain.json"),
]


Ending = tuple[str, str | None, CaseOutcome | None, tuple[str, ...], dict[str, int]]


def run(tmp_path: Path, language: str, case_file: str, faults_file: str | None) -> Ending:
    home = StateHome(tmp_path / language)
    clock = ManualClock(NOW)
    chosen, case = (
        (multi_warehouse.saga, multi_warehouse.load_case(EXAMPLES / case_file))
        if "multi-warehouse" in case_file
        else (saga, load_case(EXAMPLES / case_file))
    )
    project = Project.of(
        dataclasses.replace(chosen, query_language=language),
        dependencies=ReferenceDependencies(),
    )
    faults = load_faults(EXAMPLES / faults_file) if faults_file else None
    with LocalBackend(home, project, clock=clock) as backend:
        done = backend.start(case, faults=faults, time_scale=0)
        # Branches and iterations run on threads: which states ran, not their interleaving.
        path = tuple(sorted(History.of(backend.history(case.case_id)).path))
    effects = open_simulation(home, clock=clock).effects(case_id=case.case_id)
    counted = Counter(str(effect.operation) for effect in effects)
    return (done.status, done.error, done.outcome, path, dict(counted))


@pytest.mark.parametrize(("case_file", "faults_file"), CASES)
def test_the_jsonata_saga_ends_like_the_jsonpath_one(
    tmp_path: Path, case_file: str, faults_file: str | None
) -> None:
    jsonata = run(tmp_path, "JSONata", case_file, faults_file)
    assert jsonata == run(tmp_path, "JSONPath", case_file, faults_file)
    assert jsonata[3]  # it ran states, the same ones
