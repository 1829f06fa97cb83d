"""Each way an action can be refused or go wrong, and the error name Step Functions sees."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from services import RefundRequest
from stepsaga import CallContext
from stepsaga._aws import metric_names
from stepsaga._model.money import Money
from stepsaga._util.clock import ManualClock
from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    AttemptBudgetExhaustedError,
    BudgetExhaustedError,
    BusinessRejectedError,
    IllegalTransitionError,
    OutcomeUnknownError,
    ReplayWindowExpiredError,
    StoreUnavailableError,
    TransientError,
)
from stepsaga.ledger import LedgerPolicy, Status
from stepsaga.ledger._models import Claim
from tests.framework.unit.handlers.conftest import WorldFactory
from tests.framework.unit.handlers.helpers import NOW, World, case_input, fault, step_event

REFUND_KEY = "acme:CASE-1001:r1:refund_payment"


def refund_event(**refund: Any) -> dict[str, Any]:
    base = {"payment_id": "PAY-991", "amount": "20.00", "currency": "USD"}
    case = case_input(refund={**base, **refund})
    return step_event("RefundPayment", case)


def refunds(world: World) -> int:
    return len(world.effects("refund"))


def test_same_key_other_parameters_is_a_conflict_and_changes_nothing(world: World) -> None:
    world.run("RefundPayment", refund_event())

    with pytest.raises(ActionConflictError) as caught:
        world.run("RefundPayment", refund_event(amount="25.00"))

    assert caught.value.data["key"] == REFUND_KEY
    assert world.metrics.total(metric_names.ACTION_CONFLICT) == 1
    assert refunds(world) == 1
    record = world.ledger.get(REFUND_KEY)
    assert record is not None
    assert record.status is Status.COMPLETED


def test_equal_amounts_written_differently_are_the_same_action(world: World) -> None:
    first = world.run("RefundPayment", refund_event(amount="20.00"))
    again = world.run("RefundPayment", refund_event(amount="20"))

    assert again["replayed"] is True
    assert again["result"] == first["result"]


def test_downstream_key_conflict_is_recorded_failed(world: World) -> None:
    # Someone else used our key downstream with another amount.
    ctx = CallContext("acme", "CASE-1001", REFUND_KEY)
    world.deps.clients.payments.refund(
        ctx, RefundRequest("PAY-991", Money(999, "USD"), idempotency_key=REFUND_KEY)
    )

    with pytest.raises(ActionConflictError):
        world.run("RefundPayment", refund_event())
    with pytest.raises(ActionConflictError):
        world.run("RefundPayment", refund_event())  # replayed, not sent again

    record = world.ledger.get(REFUND_KEY)
    assert record is not None
    assert record.status is Status.FAILED
    assert refunds(world) == 1  # only the other one


def test_tenant_budget_exhausted_debits_and_sends_nothing(world: World) -> None:
    world.ledger.set_budget("acme", 0)

    with pytest.raises(BudgetExhaustedError):
        world.run("RefundPayment", refund_event())

    assert world.metrics.total(metric_names.BUDGET_EXHAUSTED) == 1
    assert world.ledger.get(REFUND_KEY) is None
    assert refunds(world) == 0


def test_a_budget_is_debited_once_per_action(world: World) -> None:
    world.ledger.set_budget("acme", 5)
    world.run("RefundPayment", refund_event())
    world.run("RefundPayment", refund_event())
    assert world.ledger.budget("acme") == 4


def test_attempt_budget_bounds_recovery_across_retries(make: WorldFactory) -> None:
    world = make(
        policy=LedgerPolicy(attempt_budget=2),
        faults={"faults": [fault("refund", "throttle")]},
    )
    for _ in range(2):
        with pytest.raises(TransientError):
            world.run("RefundPayment", refund_event())

    with pytest.raises(AttemptBudgetExhaustedError):
        world.run("RefundPayment", refund_event())
    assert world.metrics.total(metric_names.BUDGET_EXHAUSTED) == 1


def test_intent_older_than_the_retention_window_is_refused(make: WorldFactory) -> None:
    world = make(clock=ManualClock(NOW + timedelta(days=31)))
    with pytest.raises(ReplayWindowExpiredError):
        world.run("RefundPayment", refund_event())
    assert refunds(world) == 0


def test_a_live_claim_elsewhere_means_in_progress(world: World) -> None:
    from stepsaga._handlers.identity import action_of
    from stepsaga.workflow._events import StepEvent, parse_event
    from tasks.refund_payment import RefundPayment
    from workflows.replacement_order import RefundPaymentEvent

    parsed: StepEvent[Any] = parse_event(RefundPaymentEvent, refund_event())
    action = action_of(
        parsed, "refund_payment", parsed.effect, RefundPayment().consequential(parsed.params), 1
    )
    assert isinstance(world.ledger.claim(action), Claim)

    with pytest.raises(ActionInProgressError) as caught:
        world.run("RefundPayment", refund_event())

    assert 0 < caught.value.retry_after_seconds <= 60
    assert refunds(world) == 0


def test_losing_the_claim_before_recording_replays_the_winner(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    def lost(*args: Any, **kwargs: Any) -> Any:
        raise IllegalTransitionError("cannot record COMPLETED; the claim is no longer held")

    monkeypatch.setattr(world.deps.ledger, "complete", lost)
    with pytest.raises(ActionInProgressError):
        world.run("RefundPayment", refund_event())


def test_a_ledger_outage_after_the_effect_is_retried_and_found(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = world.deps.ledger
    real = ledger.complete
    outages = iter([StoreUnavailableError("ledger busy")])

    def flaky(*args: Any, **kwargs: Any) -> Any:
        error = next(outages, None)
        if error is not None:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(ledger, "complete", flaky)
    with pytest.raises(StoreUnavailableError):
        world.run("RefundPayment", refund_event())
    world.clock.advance(61)
    result = world.run("RefundPayment", refund_event())

    assert result["replayed"] is False
    assert refunds(world) == 1


def test_unexpected_error_in_a_keyed_call_is_an_uncertain_outcome(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("surprise")

    monkeypatch.setattr(world.deps.clients.payments, "refund", broken)
    with pytest.raises(OutcomeUnknownError) as caught:
        world.run("RefundPayment", refund_event())

    assert isinstance(caught.value.__cause__, KeyError)
    record = world.ledger.get(REFUND_KEY)
    assert record is not None
    assert record.status is Status.UNKNOWN


def test_unexpected_error_before_any_effect_is_transient(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ledger bug")

    monkeypatch.setattr(world.deps.ledger, "claim", broken)
    with pytest.raises(TransientError) as caught:
        world.run("RefundPayment", refund_event())
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert refunds(world) == 0


def test_amount_finer_than_the_currency_is_invalid_input(world: World) -> None:
    from stepsaga.errors import InvalidInputError

    event = refund_event()
    event["params"]["amount"] = "20.001"
    with pytest.raises(InvalidInputError) as caught:
        world.run("RefundPayment", event)
    assert caught.value.data["field"].startswith("params")
    assert refunds(world) == 0


def test_a_refusal_counts_as_a_routed_error_and_a_transient_does_not(make: WorldFactory) -> None:
    """Lambda counts both in ``Errors``; only the refusal is an outcome the machine routes,
    so the technical Lambda-errors alarm subtracts ``RoutedError``."""
    rejected = make(faults={"faults": [fault("refund", "reject")]})
    with pytest.raises(BusinessRejectedError):
        rejected.run("RefundPayment", refund_event())
    assert rejected.metrics.total(metric_names.ROUTED_ERROR) == 1

    throttled = make(faults={"faults": [fault("refund", "throttle")]})
    with pytest.raises(TransientError):
        throttled.run("RefundPayment", refund_event())
    assert throttled.metrics.total(metric_names.ROUTED_ERROR) == 0
