"""Parallel groups and per-item steps: how they are declared, checked and compiled."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepsaga import Compensate, EffectClass, Escalate, ForEach, Parallel, Saga, Step
from stepsaga.engine import load
from stepsaga.errors import COMPENSATE, InvalidInputError, SagaDefinitionError, names
from stepsaga.workflow import compile
from stepsaga.workflow._names import ITEM_ID, item_operation
from workflows.multi_warehouse import Line, MultiWarehouseCase
from workflows.multi_warehouse import saga as multi_warehouse

GOLDEN = Path(__file__).parent / "golden" / "multi_warehouse.asl.json"


def _step(name: str, op: str, *, undo: bool = True) -> Step:
    return Step(
        name,
        operation=op,
        effect=EffectClass.KEYED_WRITE,
        on_later_failure=Compensate(f"Undo{name}", operation=f"undo_{op}")
        if undo
        else Escalate("a person decides"),
    )


def _each(**changes: Any) -> ForEach:
    fields: dict[str, Any] = {
        "name": "DoItems",
        "items": "items",
        "item_key": "id",
        "step": _step("DoItem", "do_item"),
    }
    fields.update(changes)
    return ForEach(**fields)


@pytest.fixture(scope="module")
def definition() -> dict[str, Any]:
    return compile(multi_warehouse)


def test_multi_warehouse_matches_the_golden_file(definition: dict[str, Any]) -> None:
    """Review a change as a diff; accept it with STEPSAGA_UPDATE_GOLDEN=1."""
    text = json.dumps(definition, indent=2) + "\n"
    if os.environ.get("STEPSAGA_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.read_text(encoding="utf-8") == text


def test_the_engine_loads_what_the_compiler_emits(definition: dict[str, Any]) -> None:
    loaded = load(definition)
    tasks = {task.name for task in loaded.task_states()}
    assert {"ReserveLine", "RefundPayment", "CreateShipment", "ReleaseLine"} <= tasks


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Parallel("G", [[_step("A", "a")]]), "needs at least two branches"),
        (lambda: Parallel("G", [[_step("A", "a")], []]), "branch 2: must be a non-empty list"),
        (lambda: Parallel("G", _step("A", "a")), "branches must be a list of lists"),  # type: ignore[arg-type]
        (lambda: Parallel("g", [[_step("A", "a")], [_step("B", "b")]]), "PascalCase"),
        (lambda: _each(item_key=None), "declare how an item is identified"),
        (lambda: _each(stable_index=True), "declare how an item is identified"),
        (lambda: _each(item_key="a.b"), "item_key must be a field name"),
        (lambda: _each(items="items[0]"), "items must be a dotted path"),
        (lambda: _each(max_concurrency=0), "max_concurrency must be between 1 and 40"),
        (lambda: _each(max_concurrency=41), "max_concurrency must be between 1 and 40"),
        (
            lambda: _each(
                step=Step("DoItem", operation="do_item", effect=EffectClass.READ, params="x")
            ),
            "takes the item as its params",
        ),
        (
            lambda: Saga(
                "s", [_each(), Parallel("G", [[_step("A", "do_item")], [_step("B", "b")]])]
            ),
            "operation 'do_item' is used by DoItem and A",
        ),
        (
            lambda: Saga("s", [_step("DoItems", "x"), _each()]),
            "state name 'DoItems' is used twice",
        ),
    ],
)
def test_declaration_messages(build: Callable[[], object], message: str) -> None:
    with pytest.raises(SagaDefinitionError) as raised:
        build()
    assert message in str(raised.value)


def test_the_item_key_must_be_a_required_field_of_the_items() -> None:
    with pytest.raises(SagaDefinitionError) as raised:
        Saga("s", [_each(items="lines", item_key="nope")], input_model=MultiWarehouseCase)
    assert "Line needs a required field 'nope' (the item key)" in str(raised.value)
    with pytest.raises(SagaDefinitionError) as raised:
        Saga("s", [_each(items="refund")], input_model=MultiWarehouseCase)
    assert "must be a list of pydantic models" in str(raised.value)


def test_a_per_item_step_gets_its_items_model() -> None:
    step = multi_warehouse.step("ReserveLine")
    assert step.params_type is Line
    assert multi_warehouse.per_item("ReserveLine") is multi_warehouse.steps[0]
    assert multi_warehouse.per_item("RefundPayment") is None
    assert [s.name for s in multi_warehouse.all_steps] == [
        "ReserveLine",
        "RefundPayment",
        "CreateShipment",
    ]


def test_the_map_iterates_the_case_list_keyed_by_the_declared_field(
    definition: dict[str, Any],
) -> None:
    state = definition["States"]["ReserveLines"]
    assert state["Type"] == "Map"
    assert state["ItemsPath"] == "$$.Execution.Input.lines"
    assert state["MaxConcurrency"] == 2
    assert state["ItemSelector"]["key.$"] == "$$.Map.Item.Value.line_id"
    task = state["ItemProcessor"]["States"]["ReserveLine"]
    payload = task["Parameters"]["Payload"]
    assert (payload["params.$"], payload["item.$"]) == ("$.item", "$.key")
    rejected = task["Catch"][0]
    assert rejected["ErrorEquals"] == names(COMPENSATE)
    assert rejected["Next"] == "ReserveLineItemRejected"


def test_a_stable_index_is_used_only_when_declared() -> None:
    saga = Saga("s", [_each(item_key=None, stable_index=True), _step("Last", "last")])
    state = compile(saga)["States"]["DoItems"]
    assert state["ItemSelector"]["key.$"] == "$$.Map.Item.Index"


def test_a_rejected_branch_ends_its_branch_and_never_fails_the_others(
    definition: dict[str, Any],
) -> None:
    group = definition["States"]["RefundAndShip"]
    # Transient errors exhausted inside fail the group, so the execution (redrivable).
    assert "Catch" not in group
    assert "Retry" not in group
    for i, branch in enumerate(group["Branches"]):
        ends = {n: s for n, s in branch["States"].items() if s.get("End")}
        assert set(ends) == {
            f"RefundAndShipBranch{i + 1}Done",
            f"RefundAndShipBranch{i + 1}Rejected",
        }
        assert all(s["Type"] == "Pass" for s in ends.values())
    outcome = definition["States"]["RefundAndShipOutcome"]
    assert outcome["Choices"][0]["Variable"] == "$.groups.RefundAndShip.failures[0]"
    assert definition["States"]["RefundAndShipRejected"]["ResultPath"] == "$.failure"


def test_the_way_back_undoes_latest_first_and_each_member_only_if_it_completed(
    definition: dict[str, Any],
) -> None:
    states = definition["States"]
    chain = []
    state = states["RefundAndShipRejected"]["Next"]
    while state not in ("Compensated", "CompensationFailed"):
        chain.append(state)
        node = states[state]
        state = node["Default"] if node["Type"] == "Choice" else node["Next"]
    assert chain == [
        "WasCreateShipmentApplied",
        "WasRefundPaymentApplied",
        "UndoReserveLineItems",
        "UndoReserveLineOutcome",
    ]
    guard = states["WasRefundPaymentApplied"]["Choices"][0]
    assert guard == {
        "Variable": "$.groups.RefundAndShip.branches[0].results.RefundPayment",
        "IsPresent": True,
        "Next": "EscalateRefundPayment",
    }
    undo = states["UndoReserveLineItems"]
    assert undo["ItemsPath"] == "$.groups.ReserveLines.items"
    assert undo["MaxConcurrency"] == 2
    release = undo["ItemProcessor"]["States"]["ReleaseLine"]
    assert release["Parameters"]["Payload"]["original.$"] == "$.results.ReserveLine"
    decision = undo["ItemProcessor"]["States"]["ReleaseLineDecision"]
    assert decision["Default"] == "ReleaseLineItemFailed"
    assert states["UndoReserveLineOutcome"]["Choices"][0]["Next"] == "CompensationFailed"


def test_a_rejected_per_item_step_undoes_its_own_completed_items() -> None:
    saga = Saga("s", [_step("First", "first"), _each()])
    states = compile(saga)["States"]
    assert states["DoItemsRejected"]["Next"] == "UndoDoItemItems"
    assert states["UndoDoItemOutcome"]["Default"] == "UndoFirst"


@given(st.one_of(st.integers(min_value=0, max_value=10**9), st.from_regex(ITEM_ID, fullmatch=True)))
def test_item_ids_go_into_the_action_key_as_text(value: int | str) -> None:
    each = _each()
    ids = each.item_ids({"items": [{"id": value}]})
    assert ids == (str(value),)
    assert item_operation("do_item", ids[0]) == f"do_item#{value}"


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ({"items": "x"}, "items: must be a list"),
        ({"items": [{"x": 1}]}, "items[0]: needs id"),
        ({"items": [{"id": "a b"}]}, "items[0].id: must be 1-64 letters"),
        ({"items": [{"id": True}]}, "items[0].id: must be 1-64 letters"),
        ({"items": [{"id": "A"}, {"id": "A"}]}, "items[1].id: 'A' appears twice"),
    ],
)
def test_bad_item_lists_are_named(items: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        _each().item_ids(items)
    assert message in str(raised.value)


@st.composite
def sagas(draw: st.DrawFn) -> Saga:
    """Any mix of steps, parallel groups and per-item steps, effects and dispositions."""
    counter = iter(range(1000))

    def step() -> Step:
        n = next(counter)
        effect = draw(st.sampled_from(list(EffectClass)))
        if effect is EffectClass.READ:
            return Step(f"S{n}", operation=f"op{n}", effect=effect)
        choices: list[Compensate | Escalate] = [
            Compensate(f"C{n}", operation=f"undo{n}"),
            Escalate("a person decides"),
        ]
        later = draw(st.sampled_from(choices))
        return Step(f"S{n}", operation=f"op{n}", effect=effect, on_later_failure=later)

    elements: list[Step | Parallel | ForEach] = []
    for kind in draw(st.lists(st.sampled_from(["step", "parallel", "each"]), min_size=1)):
        n = next(counter)
        if kind == "step":
            elements.append(step())
        elif kind == "parallel":
            sizes = draw(st.lists(st.integers(1, 3), min_size=2, max_size=3))
            elements.append(Parallel(f"G{n}", [[step() for _ in range(k)] for k in sizes]))
        else:
            concurrency = draw(st.integers(1, 40))
            elements.append(
                ForEach(f"E{n}", items="items", item_key="id", step=step(),
                        max_concurrency=concurrency)
            )  # fmt: skip
    return Saga("generated", elements)


@settings(deadline=None, max_examples=60)  # a big generated saga compiles in ~0.3 s here
@given(sagas())
def test_the_engine_refuses_nothing_the_compiler_emits(saga: Saga) -> None:
    """``compile`` loads its output into the engine; this would raise if it refused any."""
    definition = compile(saga)
    assert {t.name for t in load(definition).task_states()} >= {s.name for s in saga.all_steps}


def test_a_saga_refuses_an_input_whose_items_cannot_all_be_keyed() -> None:
    """Checked by ``start`` on both backends before anything is written."""
    saga = Saga("s", [_each(), _step("Last", "last")])
    saga.check_input({"items": [{"id": "A"}, {"id": "B"}]})
    with pytest.raises(InvalidInputError) as raised:
        saga.check_input({"items": [{"id": "A"}, {"id": "A"}]})
    assert raised.value.data["field"] == "items[1].id"


def test_only_a_final_group_needs_a_succeed_state() -> None:
    """A Choice (the group's outcome) cannot end an execution; a task can."""
    group = Parallel("Both", [[_step("A", "a")], [_step("B", "b")]])
    ends_with_group = compile(Saga("g", [_step("S", "s"), group]))
    assert ends_with_group["States"]["BothOutcome"]["Default"] == "Completed"
    assert ends_with_group["States"]["Completed"]["Type"] == "Succeed"
    ends_with_step = compile(Saga("t", [group, _step("S", "s")]))
    assert "Completed" not in ends_with_step["States"]
    assert ends_with_step["States"]["BothOutcome"]["Default"] == "S"
    assert ends_with_step["States"]["S"]["End"] is True
