"""The saga DSL validates when a saga is defined, with a message naming what is wrong."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model

from stepsaga import Compensate, EffectClass, Escalate, RetryPolicy, Saga, Step
from stepsaga.errors import InvalidInputError, SagaDefinitionError
from stepsaga.workflow._names import RESERVED_CASE_FIELDS
from stepsaga.workflow._saga import RECONCILER_FUNCTION
from workflows.case import Case, Refund, Reserve


def write(name: str = "ReserveStock", **overrides: Any) -> Step:
    fields: dict[str, Any] = {
        "operation": "reserve_stock",
        "effect": EffectClass.KEYED_WRITE,
        "params": "reserve",
        "on_later_failure": Compensate("ReleaseReservation", "release_reservation"),
    }
    fields.update(overrides)
    return Step(name, **fields)


def test_replacement_order_functions_are_the_registry(saga: Saga) -> None:
    assert saga.name == "replacement-order"
    assert saga.functions == {
        "ReserveStock": "tasks.reserve_stock:ReserveStock",
        "RefundPayment": "tasks.refund_payment:RefundPayment",
        "CreateShipment": "tasks.create_shipment:CreateShipment",
        "ReleaseReservation": "compensations.release_reservation:ReleaseReservation",
        "Reconcile": "stepsaga._handlers.reconcile:reconciler",
    }


def test_definition_substitutions_cover_every_function(saga: Saga) -> None:
    subs = saga.definition_substitutions(lambda name: f"arn:aws:lambda:eu-west-1:1:function:{name}")
    assert subs["ReserveStockFunctionArn"] == "arn:aws:lambda:eu-west-1:1:function:ReserveStock"
    assert set(subs) == {f"{name}FunctionArn" for name in saga.functions}


def test_undeclared_effect_is_physical() -> None:
    step = Step("Ship", operation="ship", on_later_failure=Escalate("shipped"))
    assert step.effect is EffectClass.PHYSICAL


def test_effect_may_be_given_by_value() -> None:
    assert write(effect="blind_write").effect is EffectClass.BLIND_WRITE


def test_read_step_needs_no_operation_nor_disposition() -> None:
    step = Step("LookUpOrder", effect=EffectClass.READ)
    assert step.operation == "look_up_order"
    assert step.handler_ref == "tasks.look_up_order:LookUpOrder"
    assert not step.has_effect


def test_handlers_default_from_operation_and_can_be_overridden() -> None:
    step = write(handler="my_tasks.stock:Reserve")
    assert step.handler_ref == "my_tasks.stock:Reserve"
    assert write().compensation is not None
    assert write().compensation.handler_ref == (  # type: ignore[union-attr]
        "compensations.release_reservation:ReleaseReservation"
    )


def test_params_models_come_from_the_input_model(saga: Saga) -> None:
    assert saga.step("ReserveStock").params_model is Reserve
    assert saga.step("RefundPayment").params_model is Refund


def test_lists_become_tuples_so_sagas_are_frozen_values() -> None:
    saga = Saga("s", [write()])
    assert isinstance(saga.steps, tuple)
    with pytest.raises(AttributeError):
        saga.name = "t"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: write("reserve_stock"), "step 'reserve_stock': name must be PascalCase"),
        (lambda: write(operation=None), "a keyed_write step must declare its operation"),
        (lambda: write(effect=None, operation=None), "effect must be one of read, keyed_write"),
        (lambda: write(operation="Reserve-Stock"), "operation must be snake_case"),
        (lambda: write(effect="maybe"), "effect must be one of read, keyed_write"),
        (lambda: write(params="$.reserve"), "params must be a dotted path in the case"),
        (lambda: write(params_model=dict), "params_model must be a pydantic model class"),
        (
            lambda: write(on_later_failure=None),
            "say what happens to its effect when a later step is rejected",
        ),
        (
            lambda: Step("Look", effect=EffectClass.READ, on_later_failure=Escalate("x")),
            "a read step has no effect to compensate or escalate",
        ),
        (lambda: write(on_later_failure="undo"), "must be Compensate(...) or Escalate(reason)"),
        (
            lambda: write(handler="handler"),
            "handler must be a 'package.module:StepHandler' reference",
        ),
        (lambda: write(retry=["TransientError"]), "retry must be RetryPolicy values"),
        (
            lambda: write(
                retry=[
                    RetryPolicy(["TransientError"], max_attempts=1),
                    RetryPolicy(["TransientError"], max_attempts=1),
                ]
            ),
            "TransientError appears in two retriers",
        ),
        (lambda: write(timeout_seconds=0), "timeout_seconds must be between 1 and 900, got 0"),
        (lambda: write(timeout_seconds=901), "timeout_seconds must be between 1 and 900"),
        (lambda: write(timeout_seconds=1.5), "timeout_seconds must be an integer"),
        (lambda: Escalate("  "), "escalation: reason must say what a person has to decide"),
        (lambda: Escalate("x" * 201), "reason must be at most 200 characters"),
        (lambda: Compensate("release", "release"), "compensation 'release': name must be"),
        (lambda: Compensate("Release", "Release"), "operation must be snake_case"),
        (
            lambda: Compensate("Release", "release", effect=EffectClass.READ),
            "a compensation changes something",
        ),
    ],
)
def test_step_validation_messages(build: Any, message: str) -> None:
    with pytest.raises(SagaDefinitionError) as raised:
        build()
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Saga("replacement order", [write()]), "name must be 1-80 letters"),
        (lambda: Saga("s", []), "needs at least one step"),
        (lambda: Saga("s", ["ReserveStock"]), "steps must be Step, Parallel or ForEach values"),  # type: ignore[list-item]
        (lambda: Saga("s", [write(), write()]), "operation 'reserve_stock' is used by"),
        (
            lambda: Saga(
                "s",
                [
                    write(),
                    write(
                        "Refund",
                        operation="refund",
                        on_later_failure=Compensate("Unrefund", "reserve_stock"),
                    ),
                ],
            ),
            "operation 'reserve_stock' is used by ReserveStock and Unrefund",
        ),
        (
            lambda: Saga(
                "s",
                [
                    write(),
                    write("ReleaseReservation", operation="x", on_later_failure=Escalate("r")),
                ],
            ),
            "state name 'ReleaseReservation' is used twice",
        ),
        (
            lambda: Saga("s", [write("Completed", operation="complete")]),
            "state name 'Completed' is used twice",
        ),
        (
            lambda: Saga("s", [write("Reconcile", operation="reconcile")]),
            f"{RECONCILER_FUNCTION!r} is the reconciler's function name",
        ),
        (lambda: Saga("s", [write()], input_model=Reserve), "input_model must extend"),  # type: ignore[arg-type]
        (
            lambda: Saga("s", [write()], decision_timeout_seconds=0),
            "decision_timeout_seconds must be between 1 and",
        ),
        (
            lambda: Saga("s", [write(params="reserv")], input_model=Case),
            "params 'reserv': Case has no field 'reserv'",
        ),
        (
            lambda: Saga("s", [write(params="reserve.sku.code")], input_model=Case),
            "reserve.sku has no fields",
        ),
        (
            lambda: Saga("s", [write(params="refund", params_model=Reserve)], input_model=Case),
            "params 'refund' is a Refund in the input model, not a Reserve",
        ),
    ],
)
def test_saga_validation_messages(build: Any, message: str) -> None:
    with pytest.raises(SagaDefinitionError) as raised:
        build()
    assert message in str(raised.value)


def test_input_model_must_carry_the_identity_fields() -> None:
    class Flat(BaseModel):
        tenant_id: str
        case_id: str
        reserve: Reserve

    with pytest.raises(SagaDefinitionError, match=r"input_model must extend stepsaga.ApprovedCase"):
        Saga("s", [write()], input_model=Flat)  # type: ignore[arg-type]


def test_params_paths_that_exist_are_accepted() -> None:
    saga = Saga(
        "s",
        [
            write(params_model=Reserve),
            write(
                "RefundPayment",
                operation="refund_payment",
                params="refund",
                params_model=Refund,
                on_later_failure=Escalate("refund issued"),
            ),
        ],
        input_model=Case,
    )
    assert saga.step("RefundPayment").params == "refund"
    with pytest.raises(KeyError):
        saga.step("Nope")


def test_only_reads_means_no_reconciler() -> None:
    saga = Saga("reads", [Step("LookUp", effect=EffectClass.READ)])
    assert saga.functions == {"LookUp": "tasks.look_up:LookUp"}
    assert not saga.uses_reconciler


# --- the machine's own top-level fields (names.StateField) -----------------------------


@pytest.mark.parametrize("field", sorted(RESERVED_CASE_FIELDS))
def test_an_input_model_with_a_reserved_top_level_field_is_refused(field: str) -> None:
    fields: dict[str, Any] = {field: (dict[str, Any], {})}
    model = create_model("Clashing", __base__=Case, **fields)
    with pytest.raises(SagaDefinitionError) as raised:
        Saga("s", [write()], input_model=model)
    assert f"field {field!r} is reserved" in str(raised.value)


def test_a_reserved_name_deeper_in_the_case_is_fine() -> None:
    class Deep(Case):
        notes: dict[str, Any] = {}

    Saga("s", [write()], input_model=Deep)  # ``notes.results`` would not collide


def test_an_alias_counts_as_the_field_name() -> None:
    class Aliased(Case):
        outcome: dict[str, Any] = Field(default_factory=dict, alias="results")

    with pytest.raises(SagaDefinitionError, match=r"field 'results' is reserved"):
        Saga("s", [write()], input_model=Aliased)


@given(
    field=st.sampled_from(sorted(RESERVED_CASE_FIELDS)),
    value=st.one_of(
        st.none(),
        st.integers(),
        st.text(max_size=5),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    ),
)
def test_an_input_with_a_reserved_top_level_field_is_refused_naming_it(
    field: str, value: Any
) -> None:
    saga = Saga("s", [write()])
    with pytest.raises(InvalidInputError) as raised:
        saga.check_input({"tenant_id": "acme", "case_id": "C-1", field: value})
    assert raised.value.data["field"] == field
    assert f"case field {field!r} is reserved" in raised.value.message
    assert "\n" not in raised.value.message


def test_an_input_without_reserved_fields_passes() -> None:
    Saga("s", [write()]).check_input({"tenant_id": "acme", "reserve": {"results": 1}})
