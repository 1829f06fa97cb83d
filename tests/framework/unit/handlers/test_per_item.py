"""A per-item step's handler keys each item's action by its item (``op#item``), refuses an
event that leaves the item out, and a plain step's handler refuses one that names one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reliability.simulated import simulated_deps
from stepsaga._handlers import build_handlers
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.errors import InvalidInputError
from tests.framework.unit.handlers.helpers import NOW, context
from tests.multi_warehouse_scenarios import multi_warehouse_input
from workflows.multi_warehouse import saga


@pytest.fixture
def handlers(tmp_path: Path) -> Any:
    deps = simulated_deps(StateHome(tmp_path / "home"), clock=ManualClock(NOW))
    yield build_handlers(deps, saga)
    deps.close()


def event(step: str, operation: str, params: Any, **extra: Any) -> dict[str, Any]:
    case = multi_warehouse_input()
    return {
        "kind": "step",
        "saga": saga.name,
        "tenant_id": case["tenant_id"],
        "case_id": case["case_id"],
        "revision": 1,
        "approved_at": case["approval"]["approved_at"],
        "step": step,
        "operation": operation,
        "effect": "keyed_write",
        "params": params,
        "execution": {"name": "x", "state": step, "retry_count": 0},
        **extra,
    }


def test_each_item_has_its_own_action_key(handlers: Any) -> None:
    lines = multi_warehouse_input()["lines"]
    keys = {
        handlers["ReserveLine"](
            event("ReserveLine", "reserve_line", line, item=line["line_id"]), context()
        )["action_key"]
        for line in lines
    }
    assert keys == {f"acme:CASE-2001:r1:reserve_line#{line['line_id']}" for line in lines}


def test_a_number_as_item_key_is_its_text(handlers: Any) -> None:
    line = multi_warehouse_input()["lines"][0]
    result = handlers["ReserveLine"](event("ReserveLine", "reserve_line", line, item=7), context())
    assert result["action_key"].endswith("reserve_line#7")


@pytest.mark.parametrize(
    ("step", "operation", "params", "extra", "message"),
    [
        ("ReserveLine", "reserve_line", None, {}, "item: ReserveLine runs once per item of lines"),
        ("RefundPayment", "refund_payment", "refund", {"item": "L1"}, "not a per-item step"),
        ("ReserveLine", "reserve_line", None, {"item": "L 1"}, "item"),
    ],
)
def test_an_item_must_match_the_step(
    handlers: Any, step: str, operation: str, params: Any, extra: dict[str, Any], message: str
) -> None:
    case = multi_warehouse_input()
    values = case["lines"][0] if params is None else case[params]
    with pytest.raises(InvalidInputError) as raised:
        handlers[step](event(step, operation, values, **extra), context())
    assert message in str(raised.value)
