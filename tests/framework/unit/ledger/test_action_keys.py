"""The action key: one builder, one reader, and the grammar ``Action`` holds its parts to."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepsaga._model.keys import (
    CASE,
    COMPENSATION,
    NAME,
    TENANT,
    ActionKey,
    action_key,
    compensation_of,
    is_compensation,
    parse_action_key,
)
from stepsaga.errors import InvalidActionError
from stepsaga.ledger import Action, Intent
from stepsaga.ledger._models import MAX_REVISION

APPROVED_AT = datetime(2026, 1, 1, tzinfo=UTC)

tenants = st.from_regex(TENANT, fullmatch=True)
cases = st.from_regex(CASE, fullmatch=True)
names = st.from_regex(rf"^{NAME}$", fullmatch=True)
revisions = st.integers(min_value=1, max_value=MAX_REVISION)


@st.composite
def operations(draw: st.DrawFn) -> str:
    """``op``, ``op#item``, each with any number of ``:compensate:op``."""
    operation = draw(names)
    if draw(st.booleans()):
        operation = f"{operation}#{draw(names)}"
    for undo in draw(st.lists(names, max_size=2)):
        operation = compensation_of(operation, undo)
    return operation


@settings(max_examples=150, deadline=None)
@given(tenants, cases, revisions, operations())
def test_a_key_reads_back_as_the_parts_it_was_built_from(
    tenant: str, case: str, revision: int, operation: str
) -> None:
    parts = ActionKey(tenant, case, revision, operation)
    assert parse_action_key(action_key(tenant, case, revision, operation)) == parts
    assert parse_action_key(str(parts)) == parts
    action = Action(tenant, Intent(case, revision, APPROVED_AT), operation)
    assert parse_action_key(action.key) == parts


@settings(max_examples=60, deadline=None)
@given(tenants, cases, revisions, names, names)
def test_a_compensation_key_is_the_original_key_and_the_undo(
    tenant: str, case: str, revision: int, operation: str, undo: str
) -> None:
    original = Action(tenant, Intent(case, revision, APPROVED_AT), operation)
    compensation = original.compensation(undo)
    assert compensation.key == compensation_of(original.key, undo)
    assert is_compensation(compensation.operation)
    assert not is_compensation(original.operation)
    assert parse_action_key(compensation.key) == ActionKey(
        tenant, case, revision, compensation_of(operation, undo)
    )


def test_the_format_is_the_documented_one() -> None:
    assert action_key("acme", "CASE-1", 3, "ship#L1") == "acme:CASE-1:r3:ship#L1"
    assert action_key("acme", "CASE-1", 3, "") == "acme:CASE-1:r3:"  # a case's key prefix
    assert compensation_of("ship", "cancel") == "ship:compensate:cancel"


@pytest.mark.parametrize(
    "key",
    ["", "acme", "acme:CASE-1", "acme:CASE-1:3:op", "acme:CASE-1:rx:op", ":CASE-1:r1:op"],
)
def test_what_is_not_an_action_key_reads_as_none(key: str) -> None:
    assert parse_action_key(key) is None


# What building an action's key refused before there was one builder: ``Action`` and
# ``Intent`` hold every part to the grammar, so no key is built from a part that would
# read back as another (a ``:`` in the tenant or case, a revision out of range).
_REFUSED = [
    ({"tenant": "ac:me"}, "tenant_id"),
    ({"tenant": ""}, "tenant_id"),
    ({"case": "CASE:1"}, "case_id"),
    ({"case": "-CASE"}, "case_id"),
    ({"revision": 0}, "revision"),
    ({"revision": MAX_REVISION + 1}, "revision"),
    ({"revision": True}, "revision"),
    ({"operation": "ship:it"}, "operation"),
    ({"operation": "ship#a#b"}, "operation"),
    ({"operation": ""}, "operation"),
]


@pytest.mark.parametrize(("change", "field"), _REFUSED)
def test_an_action_refuses_parts_outside_the_grammar(change: dict[str, object], field: str) -> None:
    parts: dict[str, object] = {
        "tenant": "acme",
        "case": "CASE-1",
        "revision": 1,
        "operation": "ship",
    } | change
    with pytest.raises(InvalidActionError) as raised:
        Action(
            parts["tenant"],  # type: ignore[arg-type]
            Intent(parts["case"], parts["revision"], APPROVED_AT),  # type: ignore[arg-type]
            parts["operation"],  # type: ignore[arg-type]
        )
    assert raised.value.data["field"] == field


@settings(max_examples=60, deadline=None)
@given(names)
def test_a_compensation_names_one_plain_operation(undo: str) -> None:
    assert COMPENSATION.match(undo)
    original = Action("acme", Intent("CASE-1", 1, APPROVED_AT), "ship")
    for bad in (f"{undo}:x", f"{undo}#item", ""):
        with pytest.raises(InvalidActionError):
            original.compensation(bad)
