# test_my_saga.py — needs stepsaga's testing extra, which loads the pytest plugin.
import pytest
from my_sagas import returns

from stepsaga.testing import (
    MockConfigBuilder,
    Return,
    SagaRunner,
    Throw,
    assert_caught,
    assert_outcome,
    assert_path,
    assert_retries,
    step_result,
)

CASE = {  # the execution input: what `stepsaga start` would send for an approved case
    "tenant_id": "acme",
    "case_id": "RET-1",
    "approval": {
        "approved_by": "ops@acme.example",
        "approved_at": "2026-11-29T09:30:00Z",
        "revision": 1,
    },
    "label": {"carrier": "dhl", "weight_grams": 800},
    "refund": {"payment_id": "PAY-1", "amount": "20.00", "currency": "USD"},
}


def completed(result: dict) -> Return:
    """A handler's StepResult, as the lambda:invoke task returns it."""
    return step_result("acme:RET-1:r1", result)


@pytest.fixture
def stepsaga_mock_config() -> MockConfigBuilder:
    """The test cases: each state's responses, one per invocation, retries included."""
    label = completed({"label_id": "L-1"})
    throttled = {
        "IssueLabel": label,
        "RefundPayment": [
            Throw("TransientError", "payments: throttled", times=2),
            completed({"refund_id": "R-1"}),
        ],
    }
    rejected = {
        "IssueLabel": label,
        "RefundPayment": Throw("BusinessRejectedError", "payments: already refunded"),
        "VoidLabel": completed({"voided": True}),
    }
    return (
        MockConfigBuilder()
        .test_case("returns", "RefundThrottled", throttled)
        .test_case("returns", "RefundRejected", rejected)
    )


# `saga_backend` runs each test on the embedded engine, moto, LocalStack (marked `localstack`:
# skipped, with the reason, when it is not installed) and Step Functions Local (marked
# `docker`: skipped, with the reason, when no Docker daemon answers).
def test_a_throttled_refund_is_retried(saga_backend: SagaRunner) -> None:
    arn = saga_backend.deploy_saga(returns)
    history = saga_backend.run(arn, CASE, test_case="RefundThrottled").history
    assert_path(history, ["IssueLabel", "RefundPayment"])
    assert_retries(history, "RefundPayment", 2)
    assert_outcome(history, "SUCCEEDED")


def test_a_rejected_refund_voids_the_label(saga_backend: SagaRunner) -> None:
    arn = saga_backend.deploy_saga(returns)
    history = saga_backend.run(arn, CASE, test_case="RefundRejected").history
    assert_path(history, ["IssueLabel", "RefundPayment", "VoidLabel", "Compensated"])
    assert_caught(history, "RefundPayment", "BusinessRejectedError", next_state="VoidLabel")
    assert_outcome(history, "FAILED", error="Saga.Compensated")
