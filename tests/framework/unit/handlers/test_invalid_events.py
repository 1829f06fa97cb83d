"""Malformed events: ``EventMismatchError`` (an ``InvalidInputError``) naming the field, and
nothing claimed or sent; fields a release added are ignored."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepsaga._aws import metric_names
from stepsaga.errors import (
    COMPENSATE,
    RECONCILE,
    RETRYABLE,
    EventMismatchError,
    InvalidInputError,
    StepSagaError,
    names,
)
from stepsaga.workflow import compile
from tests.framework.unit.handlers.conftest import WorldFactory
from tests.framework.unit.handlers.helpers import (
    World,
    await_event,
    case_input,
    compensation_event,
    compensation_failed_event,
    escalate_event,
    make_world,
    reconcile_event,
    step_event,
)
from workflows.replacement_order import saga

ORIGINAL = {
    "action_key": "acme:CASE-1001:r1:reserve_stock",
    "status": "COMPLETED",
    "result": {"reservation_id": "acme:CASE-1001:r1:reserve_stock"},
    "replayed": False,
}
REFUND_ORIGINAL = dict(ORIGINAL, action_key="acme:CASE-1001:r1:refund_payment")

#: (function, a valid event)
VALID: list[tuple[str, dict[str, Any]]] = [
    ("ReserveStock", step_event("ReserveStock")),
    ("RefundPayment", step_event("RefundPayment")),
    ("CreateShipment", step_event("CreateShipment")),
    ("ReleaseReservation", compensation_event(ORIGINAL)),
    ("Reconcile", reconcile_event("RefundPayment")),
    ("Reconcile", await_event("RefundPayment", "rec-1")),
    ("Reconcile", escalate_event(REFUND_ORIGINAL)),
    ("Reconcile", compensation_failed_event(ORIGINAL)),
]

#: Paths whose absence is valid (defaults) — deleting them proves nothing.
OPTIONAL = {"kind", "failure.Cause", "error.Cause"}
#: Free-form objects: an extra key there is allowed.
OPEN_OBJECTS = {"original.result"}
#: A value no field of any event accepts.
GARBAGE: Any = [["not", "this"]]


def paths(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            yield path, item
            yield from paths(item, path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            path = f"{prefix}.{index}"
            yield path, item
            yield from paths(item, path)


def container(event: dict[str, Any], path: str) -> tuple[Any, str | int]:
    *parents, last = path.split(".")
    node: Any = event
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node, int(last) if isinstance(node, list) else last


@st.composite
def malformed(draw: st.DrawFn) -> tuple[str, dict[str, Any], str]:
    """(function, event, the field the error must name) with one mutation applied."""
    function, valid = draw(st.sampled_from(VALID))
    event = copy.deepcopy(valid)
    kind = draw(st.sampled_from(["delete", "garbage", "extra"]))
    if kind == "extra":
        # Only the case's own params refuse unknown fields; the envelope ignores them (a
        # release may add one: test_an_added_envelope_field_is_tolerated).
        dicts = [p for p, v in paths(event) if isinstance(v, dict) and p.startswith("params")]
        target = draw(st.sampled_from([p for p in dicts if p not in OPEN_OBJECTS]))
        name = draw(st.sampled_from(["bogus", "Extra", "x_1"]))
        node = container(event, f"{target}.{name}" if target else name)[0]
        node[name] = 1
        return function, event, f"{target}.{name}" if target else name
    candidates = [
        p
        for p, _ in paths(event)
        if not any(p == o or p.startswith(f"{o}.") for o in OPEN_OBJECTS)
        and (kind != "delete" or (p not in OPTIONAL and not p.split(".")[-1].isdigit()))
    ]
    target = draw(st.sampled_from(candidates))
    node, last = container(event, target)
    if kind == "delete":
        del node[last]
    else:
        node[last] = GARBAGE
    return function, event, target


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    built = make_world(Path(tmp_path_factory.mktemp("invalid")))
    yield built
    built.deps.close()


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=malformed())
def test_a_malformed_event_names_its_field(
    shared: World, case: tuple[str, dict[str, Any], str]
) -> None:
    world = shared
    function, event, field = case

    with pytest.raises(InvalidInputError) as caught:
        world.run(function, event)

    named = str(caught.value.data["field"])
    assert named == field or named.startswith(f"{field}.") or field.startswith(f"{named}."), (
        named,
        field,
    )
    assert caught.value.message.startswith(named)
    assert world.ledger.list() == []
    assert world.effects() == []


def _outcome(world: World, function: str, event: dict[str, Any]) -> object:
    """The answer without downstream ids (a simulated refund id differs per world)."""
    try:
        answer = world.run(function, event)
        return {k: v for k, v in answer.items() if k != "result"}
    except StepSagaError as exc:
        return (exc.error_name(), exc.message)


@pytest.mark.parametrize(("function", "valid"), VALID)
def test_an_added_envelope_field_is_tolerated(
    make: WorldFactory, function: str, valid: dict[str, Any]
) -> None:
    """An execution of the next (or previous) release may carry a field this one lacks:
    the handler answers exactly as it does without it."""
    event = copy.deepcopy(valid)
    event["added_by_next_release"] = {"x": 1}
    event["execution"]["new_context_field"] = 1
    assert _outcome(make(), function, event) == _outcome(make(), function, valid)


def test_a_mismatch_fails_for_redrive_and_is_never_compensated(world: World) -> None:
    """The error a mismatch raises is matched by no Catch (not compensated, not retried):
    the execution fails at the step and is redriven once state machine and handler agree."""
    event = step_event("RefundPayment")
    del event["operation"]
    with pytest.raises(EventMismatchError) as caught:
        world.run("RefundPayment", event)
    name = caught.value.error_name()
    assert name not in names(COMPENSATE) + names(RECONCILE) + names(RETRYABLE)
    compiled = json.dumps(compile(saga))
    assert name not in compiled
    assert world.metrics.total(metric_names.ROUTED_ERROR) == 0


@pytest.mark.parametrize("event", [None, [], "text", 42])
def test_a_non_object_event(world: World, event: Any) -> None:
    for function in ("RefundPayment", "ReleaseReservation", "Reconcile"):
        with pytest.raises(InvalidInputError) as caught:
            world.run(function, event)
        assert caught.value.data["field"] in ("event", "kind")


def test_an_unknown_reconciliation_kind(world: World) -> None:
    event = reconcile_event("RefundPayment")
    event["kind"] = "rollback"
    with pytest.raises(InvalidInputError) as caught:
        world.run("Reconcile", event)
    assert caught.value.data["field"] == "kind"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("saga", "other-saga"),
        ("step", "CreateShipment"),
        ("operation", "create_shipment"),
        ("effect", "blind_write"),
    ],
)
def test_an_event_for_another_action_is_refused(world: World, field: str, value: str) -> None:
    event = step_event("RefundPayment")
    event[field] = value
    with pytest.raises(InvalidInputError) as caught:
        world.run("RefundPayment", event)
    assert caught.value.data["field"] == field
    assert world.effects() == []


def test_a_weaker_effect_class_cannot_unlock_repeats(world: World) -> None:
    event = step_event("CreateShipment")
    event["effect"] = "blind_write"
    with pytest.raises(InvalidInputError) as caught:
        world.run("CreateShipment", event)
    assert "physical" in caught.value.message


def test_the_key_comes_from_the_intent_not_the_attempt(world: World) -> None:
    first = step_event("RefundPayment")
    second = copy.deepcopy(first)
    second["execution"] = {"name": "redriven-elsewhere", "state": "RefundPayment", "retry_count": 2}

    a = world.run("RefundPayment", first)
    b = world.run("RefundPayment", second)

    assert a["action_key"] == b["action_key"] == "acme:CASE-1001:r1:refund_payment"
    assert b["replayed"] is True
    assert len(world.effects("refund")) == 1


def test_a_new_revision_is_a_new_action(world: World) -> None:
    approval = {"approved_by": "ops@acme.example", "approved_at": "2026-11-29T10:00:00Z"}
    revised = case_input(approval={**approval, "revision": 2})
    result = world.run("RefundPayment", step_event("RefundPayment", revised))
    assert result["action_key"] == "acme:CASE-1001:r2:refund_payment"


@pytest.mark.parametrize("value", [-1, 0, 1764400000, "1764400000"])
def test_an_approval_time_that_is_a_number_is_refused(world: World, value: object) -> None:
    event = step_event("RefundPayment")
    event["approved_at"] = value
    with pytest.raises(InvalidInputError) as caught:
        world.run("RefundPayment", event)
    assert caught.value.data["field"] == "approved_at"
    assert world.ledger.list() == []


@pytest.mark.parametrize("revision", [10**30, 2**63, 1_000_001])
def test_a_revision_no_case_can_have_is_refused(world: World, revision: int) -> None:
    """Unbounded, it reached SQLite as an integer overflow and came back as a retryable
    ``TransientError`` (found by the chaos harness's hostile events)."""
    event = step_event("RefundPayment")
    event["revision"] = revision
    with pytest.raises(InvalidInputError) as caught:
        world.run("RefundPayment", event)
    assert caught.value.data["field"] == "revision"
    assert world.ledger.list() == []
