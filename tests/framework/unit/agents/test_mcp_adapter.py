"""The MCP adapter in process: scope from the server's tenant and an issued, bound key."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import validators
from pydantic import BaseModel, ConfigDict, Field

try:
    from mcp.server.mcpserver import Context, MCPServer
except ImportError:  # pragma: no cover - the dev extra installs it
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("mcp is not installed: pip install 'stepsaga[mcp]'", allow_module_level=True)

from stepsaga import Absent, EffectClass
from stepsaga._reconciliation.operator import resolve
from stepsaga.agents import KeyBook, LedgeredTools, Limits
from stepsaga.agents._keys import case_for_key
from stepsaga.errors import InvalidInputError
from stepsaga.ledger import ActionScope, Ledger, Status, open_ledger

Order = Annotated[str, Field(description="The order.")]
Cents = Annotated[int, Field(description="Cents.")]


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite3'}")


def serve(
    ledger: Ledger, tenant: Any = "acme", **options: Any
) -> tuple[MCPServer[Any], list[ActionScope]]:
    server: MCPServer[Any] = MCPServer("t")
    tools = LedgeredTools(server, ledger=ledger, tenant=tenant, **options)
    scopes: list[ActionScope] = []

    @tools.mutating(effect=EffectClass.KEYED_WRITE)
    def create_refund(
        order_id: Order, amount_cents: Cents, *, scope: ActionScope
    ) -> dict[str, Any]:
        scopes.append(scope)
        return {"refund": order_id, "cents": amount_cents}

    @tools.read()
    def lookup(order_id: Order) -> dict[str, Any]:
        return {"order_id": order_id}

    return server, scopes


def call(server: MCPServer[Any], name: str, arguments: dict[str, Any]) -> Any:
    return asyncio.run(server.call_tool(name, arguments, None))


def issue(ledger: Ledger, tenant: str = "acme", cents: int = 5) -> str:
    return KeyBook(ledger).issue(
        tenant, tool="create_refund", args={"order_id": "7", "amount_cents": cents}
    )


def test_the_scope_is_the_servers_tenant_and_the_issued_key(ledger: Ledger) -> None:
    server, scopes = serve(ledger)
    key = issue(ledger)
    result = call(
        server, "create_refund", {"order_id": "7", "amount_cents": 5, "idempotencyKey": key}
    )
    assert result.structured_content == {"refund": "7", "cents": 5}
    assert scopes[0].tenant_id == "acme"
    assert scopes[0].intent.case_id == case_for_key(key)
    assert ledger.list()[0].key == f"acme:{case_for_key(key)}:r1:create_refund"


def test_a_key_never_issued_or_issued_to_another_tenant_is_refused(ledger: Ledger) -> None:
    server, scopes = serve(ledger)
    for key in ("call_abc123-model-made-this", issue(ledger, "globex")):
        result = call(
            server, "create_refund", {"order_id": "7", "amount_cents": 5, "idempotencyKey": key}
        )
        assert result.is_error
        assert result.structured_content["error"] == "NotFoundError"
        assert "was not issued to tenant acme" in result.structured_content["message"]
        assert result.structured_content["reuse_same_key"] is False
    assert scopes == []
    assert ledger.list() == []


def test_the_tenant_can_come_from_the_request_context(ledger: Ledger) -> None:
    seen: list[object] = []

    def tenant_of(context: Context[Any, Any]) -> str:
        seen.append(context)
        return "globex"

    server, scopes = serve(ledger, tenant_of)
    key = issue(ledger, "globex")
    call(server, "create_refund", {"order_id": "7", "amount_cents": 5, "idempotencyKey": key})
    assert scopes[0].tenant_id == "globex"
    assert len(seen) == 1


def test_read_tools_take_no_key_and_write_nothing(ledger: Ledger) -> None:
    server, _ = serve(ledger)
    tools = {tool.name: tool for tool in asyncio.run(server.list_tools())}
    assert "idempotencyKey" not in tools["lookup"].input_schema["properties"]
    assert tools["lookup"].annotations is not None
    assert tools["lookup"].annotations.read_only_hint is True
    assert tools["create_refund"].meta == {"stepsaga/effect": "keyed_write"}
    assert call(server, "lookup", {"order_id": "7"}).structured_content == {"order_id": "7"}
    refused = call(server, "lookup", {"order_id": 7, "extra": 1})
    assert refused.structured_content["error"] == "InvalidInputError"
    assert tools["lookup"].input_schema["additionalProperties"] is False
    assert ledger.list() == []


def test_a_key_only_from_meta_leaves_the_key_out_of_the_schema(ledger: Ledger) -> None:
    server, scopes = serve(ledger, key_in_meta=True)
    (tool,) = [t for t in asyncio.run(server.list_tools()) if t.name == "create_refund"]
    assert "idempotencyKey" not in tool.input_schema["properties"]
    result = call(server, "create_refund", {"order_id": "7", "amount_cents": 5})
    assert result.structured_content["error"] == "InvalidInputError"
    assert "no idempotencyKey from the host" in result.structured_content["message"]
    assert scopes == []


def test_a_host_injected_key_wins_over_the_models(ledger: Ledger) -> None:
    key = issue(ledger)
    server, scopes = serve(ledger, host_key=lambda context: key)
    result = call(
        server,
        "create_refund",
        {"order_id": "7", "amount_cents": 5, "idempotencyKey": "model-invented-key-123"},
    )
    assert result.structured_content == {"refund": "7", "cents": 5}
    assert scopes[0].intent.case_id == case_for_key(key)


def test_the_adapter_refuses_what_would_break_it(ledger: Ledger) -> None:
    tools = LedgeredTools(MCPServer("t"), ledger=ledger, tenant="acme")
    with pytest.raises(InvalidInputError, match="use read"):
        tools.mutating(effect="read")
    with pytest.raises(InvalidInputError, match="adapter's own"):

        @tools.mutating()
        def bad(idempotencyKey: str, *, scope: ActionScope) -> dict[str, Any]:  # noqa: N803
            return {}

    with pytest.raises(InvalidInputError, match="parameter order_id needs a description"):

        @tools.mutating()
        def undescribed(order_id: str, *, scope: ActionScope) -> dict[str, Any]:
            return {}

    with pytest.raises(InvalidInputError, match="no parameter 'amount'"):

        @tools.mutating(params=["amount"])
        def misnamed(order_id: Order, *, scope: ActionScope) -> dict[str, Any]:
            return {}

    with pytest.raises(InvalidInputError, match="busy_wait_s"):
        LedgeredTools(MCPServer("t"), ledger=ledger, tenant="acme", busy_wait_s=-1)


def test_a_concurrent_duplicate_waits_for_the_holder_and_gets_its_result(ledger: Ledger) -> None:
    started, release = threading.Event(), threading.Event()
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        release.set()  # the holder finishes while the duplicate waits

    server: MCPServer[Any] = MCPServer("t")
    tools = LedgeredTools(server, ledger=ledger, tenant="acme", sleep=sleep)
    calls: list[int] = []

    @tools.mutating(effect=EffectClass.KEYED_WRITE)
    def create_refund(
        order_id: Order, amount_cents: Cents, *, scope: ActionScope
    ) -> dict[str, Any]:
        calls.append(amount_cents)
        started.set()
        assert release.wait(10)
        return {"refund": f"RF-{len(calls)}"}

    key = issue(ledger)
    arguments = {"order_id": "7", "amount_cents": 5, "idempotencyKey": key}
    results: list[Any] = []
    holder = threading.Thread(
        target=lambda: results.append(call(server, "create_refund", arguments))
    )
    holder.start()
    assert started.wait(10)
    duplicate = call(server, "create_refund", arguments)
    holder.join(10)
    assert duplicate.structured_content == results[0].structured_content == {"refund": "RF-1"}
    assert calls == [5]
    assert waits  # it waited, bounded by busy_wait_s


def test_a_duplicate_that_outwaits_its_bound_is_told_to_retry_with_the_same_key(
    ledger: Ledger,
) -> None:
    server, _ = serve(ledger, busy_wait_s=0)
    key = issue(ledger)
    # A holder that is still running (its claim is live) — as a second process would leave.
    from stepsaga.agents._keys import KeyBook as Book
    from stepsaga.ledger import Action

    grant = Book(ledger).grant("acme", key)
    action = Action("acme", grant.intent, "create_refund", EffectClass.KEYED_WRITE,
                    {"order_id": "7", "amount_cents": 5})  # fmt: skip
    ledger.claim(action)
    result = call(
        server, "create_refund", {"order_id": "7", "amount_cents": 5, "idempotencyKey": key}
    )
    failure = result.structured_content
    assert failure["error"] == "ActionInProgressError"
    assert failure["retryable"] is True
    assert failure["reuse_same_key"] is True
    assert failure["retry_after_s"] > 0
    assert (
        "retry this call with the SAME idempotencyKey; do not request a new key"
        in failure["advice"]
    )


def test_an_absent_effect_releases_the_key_for_a_retry_with_the_same_key(ledger: Ledger) -> None:
    server: MCPServer[Any] = MCPServer("t")
    tools = LedgeredTools(server, ledger=ledger, tenant="acme")
    attempts: list[int] = []

    def nothing_there(order_id: str, amount_cents: int, *, scope: ActionScope) -> Absent:
        return Absent("no refund holds our key")

    @tools.mutating(effect=EffectClass.KEYED_WRITE, lookup=nothing_there)
    def create_refund(
        order_id: Order, amount_cents: Cents, *, scope: ActionScope
    ) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) == 1:
            raise TimeoutError("read timed out")  # unexpected: UNKNOWN for a keyed write
        return {"refund": "RF-1"}

    key = issue(ledger)
    arguments = {"order_id": "7", "amount_cents": 5, "idempotencyKey": key}
    first = call(server, "create_refund", arguments)
    assert first.structured_content["error"] == "TransientError"
    assert first.structured_content["reuse_same_key"] is True
    assert "absent downstream: no refund holds our key" in first.structured_content["message"]
    assert ledger.list()[0].status is Status.RELEASED
    assert call(server, "create_refund", arguments).structured_content == {"refund": "RF-1"}
    assert ledger.list()[0].status is Status.COMPLETED


def test_a_broken_lookup_still_answers_a_structured_failure(ledger: Ledger) -> None:
    server: MCPServer[Any] = MCPServer("t")
    tools = LedgeredTools(server, ledger=ledger, tenant="acme")

    def broken(order_id: str, amount_cents: int, *, scope: ActionScope) -> Absent:
        raise ValueError("bug in the lookup")

    @tools.mutating(effect=EffectClass.KEYED_WRITE, lookup=broken)
    def create_refund(
        order_id: Order, amount_cents: Cents, *, scope: ActionScope
    ) -> dict[str, Any]:
        raise TimeoutError("read timed out")

    key = issue(ledger)
    result = call(
        server, "create_refund", {"order_id": "7", "amount_cents": 5, "idempotencyKey": key}
    )
    failed = result.structured_content
    assert result.is_error
    assert failed["error"] == "StepSagaError"
    assert failed["reuse_same_key"] is True
    assert "unexpected ValueError" in failed["message"]
    assert "bug in the lookup" not in result.content[0].text  # details stay in the log
    assert ledger.list()[0].status is Status.UNKNOWN


@settings(max_examples=25, deadline=None)
@given(
    calls=st.lists(
        st.tuples(st.sampled_from(["create_refund", "issue_credit"]), st.sampled_from([5, 6])),
        min_size=1,
        max_size=6,
    ),
    unbound=st.booleans(),
)
def test_one_key_is_at_most_one_effect_whatever_the_model_sends(
    tmp_path_factory: pytest.TempPathFactory, calls: list[tuple[str, int]], unbound: bool
) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path_factory.mktemp('k') / 'ledger.sqlite3'}")
    server: MCPServer[Any] = MCPServer("t")
    tools = LedgeredTools(server, ledger=ledger, tenant="acme")
    effects: list[tuple[str, int]] = []

    def tool(name: str) -> None:
        @tools.mutating(effect=EffectClass.KEYED_WRITE, name=name)
        def run(order_id: Order, amount_cents: Cents, *, scope: ActionScope) -> dict[str, Any]:
            effects.append((name, amount_cents))
            return {"tool": name, "cents": amount_cents}

    tool("create_refund")
    tool("issue_credit")
    book = KeyBook(ledger)
    key = (
        book.issue("acme", unbound=True)
        if unbound
        else book.issue("acme", tool="create_refund", args={"order_id": "7", "amount_cents": 5})
    )
    answers = [
        call(server, name, {"order_id": "7", "amount_cents": cents, "idempotencyKey": key})
        for name, cents in calls
    ]
    assert len(effects) <= 1
    succeeded = [a.structured_content for a in answers if not a.is_error]
    assert all(answer == succeeded[0] for answer in succeeded)
    if not unbound:
        assert set(effects) <= {("create_refund", 5)}
    for answer in answers:
        if answer.is_error:
            assert answer.structured_content["error"] == "ActionConflictError"
    ledger.close()


class Refund(BaseModel):
    """A typed result: its JSON form (alias, ISO time) is what the ledger keeps."""

    model_config = ConfigDict(populate_by_name=True)

    refund_id: str = Field(alias="refundId")
    cents: int
    at: datetime


def test_a_tool_returning_a_model_succeeds_and_its_retry_replays_the_same_result(
    ledger: Ledger,
) -> None:
    server: MCPServer[Any] = MCPServer("t")
    tools = LedgeredTools(server, ledger=ledger, tenant="acme")
    calls: list[int] = []

    @tools.mutating(effect=EffectClass.KEYED_WRITE)
    def create_refund(order_id: Order, amount_cents: Cents, *, scope: ActionScope) -> Refund:
        calls.append(amount_cents)
        return Refund(refund_id="RF-1", cents=amount_cents, at=datetime(2026, 1, 2, tzinfo=UTC))

    key = issue(ledger)
    arguments = {"order_id": "7", "amount_cents": 5, "idempotencyKey": key}
    first, retry = (call(server, "create_refund", arguments) for _ in range(2))
    expected = {"refundId": "RF-1", "cents": 5, "at": "2026-01-02T00:00:00Z"}
    assert not first.is_error, first.content
    assert first.structured_content == expected
    assert not retry.is_error
    assert retry.structured_content == expected
    assert json.loads(retry.content[0].text) == expected
    assert calls == [5]
    (record,) = ledger.list()
    assert record.status is Status.COMPLETED
    assert record.result == expected
    assert ledger.list_items() == []


class Parcel(BaseModel):
    tracking: str


class Shipped(BaseModel):
    shipment_id: str
    parcel: Parcel  # a nested model: the schema's $defs


def test_a_typed_tool_publishes_its_result_or_reconciled_and_a_retry_after_resolve_fits(
    ledger: Ledger,
) -> None:
    server: MCPServer[Any] = MCPServer("t")
    tools = LedgeredTools(server, ledger=ledger, tenant="acme")
    shapes: list[dict[str, Any]] = [{"shipment_id": "SH-1"}]  # a bug: no parcel

    @tools.mutating(effect=EffectClass.PHYSICAL, name="create_refund")
    def ship(order_id: Order, amount_cents: Cents, *, scope: ActionScope) -> Shipped:
        return shapes.pop(0)  # type: ignore[return-value]

    (tool,) = asyncio.run(server.list_tools())
    schema = tool.output_schema
    assert schema is not None
    assert schema["type"] == "object"
    assert [branch["title"] for branch in schema["anyOf"]] == ["Shipped", "Reconciled"]
    assert "Parcel" in schema["$defs"]
    key = issue(ledger)
    arguments = {"order_id": "7", "amount_cents": 5, "idempotencyKey": key}
    first = call(server, "create_refund", arguments)
    # The effect ran but its result is not the declared type: unrecorded, a person decides.
    assert first.structured_content["error"] == "OutcomeUnknownError"
    (item,) = ledger.list_items()
    evidence = json.dumps(item.evidence)
    assert "outside its outputSchema: the result: 'parcel' is a required property" in evidence
    assert "SH-1" not in evidence  # named by path and rule, never by the result's values
    resolve(ledger, item.item_id, "applied", "ops@acme.example", "SH-1 left",
            send_task_success=None)  # fmt: skip
    retry = call(server, "create_refund", arguments)
    assert not retry.is_error, retry.content
    assert retry.structured_content["reconciled"]["item_id"] == item.item_id
    validator = validators.validator_for(schema)(schema)  # as an MCP client checks it
    assert list(validator.iter_errors(retry.structured_content)) == []
    assert list(validator.iter_errors({"shipment_id": "SH-1"})) != []


def test_a_key_issued_for_a_tool_fills_its_defaults_so_calls_with_or_without_them_match(
    ledger: Ledger,
) -> None:
    server: MCPServer[Any] = MCPServer("t")
    tools = LedgeredTools(server, ledger=ledger, tenant="acme")
    refunds: list[tuple[str, int, str]] = []

    @tools.mutating(effect=EffectClass.KEYED_WRITE)
    def create_refund(
        order_id: Order,
        amount_cents: Cents,
        currency: Annotated[str, Field(description="ISO currency.")] = "EUR",
        *,
        scope: ActionScope,
    ) -> dict[str, Any]:
        refunds.append((order_id, amount_cents, currency))
        return {"refund": f"RF-{len(refunds)}"}

    approved = {"order_id": "7", "amount_cents": 5}  # the person approved the default EUR
    key = tools.issue("acme", "create_refund", args=approved, approved_by="ops@acme.example")
    answers = [
        call(server, "create_refund", approved | extra | {"idempotencyKey": key})
        for extra in ({}, {"currency": "EUR"}, {"currency": "USD"})
    ]
    assert [a.structured_content.get("refund") for a in answers[:2]] == ["RF-1", "RF-1"]
    assert answers[2].structured_content["error"] == "ActionConflictError"
    assert refunds == [("7", 5, "EUR")]
    assert KeyBook(ledger).grant("acme", key).approved_by == "ops@acme.example"
    # What a call would be refused for is refused when issuing, naming the field.
    for tool, args, field in (
        ("create_refund", {"order_id": 7, "amount_cents": 5}, "order_id"),
        ("create_refund", approved | {"note": "x"}, "note"),
        ("create_refund", {"order_id": "7"}, "amount_cents"),
        ("issue_credit", approved, "tool"),
    ):
        with pytest.raises(InvalidInputError) as refused:
            tools.issue("acme", tool, args=args)
        assert refused.value.data["field"] == field
    with pytest.raises(InvalidInputError, match="no parameter 'amount'"):
        tools.issue("acme", "create_refund", limits=Limits(at_most={"amount": 5}))
    bounded = tools.issue("acme", "create_refund", limits=Limits(at_most={"amount_cents": 5}))
    assert KeyBook(ledger).grant("acme", bounded).limits == Limits(at_most={"amount_cents": 5})


def test_destructive_overrides_the_effect_classs_default_hint(ledger: Ledger) -> None:
    server: MCPServer[Any] = MCPServer("t")
    tools = LedgeredTools(server, ledger=ledger, tenant="acme")
    cases = {  # tool: (effect, destructive=, published destructiveHint)
        "refund": (EffectClass.KEYED_WRITE, None, True),
        "refund_quietly": (EffectClass.KEYED_WRITE, False, False),
        "ship": (EffectClass.PHYSICAL, None, True),
        "put_note": (EffectClass.BLIND_WRITE, None, False),
        "overwrite_note": (EffectClass.BLIND_WRITE, True, True),
    }
    for tool, (effect, destructive, _) in cases.items():

        @tools.mutating(effect=effect, name=tool, destructive=destructive)
        def run(order_id: Order, *, scope: ActionScope) -> dict[str, Any]:
            return {}

    listed = {tool.name: tool for tool in asyncio.run(server.list_tools())}
    for tool, (_, _, hint) in cases.items():
        annotations = listed[tool].annotations
        assert annotations is not None
        assert annotations.destructive_hint is hint, tool
        assert annotations.read_only_hint is False
        assert annotations.idempotent_hint is True
