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

from stepsaga.workflow import compile as compile_saga
from tests.conformance.engine.conftest import deviates
from tests.conformance.engine.harness import (
    Err,
    Ok,
    Reference,
    Scripts,
    Trace,
    compiled,
    run_engine,
)
from tests.deviations import LOCALSTACK_SINGLE_MATCH
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
