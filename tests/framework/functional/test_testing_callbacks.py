"""The other way to test a reconciliation path on the embedded engine: leave the
``AwaitDecision…`` state unmocked, handle its event in-process (``stepsaga_handlers``) and
answer the task token with ``send_task_success``, as ``stepsaga recon resolve`` does.

The scenario library mocks that state instead (its mocked result is the callback output),
because Step Functions Local can only run it that way without a Lambda endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stepsaga.engine import Handler, LocalEngine
from stepsaga.testing import (
    EngineBackend,
    MockConfigBuilder,
    assert_caught,
    assert_outcome,
    assert_path,
)
from stepsaga.workflow._events import (
    AwaitDecisionEvent,
    OperatorDecision,
    ReconciliationOutcome,
    parse_reconciliation_event,
)
from tests.scenarios import REPLACEMENT_ORDER_SCENARIOS, replacement_order_input
from workflows.replacement_order import saga

UNKNOWN = next(s for s in REPLACEMENT_ORDER_SCENARIOS if s.name == "RefundOutcomeUnknown")
WAITING: list[AwaitDecisionEvent[Any]] = []


@pytest.fixture
def stepsaga_mock_config() -> MockConfigBuilder:
    mocks = {k: v for k, v in UNKNOWN.mocks.items() if k != "AwaitDecisionRefundPayment"}
    return MockConfigBuilder().test_case("replacement-order", "OperatorDecides", mocks)


@pytest.fixture
def stepsaga_handlers() -> Mapping[str, Handler]:
    WAITING.clear()

    def reconcile(event: Any, context: Any) -> dict[str, Any]:
        # Stands in for compensations/reconcile.py: it would attach the token to the open
        # reconciliation item; the Lambda's return value is ignored by .waitForTaskToken.
        parsed = parse_reconciliation_event(event)
        assert isinstance(parsed, AwaitDecisionEvent)
        WAITING.append(parsed)
        return {"waiting": parsed.item_id}

    return {"Reconcile": reconcile}


def test_an_operator_decision_sent_with_the_task_token_resumes_the_saga(
    local_engine: LocalEngine, engine_backend: EngineBackend
) -> None:
    arn = engine_backend.deploy_saga(saga)
    waiting = engine_backend.run(arn, replacement_order_input(), test_case="OperatorDecides")

    assert waiting.status == "RUNNING"
    assert_outcome(waiting.history, "RUNNING")
    assert waiting.history.path[-1] == "AwaitDecisionRefundPayment"
    (event,) = WAITING
    assert (event.step, event.item_id) == ("RefundPayment", "RECON-REFUND-1")
    (task,) = local_engine.list_waiting_tasks()
    assert (task.state_name, task.task_token) == ("AwaitDecisionRefundPayment", event.task_token)

    decision = OperatorDecision(
        outcome=ReconciliationOutcome.APPLIED, item_id="RECON-REFUND-1", decided_by="ops"
    )
    local_engine.send_task_success(event.task_token, decision.model_dump(mode="json"))

    history = local_engine.get_execution_history(waiting.arn)
    assert_path(history, UNKNOWN.path)
    assert_caught(history, "RefundPayment", "OutcomeUnknownError")
    assert_outcome(history, "SUCCEEDED")
