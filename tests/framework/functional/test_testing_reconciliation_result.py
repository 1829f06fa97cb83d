"""``reconciliation_result`` mocks every reconciler state, ``AwaitDecision…`` included:
there the mock config holds the operator's decision (the ``SendTaskSuccess`` output), not a
Lambda ``Payload``, and the execution goes on as a real decision would take it, on the
embedded engine and on a Step Functions API (moto's interpreter)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from stepsaga.testing import MockConfigBuilder, SagaRunner
from stepsaga.testing._scenarios import reconciliation_result
from tests.scenarios import REPLACEMENT_ORDER_SCENARIOS, replacement_order_input
from workflows.replacement_order import saga

_WAITING = next(s for s in REPLACEMENT_ORDER_SCENARIOS if s.name == "RefundOutcomeUnknown")
#: The same route, the operator's decision mocked with the test kit's constructor.
SCENARIO = replace(
    _WAITING,
    name="RefundDecidedWithTheKit",
    mocks={
        **_WAITING.mocks,
        "AwaitDecisionRefundPayment": (reconciliation_result("applied", "RECON-REFUND-1"),),
    },
)


@pytest.fixture
def stepsaga_mock_config() -> MockConfigBuilder:
    return MockConfigBuilder().test_case(saga.name, SCENARIO.name, SCENARIO.mocks)


@pytest.mark.parametrize("runner", ["engine_backend", "moto_backend"])
def test_a_mocked_decision_lets_the_waiting_case_go_on(
    runner: str, request: pytest.FixtureRequest
) -> None:
    backend: SagaRunner = request.getfixturevalue(runner)
    arn = backend.deploy_saga(saga)
    execution = backend.run(arn, replacement_order_input(), test_case=SCENARIO.name)
    SCENARIO.check(execution.history)
    assert (execution.status, execution.error) == ("SUCCEEDED", None)


def test_the_decision_is_the_callback_output_and_other_states_keep_the_payload() -> None:
    built = MockConfigBuilder().test_case(
        saga.name,
        "shapes",
        {
            "AwaitDecisionRefundPayment": reconciliation_result("not_applied", "RECON-1"),
            "ReconcileRefundPayment": reconciliation_result("undecided", "RECON-1"),
        },
    )
    responses = built.to_dict()["MockedResponses"]
    (decision,) = [r["0"]["Return"] for n, r in responses.items() if n.startswith("Await")]
    (reconciled,) = [r["0"]["Return"] for n, r in responses.items() if n.startswith("Recon")]
    assert decision["outcome"] == "not_applied"
    assert decision["item_id"] == "RECON-1"
    assert "Payload" not in decision
    assert reconciled["Payload"] == {"outcome": "undecided", "item_id": "RECON-1"}


def test_an_undecided_decision_is_refused_when_the_config_is_built() -> None:
    with pytest.raises(ValueError, match="waits for an operator's decision"):
        MockConfigBuilder().test_case(
            saga.name, "bad", {"AwaitDecisionRefundPayment": reconciliation_result("undecided")}
        )
