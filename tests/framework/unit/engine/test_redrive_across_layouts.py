"""An execution started on the layout with ``Prepare``/``Completed`` and redriven after the
upgrade runs its own stored definition to the end; new executions run the new layout.

The old definition is the last compiled replacement-order machine that had ``Prepare``
(kept verbatim beside this file). The engine keeps each execution's definition by digest
(``stepsaga.engine._store``), as Step Functions redrives an execution on the definition it
started with; the task events are the same shape under both layouts, so one release's
handlers serve both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stepsaga.errors import TransientError
from stepsaga.workflow import compile as compile_saga
from tests.framework.conformance.engine.harness import compiled
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import entered
from tests.scenarios import replacement_order_input
from workflows.replacement_order import saga

OLD = compiled(
    json.loads((Path(__file__).parent / "replacement_order.with_prepare.asl.json").read_text())
)
NEW = compiled(compile_saga(saga))


class Step:
    """A task handler returning a ``StepResult``; ``broken`` makes it fail transiently."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.broken = False
        self.events: list[Any] = []

    def __call__(self, event: Any, context: Any) -> Any:
        self.events.append(event)
        if self.broken:
            raise TransientError("payments: throttled (429)")
        return {"action_key": self.key, "status": "COMPLETED", "result": {}, "replayed": False}


def test_an_old_execution_redriven_after_the_upgrade_finishes_on_its_own_definition(
    make_engine: MakeEngine,
) -> None:
    steps = {name: Step(name) for name in ("ReserveStock", "RefundPayment", "CreateShipment")}
    functions = {f"{name}Function": step for name, step in steps.items()}
    for name in ("ReleaseReservationFunction", "ReconcileFunction"):  # off this path
        functions[name] = Step(name)
    engine = make_engine(functions, time_scale=0)
    arn = engine.create_state_machine("replacement-order", OLD)
    case = replacement_order_input()
    steps["RefundPayment"].broken = True
    failed = engine.start_execution(arn, "acme-CASE-1001-r1", case)
    assert (failed["status"], failed["error"]) == ("FAILED", "TransientError")

    engine.update_state_machine(arn, NEW)  # the release: no Prepare, no Completed
    steps["RefundPayment"].broken = False
    redriven = engine.redrive_execution(failed["executionArn"])

    assert redriven["status"] == "SUCCEEDED"
    assert len(steps["ReserveStock"].events) == 1  # resumed at the failed state
    path = entered(engine, failed["executionArn"])
    assert (path[0], path[-2], path[-1]) == ("Prepare", "CreateShipment", "Completed")
    shipment = steps["CreateShipment"].events[-1]
    assert (shipment["tenant_id"], shipment["case_id"]) == (case["tenant_id"], case["case_id"])
    assert shipment["params"] == case["shipment"]  # read from ``$.case`` of the old layout
    assert json.loads(redriven["output"])["case"] == case

    fresh = engine.start_execution(arn, "acme-CASE-1002-r1", {**case, "case_id": "CASE-1002"})
    assert fresh["status"] == "SUCCEEDED"
    assert entered(engine, fresh["executionArn"]) == list(steps)
    assert steps["CreateShipment"].events[-1]["params"] == shipment["params"]
    assert steps["CreateShipment"].events[-1].keys() == shipment.keys()  # same event shape
