"""The compiled multi-warehouse saga (a per-item step and a parallel group) on the embedded
engine and on moto's and LocalStack's interpreters (``reference``): same status, error,
output, and the same states entered and functions called, counted (branches and items run
concurrently on both)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from stepsaga import Compensate, EffectClass, Escalate, Parallel, Saga, Step
from stepsaga.workflow import compile as compile_saga
from tests.deviations import LOCALSTACK_SINGLE_MATCH
from tests.framework.conformance.engine.conftest import deviates
from tests.framework.conformance.engine.harness import (
    Err,
    Ok,
    Reference,
    Scripts,
    Trace,
    compiled,
    run_engine,
)
from tests.multi_warehouse_scenarios import multi_warehouse_input
from workflows.multi_warehouse import saga

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SAGA = compiled(compile_saga(saga))


def done(key: str) -> Ok:
    return Ok({"action_key": key, "status": "COMPLETED", "result": {"id": key}, "replayed": False})


HAPPY: Scripts = {
    "ReserveLineFunction": [done("reserve")],
    "RefundPaymentFunction": [done("refund")],
    "CreateShipmentFunction": [done("ship")],
    "ReleaseLineFunction": [done("release")],
    "ReconcileFunction": [Ok({"outcome": "undecided", "item_id": "recon-1"})],
}


def unordered(trace: Trace) -> dict[str, Any]:
    return {
        "status": trace.status,
        "error": trace.error,
        "output": trace.output,
        "entered": Counter(trace.entered),
        "calls": Counter(json.dumps(call, sort_keys=True) for call in trace.calls),
    }


def both(reference: Reference, tmp_path: Path, script: Scripts) -> Trace:
    ours = run_engine(tmp_path, SAGA, script, multi_warehouse_input())
    theirs = reference.run(SAGA, script, multi_warehouse_input(), ours)
    assert unordered(ours) == unordered(theirs)
    return ours


def test_happy_path(reference: Reference, tmp_path: Path) -> None:
    trace = both(reference, tmp_path, HAPPY)
    assert trace.status == "SUCCEEDED"
    assert Counter(trace.entered)["ReserveLine"] == 3


@deviates(localstack=LOCALSTACK_SINGLE_MATCH)
def test_a_rejected_branch_undoes_every_line_and_escalates_the_other_branch(
    reference: Reference, tmp_path: Path
) -> None:
    script = {**HAPPY, "CreateShipmentFunction": [Err("BusinessRejectedError", "rejected")]}
    trace = both(reference, tmp_path, script)
    assert (trace.status, trace.error) == ("FAILED", "Saga.Compensated")
    entered = Counter(trace.entered)
    assert (entered["ReleaseLine"], entered["EscalateRefundPayment"]) == (3, 1)
    assert entered["EscalateCreateShipment"] == 0


# --- a group first: no top-level step wrote ``$.results`` before it -------------------

UNDO_FIRST = Compensate("UndoFirst", "undo_first", EffectClass.KEYED_WRITE)
REFER = Escalate("a person decides")

GROUP_FIRST = Saga(
    "group-first",
    [
        Parallel(
            "Both",
            [
                [
                    Step("First", "first", EffectClass.KEYED_WRITE, on_later_failure=UNDO_FIRST),
                    Step("Second", "second", EffectClass.KEYED_WRITE, on_later_failure=REFER),
                ],
                [Step("Other", "other", EffectClass.KEYED_WRITE, on_later_failure=REFER)],
            ],
        ),
        Step("Last", "last", EffectClass.KEYED_WRITE, on_later_failure=REFER),
    ],
)
GROUP_FIRST_ASL = compiled(compile_saga(GROUP_FIRST))
GROUP_FIRST_HAPPY: Scripts = {
    "FirstFunction": [done("first")],
    "SecondFunction": [done("second")],
    "OtherFunction": [done("other")],
    "LastFunction": [done("last")],
    "UndoFirstFunction": [done("undo-first")],
    "ReconcileFunction": [Ok({"outcome": "undecided", "item_id": "recon-1"})],
}
CASE = {
    "tenant_id": "acme",
    "case_id": "CASE-7",
    "approval": {"revision": 1, "approved_at": "2026-11-29T09:30:00Z"},
}


def both_group_first(reference: Reference, tmp_path: Path, script: Scripts) -> Trace:
    ours = run_engine(tmp_path, GROUP_FIRST_ASL, script, CASE)
    theirs = reference.run(GROUP_FIRST_ASL, script, CASE, ours)
    assert unordered(ours) == unordered(theirs)
    return ours


def test_a_group_first_runs_and_the_last_task_ends_it(reference: Reference, tmp_path: Path) -> None:
    trace = both_group_first(reference, tmp_path, GROUP_FIRST_HAPPY)
    assert (trace.status, trace.error) == ("SUCCEEDED", None)
    assert trace.entered[-1] == "Last"
    assert "Completed" not in trace.entered


@deviates(localstack=LOCALSTACK_SINGLE_MATCH)
@pytest.mark.parametrize(
    ("rejected", "ends"), [("First", "BothBranch1Rejected"), ("Second", "BothBranch1RejectedLater")]
)
def test_a_branch_rejected_at_its_first_or_a_later_step_unwinds(
    reference: Reference, tmp_path: Path, rejected: str, ends: str
) -> None:
    script = {**GROUP_FIRST_HAPPY, f"{rejected}Function": [Err("BusinessRejectedError", "no")]}
    trace = both_group_first(reference, tmp_path, script)
    assert (trace.status, trace.error) == ("FAILED", "Saga.Compensated")
    entered = Counter(trace.entered)
    assert entered[ends] == 1
    assert entered["EscalateOther"] == 1  # the other branch completed: a person is told
    assert entered["UndoFirst"] == (1 if rejected == "Second" else 0)  # only what completed
