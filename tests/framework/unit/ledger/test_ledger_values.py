"""Actions, intents, effect classes and the policy: identity rules and validation messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import pytest

from stepsaga import EffectClass
from stepsaga.errors import InvalidActionError, InvalidInputError
from stepsaga.ledger import Action, Intent, LedgerPolicy, Status
from stepsaga.ledger._models import ReconOutcome, ReconStatus
from stepsaga.ledger._rules import parse_choice
from tests.framework.conformance.ledger.helpers import APPROVED_AT, make_action


def test_action_key_is_tenant_intent_and_operation() -> None:
    action = make_action("refund_payment", tenant="acme", case="CASE-1001", revision=3)
    assert action.key == "acme:CASE-1001:r3:refund_payment"


def test_compensation_keys_derive_from_the_original() -> None:
    forward = make_action("reserve_stock")
    undo = forward.compensation("release_stock", EffectClass.KEYED_WRITE, {"sku": "S"})
    assert undo.key == "acme:CASE-1001:r1:reserve_stock:compensate:release_stock"
    assert undo.intent == forward.intent
    assert undo.effect is EffectClass.KEYED_WRITE
    assert forward.compensation("release_stock").effect is EffectClass.PHYSICAL
    with pytest.raises(InvalidActionError):
        forward.compensation("bad:name")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, EffectClass.PHYSICAL),
        ("", EffectClass.PHYSICAL),
        ("teleport", EffectClass.PHYSICAL),
        ("KEYED_WRITE", EffectClass.KEYED_WRITE),
        (" blind_write ", EffectClass.BLIND_WRITE),
        ("read", EffectClass.READ),
    ],
)
def test_undeclared_or_unknown_effects_are_physical(value: Any, expected: EffectClass) -> None:
    assert EffectClass.parse(value) is expected


def test_an_action_without_an_effect_is_physical() -> None:
    action = Action("acme", Intent("C-1", 1, APPROVED_AT), "ship")
    assert action.effect is EffectClass.PHYSICAL


def test_status_values_are_their_names() -> None:
    assert [s.value for s in Status] == [s.name for s in Status]
    assert {s.value for s in Status} == {
        "IN_PROGRESS",
        "COMPLETED",
        "FAILED",
        "UNKNOWN",
        "RELEASED",
    }


def test_values_are_frozen() -> None:
    action = make_action()
    with pytest.raises(AttributeError):
        action.operation = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        action.params["amount"] = "1.00"  # type: ignore[index]


def test_params_are_copied_so_later_mutation_cannot_change_the_digest() -> None:
    params = {"amount": "20.00", "currency": "USD"}
    action = make_action(params=params)
    digest = action.digest
    params["amount"] = "99.00"
    assert action.digest == digest


def test_intents_normalize_to_utc() -> None:
    local = datetime(2026, 11, 29, 10, 30, tzinfo=UTC).astimezone()
    assert Intent("C-1", 1, local).approved_at.tzinfo is UTC


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: Intent("C:1", 1, APPROVED_AT), "case_id"),
        (lambda: Intent("C-1", 0, APPROVED_AT), "revision"),
        (lambda: Intent("C-1", True, APPROVED_AT), "revision"),
        (lambda: Intent("C-1", 10**30, APPROVED_AT), "revision"),
        (lambda: Intent("C-1", 1, datetime(2026, 1, 1)), "approved_at"),
        (lambda: make_action(tenant="ac:me"), "tenant_id"),
        (lambda: make_action(tenant=""), "tenant_id"),
        (lambda: make_action("refund payment"), "operation"),
        (lambda: make_action(cost=-1), "cost"),
        (lambda: make_action(params={"amount": "1.001", "currency": "USD"}), "params.amount"),
    ],
)
def test_invalid_actions_name_the_field(build: Any, field: str) -> None:
    with pytest.raises(InvalidActionError) as caught:
        build()
    assert caught.value.data["field"] == field


def test_policy_defaults() -> None:
    policy = LedgerPolicy()
    assert (policy.lease_seconds, policy.attempt_budget, policy.sweep_grace_seconds) == (
        60,
        24,
        300,
    )
    assert policy.retention == timedelta(days=30)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lease_seconds": 0}, "lease_seconds must be a positive number of seconds, got 0"),
        ({"lease_seconds": float("inf")}, "lease_seconds must be a positive number of seconds"),
        ({"lease_seconds": True}, "lease_seconds must be a positive number of seconds, got True"),
        (
            {"sweep_grace_seconds": -1},
            "sweep_grace_seconds must be a non-negative number of seconds, got -1",
        ),
        ({"attempt_budget": 0}, "attempt_budget must be an integer of at least 1, got 0"),
        ({"attempt_budget": 2.5}, "attempt_budget must be an integer of at least 1, got 2.5"),
        ({"retention": 30}, "retention must be a timedelta, got 30"),
        (
            {"retention": timedelta(seconds=30), "lease_seconds": 60},
            "retention must be longer than lease_seconds",
        ),
    ],
)
def test_policy_validation_messages(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        LedgerPolicy(**kwargs)
    assert caught.value.message.startswith(message)


@pytest.mark.parametrize(
    ("kind", "given", "what", "expected", "field"),
    [
        (Status, "completed", "status", Status.COMPLETED, "status"),
        (ReconStatus, "Open", "item status", ReconStatus.OPEN, "status"),
        (ReconOutcome, "NOT_APPLIED", "outcome", ReconOutcome.NOT_APPLIED, "outcome"),
    ],
)
def test_one_parser_reads_each_enum_in_any_case(
    kind: type[StrEnum], given: str, what: str, expected: StrEnum, field: str
) -> None:
    assert parse_choice(kind, given, what) is expected
    assert parse_choice(kind, None, what) is None
    with pytest.raises(InvalidInputError) as raised:
        parse_choice(kind, "maybe", what)
    members = ", ".join(member.value for member in kind)
    assert raised.value.message == f"unknown {what} 'maybe'; one of {members}"
    assert raised.value.data == {"field": field}
