"""Who decides on AWS: the signer of the request, one person under any spelling or role."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepsaga._aws.resolver import Resolver
from stepsaga.backends._aws.decisions import error_from_answer
from stepsaga.backends._aws.operators import CallerIdentity, normalized
from stepsaga.errors import ExecutionNotRedrivable, IllegalTransitionError, TransientError
from stepsaga.ledger._approvals import same_person

ACCOUNT = "123456789012"


def _caller(resource: str) -> CallerIdentity:
    return CallerIdentity(f"arn:aws:sts::{ACCOUNT}:{resource}", ACCOUNT, "AROAX:x")


@pytest.mark.parametrize(
    ("resource", "person"),
    [
        ("assumed-role/Operators/alice", "alice"),
        ("assumed-role/Other/ALICE", "alice"),
        ("assumed-role/Ops/\uff41\uff4c\uff49\uff43\uff45", "alice"),  # full-width
        ("user/team/Bob", "bob"),
        ("federated-user/carol", "carol"),
    ],
)
def test_the_person_is_the_session_or_user_name_normalized(resource: str, person: str) -> None:
    assert _caller(resource).person == person


def test_another_principal_is_its_whole_arn() -> None:
    assert _caller("root").person == f"arn:aws:sts::{ACCOUNT}:root"


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ@.-_", min_size=3))
def test_any_case_of_a_session_name_is_the_same_person(name: str) -> None:
    one = _caller(f"assumed-role/A/{name.lower()}").person
    other = _caller(f"assumed-role/B/{name.upper()}").person
    assert same_person(one, other)
    assert normalized(one) == one


def _event(iam: dict[str, str] | None, body: dict[str, Any]) -> dict[str, Any]:
    context: dict[str, Any] = {"http": {"method": "POST"}}
    if iam is not None:
        context["authorizer"] = {"iam": iam}
    return {"requestContext": context, "body": json.dumps(body), "isBase64Encoded": False}


def _never() -> Any:
    raise AssertionError("the backend must not be built for a refused request")


@pytest.mark.parametrize(
    "iam",
    [None, {"userArn": "", "accountId": ACCOUNT, "userId": "x"}, {"accountId": ACCOUNT}],
)
def test_a_request_without_a_verified_signer_is_refused(iam: dict[str, str] | None) -> None:
    answer = Resolver(_never).handle(_event(iam, {"action": "redrive", "ref": "CASE-1"}))
    assert answer["statusCode"] == 403


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "resolve", "item_id": "rec-1", "by": "bob"}, "by"),
        ({"action": "approve"}, "action"),
        ({"action": "resolve", "item_id": "rec-1", "note": "x"}, "outcome"),
        ({"action": "stop", "note": "x"}, "ref"),
    ],
)
def test_bad_requests_name_the_field_and_build_nothing(body: dict[str, Any], field: str) -> None:
    signer = {"userArn": f"arn:aws:sts::{ACCOUNT}:assumed-role/O/alice", "accountId": ACCOUNT}
    signer["userId"] = "AROAX:alice"
    answer = Resolver(_never).handle(_event(signer, body))
    assert answer["statusCode"] == 400
    assert json.loads(answer["body"])["data"] == {"field": field}


def test_an_error_answer_is_raised_as_the_error_it_names() -> None:
    refused = error_from_answer(409, {"error": "IllegalTransitionError", "message": "no"})
    assert isinstance(refused, IllegalTransitionError)
    redrive = {"error": "ExecutionNotRedrivable", "message": "RUNNING", "data": {"a": "b"}}
    assert isinstance(error_from_answer(409, redrive), ExecutionNotRedrivable)
    assert isinstance(error_from_answer(502, {"message": "Bad gateway"}), TransientError)
