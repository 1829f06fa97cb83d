"""Decisions on AWS go through the resolver: the decider is who signed, never the body.

The CLI's backend (``--backend aws`` with the stack's ``ResolverUrl``) sends each decision to
the resolver function (``stepsaga._aws.resolver``) through an in-process ``AWS_IAM`` function URL
(``resolver_support.FunctionUrl``); the resolver writes with the real ledger on moto.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepsaga._aws import resolver as resolver_module
from stepsaga._aws.signing import AwsSigV4, SignedService
from stepsaga._project import deployment
from stepsaga._project.home import StateHome
from stepsaga.backends import ReconOutcome
from stepsaga.errors import ExecutionNotRedrivable, IllegalTransitionError, InvalidInputError
from stepsaga.ledger import Status
from stepsaga.ledger._models import ReconStatus
from tests.framework.functional.aws_support import (
    ACCOUNT,
    TABLE,
    FakeAws,
    RedrivingSfn,
    fake_aws,
    run_locally,
)
from tests.framework.functional.cli_support import write_case, write_faults
from tests.framework.functional.resolver_support import RESOLVER_URL, Deployed, stack
from tests.framework.functional.test_aws_backend import REFUND_UNVERIFIABLE, UNVERIFIABLE, _case

__all__ = ["stack"]  # the fixture


@pytest.fixture
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


def _dual_control_item(stack: Deployed, home: StateHome, tmp_path: Path) -> str:
    faults = write_faults(tmp_path, *REFUND_UNVERIFIABLE)
    local = run_locally(home, write_case(tmp_path), faults)
    stack.aws.copy_ledger(local.records, [replace(i, task_token=None) for i in local.items])
    item_id: str = local.view["open_items"][0]
    return item_id


def test_the_decider_is_the_signer_and_the_by_argument_is_ignored(
    stack: Deployed, home: StateHome, tmp_path: Path
) -> None:
    local = run_locally(home, write_case(tmp_path), UNVERIFIABLE)
    stack.aws.copy_ledger(local.records, local.items)
    stack.aws.backend().start(_case())
    item_id = local.view["open_items"][0]
    alice = stack.add("stepsaga-operator", "Alice")

    with stack.operator(alice):
        resolution = stack.backend().recon_resolve(
            item_id, ReconOutcome.APPLIED, "bob@acme.example", "carrier shows it"
        )

    assert (resolution.item.status, resolution.item.resolved_by) == ("RESOLVED", "alice")
    assert resolution.execution is not None  # the resolver resumed the waiting case
    assert resolution.execution.name == "acme-CASE-1001-r1"
    audit = stack.aws.ledger().get_audit(item_id)
    assert audit is not None
    assert audit.identity["caller_arn"].endswith(":assumed-role/stepsaga-operator/Alice")
    (event,) = stack.url.events
    assert json.loads(event["body"]) == {
        "action": "resolve",
        "item_id": item_id,
        "outcome": "applied",
        "note": "carrier shows it",
    }


def test_one_person_cannot_satisfy_dual_control(
    stack: Deployed, home: StateHome, tmp_path: Path
) -> None:
    item_id = _dual_control_item(stack, home, tmp_path)
    alice = stack.add("stepsaga-operator", "alice")
    # The same person under another role, another case, full-width letters: still alice.
    alice_again = [
        stack.add("stepsaga-operator-2", "alice"),
        stack.add("stepsaga-operator", "ALICE"),
        stack.add("stepsaga-operator-3", "\uff41\uff4c\uff49\uff43\uff45"),
    ]
    bob = stack.add("stepsaga-operator-2", "bob")

    with stack.operator(alice):
        first = stack.backend().recon_resolve(item_id, ReconOutcome.NOT_APPLIED, "bob", "PSP: none")
    assert (first.item.status, first.item.awaiting_second_approver) == ("OPEN", True)
    assert first.item.first_approval is not None
    assert first.item.first_approval["by"] == "alice"
    for key in alice_again:
        with stack.operator(key), pytest.raises(IllegalTransitionError, match="second approver"):
            stack.backend().recon_resolve(item_id, ReconOutcome.NOT_APPLIED, "carol", "me again")
    stored = stack.aws.ledger().get_item(item_id)
    assert stored is not None
    assert stored.status is ReconStatus.OPEN

    with stack.operator(bob):
        second = stack.backend().recon_resolve(item_id, ReconOutcome.NOT_APPLIED, None, "agreed")

    assert (second.item.status, second.item.resolved_by) == ("RESOLVED", "bob")
    audit = stack.aws.ledger().get_audit(item_id)
    assert audit is not None
    assert [d.by for d in audit.deciders] == ["alice", "bob"]
    record = stack.aws.ledger().get("acme:CASE-1001:r1:refund_payment")
    assert record is not None
    assert record.status is Status.RELEASED


@pytest.mark.parametrize(
    "smuggled",
    [
        {"first_approval": {"by": "bob", "at": "2026-12-01T00:00:00Z", "note": "ok"}},
        {"by": "bob"},
        {"identity": {"caller_arn": "arn:aws:sts::123456789012:assumed-role/Ops/bob"}},
    ],
)
def test_a_client_supplied_first_approval_or_decider_is_refused_whole(
    stack: Deployed, home: StateHome, tmp_path: Path, smuggled: dict[str, object]
) -> None:
    item_id = _dual_control_item(stack, home, tmp_path)
    alice = stack.add("stepsaga-operator", "alice")
    body = {"action": "resolve", "item_id": item_id, "outcome": "not_applied", "note": "x"}
    before = stack.aws.ledger().get_item(item_id)

    with stack.operator(alice):
        signed = httpx.Client(auth=AwsSigV4(SignedService.LAMBDA, "us-east-1"), transport=stack.url)
        response = signed.post(RESOLVER_URL, json={**body, **smuggled})

    (name,) = smuggled
    assert response.status_code == 400
    assert response.json()["error"] == "InvalidInputError"
    assert response.json()["data"] == {"field": name}
    assert stack.aws.ledger().get_item(item_id) == before


def test_an_unsigned_request_never_reaches_the_resolver(stack: Deployed) -> None:
    response = httpx.Client(transport=stack.url).post(RESOLVER_URL, json={"action": "redrive"})
    assert response.status_code == 403
    assert stack.url.events == []
    # And an event that reaches the function without a verified identity decides nothing.
    answer = stack.url.resolver.handle({"body": '{"action": "redrive", "ref": "x"}'})
    assert answer["statusCode"] == 403


def test_stop_goes_through_the_resolver_as_the_signer(
    stack: Deployed, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack.aws.backend().start(_case())
    alice = stack.add("stepsaga-operator", "alice")
    causes: list[str] = []

    def recorded(self: RedrivingSfn, **params: Any) -> Any:  # moto keeps no cause
        causes.append(params["cause"])
        return self._inner.stop_execution(**params)

    monkeypatch.setattr(RedrivingSfn, "stop_execution", recorded, raising=False)
    with stack.operator(alice):
        view = stack.backend().stop("CASE-1001", by="mallory", note="customer withdrew")

    assert view.status == "ABORTED"
    assert causes == ["stopped by alice: customer withdrew"]
    assert json.loads(stack.url.events[0]["body"])["action"] == "stop"


def test_the_resolvers_refusal_is_raised_as_its_own_error(stack: Deployed) -> None:
    stack.aws.backend().start(_case())
    alice = stack.add("stepsaga-operator", "alice")
    with stack.operator(alice), pytest.raises(ExecutionNotRedrivable, match="RUNNING"):
        stack.backend().redrive("CASE-1001")
    with stack.operator(alice), pytest.raises(InvalidInputError, match="note"):
        stack.backend().stop("CASE-1001", by="alice", note="  ")


def test_the_deployed_entry_point_builds_from_its_environment(
    aws: FakeAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``stepsaga._aws.resolver.handler`` as Lambda calls it: the environment the construct sets
    (saga, state machine, table), the signer in the request context."""
    monkeypatch.setattr(resolver_module, "_resolver", None)
    monkeypatch.setenv(deployment.ENV_SAGA, "workflows.replacement_order:saga")
    monkeypatch.setenv(deployment.ENV_STATE_MACHINE_ARN, aws.state_machine_arn)
    monkeypatch.setenv(deployment.ENV_LEDGER_TABLE_NAME, TABLE)
    aws.backend().start(_case())
    alice = f"arn:aws:sts::{ACCOUNT}:assumed-role/stepsaga-operator/alice"
    event = {
        "requestContext": {
            "authorizer": {"iam": {"userArn": alice, "accountId": ACCOUNT, "userId": "AROA:a"}}
        },
        "body": json.dumps({"action": "stop", "ref": "CASE-1001", "note": "withdrawn"}),
    }

    answer = resolver_module.handler(event, None)

    assert answer["statusCode"] == 200, answer
    arn = json.loads(answer["body"])["execution_arn"]
    assert aws.sfn.describe_execution(executionArn=arn)["status"] == "ABORTED"


def test_a_cancel_naming_its_canceller_is_refused_and_stops_nothing(stack: Deployed) -> None:
    """The canceller is the signer: a body that names one (or an identity) is refused whole
    (400, the field named) before anything is stopped or undone."""
    stack.aws.backend().start(_case())
    alice = f"arn:aws:sts::{ACCOUNT}:assumed-role/stepsaga-operator/alice"
    for forged in ({"by": "bob@acme.example"}, {"identity": {"userArn": "bob"}}):
        body = {"action": "cancel", "ref": "CASE-1001", "note": "withdrawn", **forged}
        answer = stack.url.resolver.handle(
            {
                "requestContext": {
                    "authorizer": {"iam": {"userArn": alice, "accountId": ACCOUNT, "userId": "A"}}
                },
                "body": json.dumps(body),
            }
        )
        assert answer["statusCode"] == 400, answer
        assert json.loads(answer["body"])["data"]["field"] == next(iter(forged))
    assert stack.aws.backend().status("CASE-1001").status == "RUNNING"
