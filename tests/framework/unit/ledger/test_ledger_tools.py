"""The agent-tool decorator: the key comes from an explicit scope, never from inside the tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepsaga import EffectClass
from stepsaga.errors import ActionConflictError, InvalidInputError
from stepsaga.ledger import ActionScope, Intent, Ledger, ledgered_tool, open_ledger
from tests.framework.conformance.ledger.helpers import APPROVED_AT


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return open_ledger(f"sqlite:///{tmp_path / 'tools.db'}")


SCOPE = ActionScope("acme", Intent("CASE-1", 1, APPROVED_AT))


def test_a_tool_runs_once_per_intent_and_replays(ledger: Ledger) -> None:
    calls: list[str] = []

    @ledgered_tool(ledger, operation="create_refund", effect=EffectClass.KEYED_WRITE)
    def create_refund(
        order_id: str, amount: dict[str, Any], *, scope: ActionScope
    ) -> dict[str, Any]:
        calls.append(scope.key("create_refund"))
        return {"refund_id": f"RF-{order_id}"}

    money = {"amount": "20.00", "currency": "USD"}
    assert create_refund("7", money, scope=SCOPE) == {"refund_id": "RF-7"}
    assert create_refund("7", {"amount": 20, "currency": "usd"}, scope=SCOPE) == {
        "refund_id": "RF-7"
    }
    assert calls == ["acme:CASE-1:r1:create_refund"]
    record = ledger.get("acme:CASE-1:r1:create_refund")
    assert record is not None
    assert record.effect is EffectClass.KEYED_WRITE


def test_changed_arguments_for_the_same_intent_conflict(ledger: Ledger) -> None:
    @ledgered_tool(ledger, operation="create_refund")
    def create_refund(amount: str, scope: ActionScope) -> dict[str, Any]:
        return {"ok": True}

    create_refund("20.00", scope=SCOPE)
    with pytest.raises(ActionConflictError):
        create_refund("21.00", scope=SCOPE)


def test_only_named_params_make_the_digest(ledger: Ledger) -> None:
    @ledgered_tool(ledger, operation="notify", params=["to"])
    def notify(to: str, trace_id: str, scope: ActionScope) -> dict[str, Any]:
        return {"sent_to": to}

    notify("a@example.com", "trace-1", scope=SCOPE)
    assert notify("a@example.com", "trace-2", scope=SCOPE) == {"sent_to": "a@example.com"}


def test_the_scope_must_be_passed_explicitly(ledger: Ledger) -> None:
    @ledgered_tool(ledger, operation="ship")
    def ship(address: str, scope: ActionScope | None = None) -> dict[str, Any]:
        return {"ok": True}

    with pytest.raises(InvalidInputError, match="explicit scope"):
        ship("1 Main St")
    with pytest.raises(InvalidInputError, match="explicit scope"):
        ship("1 Main St", scope="call_abc123")  # type: ignore[arg-type]
    assert ledger.list() == []


def test_a_tool_without_a_scope_parameter_is_refused_at_decoration(ledger: Ledger) -> None:
    with pytest.raises(InvalidInputError, match="parameter 'scope'"):

        @ledgered_tool(ledger, operation="ship")
        def ship(address: str) -> dict[str, Any]:
            return {"ok": True}

    with pytest.raises(InvalidInputError, match="no parameter 'amount'"):

        @ledgered_tool(ledger, operation="ship", params=["amount"])
        def ship2(address: str, scope: ActionScope) -> dict[str, Any]:
            return {"ok": True}


def test_undeclared_tools_are_physical_and_the_ledger_can_be_a_factory(tmp_path: Path) -> None:
    opened: list[Ledger] = []

    def factory() -> Ledger:
        if not opened:
            opened.append(open_ledger(f"sqlite:///{tmp_path / 'lazy.db'}"))
        return opened[0]

    @ledgered_tool(factory, operation="print_label")
    def print_label(scope: ActionScope) -> dict[str, Any]:
        return {"label": "L-1"}

    assert not opened  # nothing opened at import/decoration time
    print_label(scope=SCOPE)
    record = opened[0].get(SCOPE.key("print_label"))
    assert record is not None
    assert record.effect is EffectClass.PHYSICAL


def test_the_scope_carries_the_session_write_and_metrics_count_per_tenant(
    ledger: Ledger,
) -> None:
    from stepsaga._aws import metric_names
    from stepsaga._handlers.metrics import RecordingMetrics
    from stepsaga.errors import BudgetExhaustedError
    from stepsaga.ledger._writes import ExtraWrite, Writes

    metrics = RecordingMetrics()

    @ledgered_tool(ledger, operation="create_refund", cost=40, metrics=metrics)
    def create_refund(amount: str, scope: ActionScope) -> dict[str, Any]:
        return {"refund_id": f"RF-{amount}"}

    session = ExtraWrite("TENANT#acme#SESSION#s1", "META", {"cursor": 1})
    scope = ActionScope("acme", Intent("CASE-1", 1, APPROVED_AT), writes=Writes((), [session]))
    ledger.set_budget("acme", 50)
    create_refund("20.00", scope=scope)
    create_refund("20.00", scope=scope)
    assert ledger.get_extra("TENANT#acme#SESSION#s1", "META") == {"cursor": 1}
    with pytest.raises(ActionConflictError):
        create_refund("21.00", scope=scope)
    with pytest.raises(BudgetExhaustedError):
        create_refund("20.00", scope=ActionScope("acme", Intent("CASE-2", 1, APPROVED_AT)))
    assert [name for name, _ in metrics.counted] == [
        metric_names.DUPLICATE_REPLAYED,
        metric_names.ACTION_CONFLICT,
        metric_names.BUDGET_EXHAUSTED,
    ]
    assert metrics.counted[0][1] == {
        "tenant_id": "acme",
        "tool": "create_refund",
        "action_key": "acme:CASE-1:r1:create_refund",
    }


def test_a_transaction_conflict_counts_as_its_own_metric() -> None:
    from stepsaga._aws import metric_names
    from stepsaga._handlers.metrics import RecordingMetrics
    from stepsaga.errors import StoreUnavailableError
    from stepsaga.ledger import Action
    from stepsaga.ledger._tools import count_tool_metric

    metrics = RecordingMetrics()
    action = Action("acme", SCOPE.intent, "create_refund")
    conflict = StoreUnavailableError("busy", code="TransactionConflict")
    assert count_tool_metric(metrics, action, error=conflict) == metric_names.TRANSACTION_CONFLICT
    assert count_tool_metric(metrics, action, error=StoreUnavailableError("busy")) is None
    assert metrics.total(metric_names.TRANSACTION_CONFLICT) == 1
    assert metrics.counted[0][1]["tenant_id"] == "acme"
