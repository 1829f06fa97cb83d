"""``cancel``'s plan: which completed steps are undone, in which order, and which deployed
function each undo goes to."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from stepsaga import Compensate, EffectClass
from stepsaga.backends._assemble import CaseIdentity
from stepsaga.backends._cancel import deployed_functions, undo_functions, undo_plan
from stepsaga.ledger import Record, Status
from stepsaga.workflow._compiler import compile_saga
from stepsaga.workflow._saga import RECONCILER_FUNCTION
from workflows.multi_warehouse import saga as multi_warehouse
from workflows.replacement_order import saga as replacement_order

EXAMPLES = Path(__file__).parents[4] / "examples"
AT = datetime(2026, 12, 1, tzinfo=UTC)


def _record(key: str, status: Status) -> Record:
    return Record(
        key=key,
        tenant_id="acme",
        case_id=key.split(":")[1],
        revision=1,
        operation=key.rsplit(":", 1)[-1],
        effect=EffectClass.KEYED_WRITE,
        digest="d",
        status=status,
        owner="o",
        lease_expires_at=None,
        attempts=1,
        result={},
        error=None,
        reference=None,
        cost=None,
        created_at=AT,
        updated_at=AT,
        expires_at=AT,
    )


def test_completed_steps_are_undone_last_first_and_the_others_are_left() -> None:
    case = CaseIdentity.from_input(json.loads((EXAMPLES / "case-clean.json").read_text()))
    records = {
        case.key("reserve_stock"): _record(case.key("reserve_stock"), Status.COMPLETED),
        case.key("refund_payment"): _record(case.key("refund_payment"), Status.COMPLETED),
        case.key("create_shipment"): _record(case.key("create_shipment"), Status.UNKNOWN),
    }
    plan = undo_plan(replacement_order, case, records)
    assert [p.step.name for p in plan] == ["RefundPayment", "ReserveStock"]
    assert plan[1].params == case.document["reserve"]


def test_each_item_of_a_per_item_step_is_undone_in_reverse() -> None:
    data = json.loads((EXAMPLES / "case-multi-warehouse.json").read_text())
    case = CaseIdentity.from_input(data)
    lines = [line["line_id"] for line in data["lines"]]
    keys = [case.key(f"reserve_line#{line}") for line in lines]
    plan = undo_plan(multi_warehouse, case, {k: _record(k, Status.COMPLETED) for k in keys})
    assert [p.item for p in plan] == lines[::-1]
    assert [p.params for p in plan] == data["lines"][::-1]


def test_the_deployed_definition_names_each_undo_function() -> None:
    for saga, compensations in (
        (replacement_order, {"ReleaseReservation"}),
        (multi_warehouse, {"ReleaseLine"}),
    ):
        functions = deployed_functions(compile_saga(saga))
        assert compensations | {RECONCILER_FUNCTION} <= set(functions)
        assert functions[RECONCILER_FUNCTION] == "${ReconcileFunctionArn}"


def test_the_undo_functions_are_exactly_the_ones_an_undo_plan_can_invoke() -> None:
    """What the resolver's role may invoke (``undo_functions``) is each compensation a step
    declares, plus the reconciler where a step escalates: never a forward step."""
    for saga in (replacement_order, multi_warehouse):
        expected = {
            step.on_later_failure.name
            if isinstance(step.on_later_failure, Compensate)
            else RECONCILER_FUNCTION
            for step in saga.all_steps
            if step.has_effect
        }
        undone = undo_functions(compile_saga(saga))
        assert undone == expected, saga.name
        assert not undone & {step.name for step in saga.all_steps}
