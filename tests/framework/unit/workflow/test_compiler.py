"""The compiled replacement-order machine: its states, its error routes, its data flow."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stepsaga import Compensate, EffectClass, Escalate, RetryPolicy, Saga, Step
from stepsaga.errors import (
    COMPENSATE,
    LAMBDA_SERVICE_ERRORS,
    LAMBDA_TIMEOUT_ERRORS,
    RECONCILE,
    RETRYABLE,
    SAGA_COMPENSATED,
    SAGA_COMPENSATION_FAILED,
    names,
)
from stepsaga.workflow import compile
from stepsaga.workflow._compiler import LAMBDA_INVOKE, LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN
from stepsaga.workflow._retry import DEFAULT_RETRY, NEVER_RETRIED
from stepsaga.workflow._validate import transitions
from tests.framework.unit.workflow.asl_eval import Script, ScriptedError, walk
from workflows.case import Case

OK = {"action_key": "k", "status": "COMPLETED", "result": {}, "replayed": False}
UNDECIDED = {"outcome": "undecided", "item_id": "R-1"}

STATES = [
    "ReserveStock",
    "ReconcileReserveStock",
    "ReserveStockDecision",
    "AwaitDecisionReserveStock",
    "RefundPayment",
    "ReconcileRefundPayment",
    "RefundPaymentDecision",
    "AwaitDecisionRefundPayment",
    "CreateShipment",
    "ReconcileCreateShipment",
    "CreateShipmentDecision",
    "AwaitDecisionCreateShipment",
    "EscalateRefundPayment",
    "ReleaseReservation",
    "RecordReleaseReservationFailure",
    "ReleaseReservationDecision",
    "Compensated",
    "CompensationFailed",
]
FORWARD = ["ReserveStock", "RefundPayment", "CreateShipment"]


def test_state_list(definition: dict[str, Any]) -> None:
    assert definition["StartAt"] == "ReserveStock"
    assert definition["States"]["CreateShipment"]["End"] is True
    assert "Next" not in definition["States"]["CreateShipment"]
    assert list(definition["States"]) == STATES


def test_every_task_is_a_lambda_invoke_with_a_function_placeholder(
    definition: dict[str, Any],
) -> None:
    for name, state in definition["States"].items():
        if state["Type"] != "Task":
            continue
        assert state["Resource"] in (LAMBDA_INVOKE, LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN), name
        function = state["Parameters"]["FunctionName"]
        assert function.startswith("${"), name
        assert function.endswith("FunctionArn}"), name
        assert set(state["Parameters"]) == {"FunctionName", "Payload"}
        assert isinstance(state["TimeoutSeconds"], int)


def test_only_the_decision_waits_for_a_token(definition: dict[str, Any]) -> None:
    waits = [
        n
        for n, s in definition["States"].items()
        if s.get("Resource") == LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN
    ]
    assert waits == [f"AwaitDecision{step}" for step in FORWARD]
    wait = definition["States"]["AwaitDecisionCreateShipment"]
    assert wait["Parameters"]["Payload"]["task_token.$"] == "$$.Task.Token"
    assert wait["TimeoutSeconds"] == 7 * 24 * 3600
    assert "HeartbeatSeconds" not in wait
    assert wait["Next"] == "CreateShipmentDecision"


@pytest.mark.parametrize("step", FORWARD)
def test_forward_retry_is_the_default_envelopes(definition: dict[str, Any], step: str) -> None:
    retry = definition["States"][step]["Retry"]
    assert retry == [policy.to_asl() for policy in DEFAULT_RETRY]
    assert [r["ErrorEquals"] for r in retry][:2] == [
        list(LAMBDA_SERVICE_ERRORS),
        list(LAMBDA_TIMEOUT_ERRORS),
    ]
    for retrier in retry:
        assert retrier["JitterStrategy"] == "FULL"
        assert retrier["MaxDelaySeconds"] >= retrier["IntervalSeconds"]
        assert 1 <= retrier["MaxAttempts"] <= 10


def test_a_decision_wait_never_retries_its_timeout(definition: dict[str, Any]) -> None:
    """``States.Timeout`` of a task-token wait is the end of the decision window."""
    waits = [
        s
        for s in definition["States"].values()
        if s.get("Resource") == LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN
    ]
    assert waits
    for wait in waits:
        retried = {e for r in wait["Retry"] for e in r["ErrorEquals"]}
        assert not retried & set(LAMBDA_TIMEOUT_ERRORS)
        assert "ActionInProgressError" in retried


def test_never_retried_errors_appear_in_no_retrier(definition: dict[str, Any]) -> None:
    for state in definition["States"].values():
        for retrier in state.get("Retry", []):
            assert not set(retrier["ErrorEquals"]) & set(NEVER_RETRIED)
            assert "States.ALL" not in retrier["ErrorEquals"]


@pytest.mark.parametrize("step", FORWARD)
def test_forward_catch_routes_rejection_to_compensation_and_doubt_to_reconciliation(
    definition: dict[str, Any], step: str
) -> None:
    catch = definition["States"][step]["Catch"]
    assert [c["ErrorEquals"] for c in catch] == [names(COMPENSATE), names(RECONCILE)]
    assert catch[1]["Next"] == f"Reconcile{step}"
    assert all(c["ResultPath"] == "$.failure" for c in catch)
    # Transient errors that exhaust their retries are deliberately not caught.
    caught = {e for c in catch for e in c["ErrorEquals"]}
    assert not caught & (set(names(RETRYABLE)) | set(LAMBDA_SERVICE_ERRORS) | {"States.ALL"})


def test_compensations_run_in_reverse_order(definition: dict[str, Any]) -> None:
    states = definition["States"]
    assert states["ReserveStock"]["Catch"][0]["Next"] == "Compensated"
    assert states["RefundPayment"]["Catch"][0]["Next"] == "ReleaseReservation"
    assert states["CreateShipment"]["Catch"][0]["Next"] == "EscalateRefundPayment"
    assert states["EscalateRefundPayment"]["Next"] == "ReleaseReservation"
    assert states["ReleaseReservation"]["Next"] == "Compensated"
    assert states["Compensated"] == {
        "Type": "Fail",
        "Comment": states["Compensated"]["Comment"],
        "Error": SAGA_COMPENSATED,
        "Cause": states["Compensated"]["Cause"],
    }


def test_failed_compensation_is_recorded_then_fails_distinctly(definition: dict[str, Any]) -> None:
    states = definition["States"]
    release = states["ReleaseReservation"]
    assert release["Retry"][0]["ErrorEquals"] == list(LAMBDA_SERVICE_ERRORS)
    assert release["Catch"] == [
        {
            "ErrorEquals": ["States.ALL"],
            "ResultPath": "$.compensation_failure",
            "Next": "RecordReleaseReservationFailure",
        }
    ]
    record = states["RecordReleaseReservationFailure"]
    assert record["Parameters"]["FunctionName"] == "${ReconcileFunctionArn}"
    assert record["Parameters"]["Payload"]["kind"] == "compensation_failed"
    assert record["ResultPath"] == "$.reconciliation.ReleaseReservation"
    assert record["Next"] == "ReleaseReservationDecision"
    assert states["CompensationFailed"]["Error"] == SAGA_COMPENSATION_FAILED


def test_a_failed_compensation_is_decided_like_a_forward_step(definition: dict[str, Any]) -> None:
    choice = definition["States"]["ReleaseReservationDecision"]
    assert choice["Type"] == "Choice"
    assert [(r["Variable"], r["StringEquals"], r["Next"]) for r in choice["Choices"]] == [
        ("$.reconciliation.ReleaseReservation.outcome", "applied", "Compensated"),
        ("$.reconciliation.ReleaseReservation.outcome", "not_applied", "ReleaseReservation"),
    ]
    assert choice["Default"] == "CompensationFailed"


def test_decision_reruns_the_step_for_both_outcomes(definition: dict[str, Any]) -> None:
    choice = definition["States"]["RefundPaymentDecision"]
    assert [(r["StringEquals"], r["Next"]) for r in choice["Choices"]] == [
        ("applied", "RefundPayment"),
        ("not_applied", "RefundPayment"),
    ]
    assert choice["Default"] == "AwaitDecisionRefundPayment"


def test_no_intrinsic_functions_and_no_jsonata(definition: dict[str, Any]) -> None:
    text = json.dumps(definition)
    assert "States.Format" not in text
    assert "States.StringToJson" not in text
    assert '"States.' not in text.replace('"States.ALL"', "").replace('"States.Timeout"', "")
    assert "QueryLanguage" not in text
    assert "{%" not in text
    context = {v for v in _values(definition) if isinstance(v, str) and v.startswith("$$")}
    case_reads = {v for v in context if v.startswith("$$.Execution.Input.")}
    assert context - case_reads == {
        "$$.Execution.Name",
        "$$.State.Name",
        "$$.State.RetryCount",
        "$$.Task.Token",
    }
    assert "$$.Execution.Input.tenant_id" in case_reads


def _values(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _values(v)]
    if isinstance(value, list):
        return [x for v in value for x in _values(v)]
    return [value]


def test_compiling_is_deterministic(saga: Saga) -> None:
    assert json.dumps(compile(saga)) == json.dumps(compile(saga))


# --- routes, walked with scripted task outcomes ----------------------------------------


def run(definition: dict[str, Any], case: Case, **tasks: Script) -> tuple[list[str], Any, Any]:
    scripts = {k: v if callable(v) else list(v) for k, v in tasks.items()}
    return walk(definition, case.execution_input(), scripts)


def test_happy_path(definition: dict[str, Any], case: Case) -> None:
    path, data, error = run(
        definition, case, ReserveStock=[OK], RefundPayment=[OK], CreateShipment=[OK]
    )
    assert path == FORWARD
    assert error is None
    assert set(data["results"]) == set(FORWARD)
    # The state data is the case itself, with the results next to its fields.
    assert {k: data[k] for k in case.execution_input()} == case.execution_input()


def test_shipment_rejected_escalates_the_refund_and_releases_stock(
    definition: dict[str, Any], case: Case
) -> None:
    path, data, error = run(
        definition,
        case,
        ReserveStock=[OK],
        RefundPayment=[OK],
        CreateShipment=[ScriptedError("BusinessRejectedError", "no such address")],
        EscalateRefundPayment=[UNDECIDED],
        ReleaseReservation=[{**OK, "result": {"released": True}}],
    )
    assert path[-4:] == [
        "CreateShipment",
        "EscalateRefundPayment",
        "ReleaseReservation",
        "Compensated",
    ]
    assert error == SAGA_COMPENSATED
    assert data["compensations"]["RefundPayment"] == UNDECIDED
    assert data["compensations"]["ReserveStock"]["result"] == {"released": True}
    assert data["failure"] == {"Error": "BusinessRejectedError", "Cause": "no such address"}


def test_first_step_rejected_has_nothing_to_compensate(
    definition: dict[str, Any], case: Case
) -> None:
    path, _, error = run(definition, case, ReserveStock=[ScriptedError("InvalidInputError")])
    assert path == ["ReserveStock", "Compensated"]
    assert error == SAGA_COMPENSATED


def test_release_failing_is_recorded_for_reconciliation(
    definition: dict[str, Any], case: Case
) -> None:
    path, data, error = run(
        definition,
        case,
        ReserveStock=[OK],
        RefundPayment=[ScriptedError("BusinessRejectedError")],
        ReleaseReservation=[ScriptedError("Lambda.ServiceException")],
        RecordReleaseReservationFailure=[UNDECIDED],
    )
    assert path[-4:] == [
        "ReleaseReservation",
        "RecordReleaseReservationFailure",
        "ReleaseReservationDecision",
        "CompensationFailed",
    ]
    assert error == SAGA_COMPENSATION_FAILED
    assert data["compensation_failure"]["Error"] == "Lambda.ServiceException"
    assert data["reconciliation"]["ReleaseReservation"] == UNDECIDED


def test_a_release_found_released_unwinds_on(definition: dict[str, Any], case: Case) -> None:
    applied = {"outcome": "applied", "item_id": "R-2"}
    path, data, error = run(
        definition,
        case,
        ReserveStock=[OK],
        RefundPayment=[OK],
        CreateShipment=[ScriptedError("BusinessRejectedError")],
        EscalateRefundPayment=[UNDECIDED],
        ReleaseReservation=[ScriptedError("OutcomeUnknownError")],
        RecordReleaseReservationFailure=[applied],
    )
    assert path[-5:] == [
        "EscalateRefundPayment",
        "ReleaseReservation",
        "RecordReleaseReservationFailure",
        "ReleaseReservationDecision",
        "Compensated",
    ]
    assert error == SAGA_COMPENSATED
    assert data["reconciliation"]["ReleaseReservation"] == applied
    assert "ReserveStock" not in data["compensations"]  # nothing ran again


def test_a_release_proven_not_applied_runs_again(definition: dict[str, Any], case: Case) -> None:
    path, data, error = run(
        definition,
        case,
        ReserveStock=[OK],
        RefundPayment=[ScriptedError("BusinessRejectedError")],
        ReleaseReservation=[ScriptedError("OutcomeUnknownError"), {**OK, "result": {"n": 2}}],
        RecordReleaseReservationFailure=[{"outcome": "not_applied", "item_id": "R-2"}],
    )
    assert path[1:] == [
        "RefundPayment",
        "ReleaseReservation",
        "RecordReleaseReservationFailure",
        "ReleaseReservationDecision",
        "ReleaseReservation",
        "Compensated",
    ]
    assert error == SAGA_COMPENSATED
    assert data["compensations"]["ReserveStock"]["result"] == {"n": 2}


class ReleaseLedger:
    """The ledger's side of a release that never gets through: each run claims one of
    ``budget`` lifetime attempts and ends uncertain; then claims are refused. Its
    reconciler says ``not_applied`` whenever an attempt was made since it last answered
    (the rule of ``stepsaga._reconciliation.automatic``), else leaves it to a person."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.attempts = 0
        self.answered = 0

    def release(self, payload: dict[str, Any]) -> dict[str, Any]:
        assert payload["kind"] == "compensation"
        if self.attempts >= self.budget:
            raise ScriptedError("AttemptBudgetExhaustedError")
        self.attempts += 1
        raise ScriptedError("OutcomeUnknownError")

    def reconcile(self, payload: dict[str, Any]) -> dict[str, Any]:
        assert payload["kind"] == "compensation_failed"
        if payload["error"]["Error"] == "AttemptBudgetExhaustedError":
            return UNDECIDED
        if self.answered == self.attempts:  # no attempt since the last "go again"
            return UNDECIDED
        self.answered = self.attempts
        return {"outcome": "not_applied", "item_id": f"R-{self.attempts}"}


@pytest.mark.parametrize("budget", [1, 5])
def test_only_the_ledger_ends_a_compensation_that_keeps_failing(
    definition: dict[str, Any], case: Case, budget: int
) -> None:
    ledger = ReleaseLedger(budget)
    path, _, error = run(
        definition,
        case,
        ReserveStock=[OK],
        RefundPayment=[ScriptedError("BusinessRejectedError")],
        ReleaseReservation=ledger.release,
        RecordReleaseReservationFailure=ledger.reconcile,
    )
    rounds = ["ReleaseReservation", "RecordReleaseReservationFailure", "ReleaseReservationDecision"]
    # Every attempt the budget allows, then the refused claim, then a person.
    assert path[2:] == rounds * (budget + 1) + ["CompensationFailed"]
    assert error == SAGA_COMPENSATION_FAILED
    assert ledger.attempts == budget


def ledger_claims(state: dict[str, Any]) -> bool:
    """A Task whose handler claims an action in the ledger (a step or a compensation)."""
    payload = state.get("Parameters", {}).get("Payload", {})
    return state["Type"] == "Task" and payload.get("kind") in ("step", "compensation")


def waits_for_a_person(state: dict[str, Any]) -> bool:
    return str(state.get("Resource", "")).endswith(".waitForTaskToken")


def unbounded_cycle(definition: dict[str, Any]) -> list[str] | None:
    """A cycle that passes through no ledger claim and no person's decision, if any: only
    those can bound how often an execution goes round (the ledger's attempt budget, a
    person and the wait's TimeoutSeconds)."""
    states = definition["States"]
    free = {
        name
        for name, state in states.items()
        if not ledger_claims(state) and not waits_for_a_person(state)
    }
    edges = {name: [t for _, t in transitions(states[name]) if t in free] for name in free}
    seen: set[str] = set()

    def visit(name: str, trail: list[str]) -> list[str] | None:
        if name in trail:
            return trail[trail.index(name) :]
        if name in seen:
            return None
        seen.add(name)
        for target in edges[name]:
            found = visit(target, [*trail, name])
            if found:
                return found
        return None

    for start in sorted(free):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


def test_every_loop_is_bounded_by_the_ledger_or_a_person(definition: dict[str, Any]) -> None:
    assert unbounded_cycle(definition) is None
    # The check does find a loop of reconciliation states alone.
    looping = json.loads(json.dumps(definition))
    looping["States"]["ReleaseReservationDecision"]["Choices"][1]["Next"] = (
        "RecordReleaseReservationFailure"
    )
    assert unbounded_cycle(looping) == [
        "RecordReleaseReservationFailure",
        "ReleaseReservationDecision",
    ]


def test_uncertain_shipment_waits_for_a_person_then_continues(
    definition: dict[str, Any], case: Case
) -> None:
    path, data, error = run(
        definition,
        case,
        ReserveStock=[OK],
        RefundPayment=[OK],
        CreateShipment=[ScriptedError("OutcomeUnknownError"), {**OK, "replayed": True}],
        ReconcileCreateShipment=[UNDECIDED],
        AwaitDecisionCreateShipment=[{"outcome": "applied", "item_id": "R-1", "decided_by": "ops"}],
    )
    assert path[2:] == [
        "CreateShipment",
        "ReconcileCreateShipment",
        "CreateShipmentDecision",
        "AwaitDecisionCreateShipment",
        "CreateShipmentDecision",
        "CreateShipment",
    ]
    assert error is None
    assert data["results"]["CreateShipment"]["replayed"] is True


def test_automatic_reconciliation_not_applied_runs_the_step_again(
    definition: dict[str, Any], case: Case
) -> None:
    path, _, error = run(
        definition,
        case,
        ReserveStock=[OK],
        RefundPayment=[ScriptedError("OutcomeUnknownError"), OK],
        ReconcileRefundPayment=[{"outcome": "not_applied", "item_id": None}],
        CreateShipment=[OK],
    )
    assert path[1:6] == [
        "RefundPayment",
        "ReconcileRefundPayment",
        "RefundPaymentDecision",
        "RefundPayment",
        "CreateShipment",
    ]
    assert error is None


def test_transient_errors_are_not_caught(definition: dict[str, Any], case: Case) -> None:
    path, _, error = run(
        definition, case, ReserveStock=[OK], RefundPayment=[ScriptedError("TransientError")]
    )
    assert path[-1] == "RefundPayment"
    assert error == "TransientError"


# --- other sagas -----------------------------------------------------------------------


def test_a_saga_in_a_few_lines() -> None:
    saga = Saga(
        "returns",
        [
            Step("LookUpOrder", effect=EffectClass.READ),
            Step(
                "IssueLabel",
                "issue_label",
                params="label",
                on_later_failure=Compensate("VoidLabel", "void_label", EffectClass.KEYED_WRITE),
            ),
            Step("Notify", "notify", EffectClass.BLIND_WRITE, on_later_failure=Escalate("sent")),
        ],
    )
    definition = compile(saga)
    states = definition["States"]
    assert "ReconcileLookUpOrder" not in states  # reads have no reconciliation path
    assert [c["Next"] for c in states["LookUpOrder"]["Catch"]] == ["Compensated"]
    assert states["Notify"]["Catch"][0]["Next"] == "VoidLabel"
    assert states["IssueLabel"]["Parameters"]["Payload"]["effect"] == "physical"
    assert states["IssueLabel"]["Parameters"]["Payload"]["params.$"] == "$$.Execution.Input.label"
    assert states["LookUpOrder"]["Parameters"]["Payload"]["params"] == {}
    assert "EscalateNotify" not in states  # the last step's disposition never runs
    assert saga.functions["VoidLabel"] == "compensations.void_label:VoidLabel"


def test_a_reconciled_compensation_unwinds_to_the_next_one(case: Case) -> None:
    saga = Saga(
        "two-undos",
        [
            Step("Hold", "hold", on_later_failure=Compensate("Unhold", "unhold")),
            Step("Book", "book", on_later_failure=Compensate("Unbook", "unbook")),
            Step("Ship", "ship", EffectClass.PHYSICAL, on_later_failure=Escalate("shipped")),
        ],
    )
    definition = compile(saga)
    states = definition["States"]
    assert [r["Next"] for r in states["UnbookDecision"]["Choices"]] == ["Unhold", "Unbook"]
    assert [r["Next"] for r in states["UnholdDecision"]["Choices"]] == ["Compensated", "Unhold"]
    assert states["UnbookDecision"]["Default"] == "CompensationFailed"
    assert unbounded_cycle(definition) is None
    path, _, error = walk(
        definition,
        case.execution_input(),
        {
            "Hold": [OK],
            "Book": [OK],
            "Ship": [ScriptedError("BusinessRejectedError")],
            "Unbook": [ScriptedError("OutcomeUnknownError")],
            "RecordUnbookFailure": [{"outcome": "applied", "item_id": "R-1"}],
            "Unhold": [OK],
        },
    )
    assert path[2:] == [
        "Ship",
        "Unbook",
        "RecordUnbookFailure",
        "UnbookDecision",
        "Unhold",
        "Compensated",
    ]
    assert error == SAGA_COMPENSATED


def test_without_compensations_there_is_no_compensation_failed_state() -> None:
    saga = Saga(
        "one",
        [Step("Charge", "charge", EffectClass.KEYED_WRITE, on_later_failure=Escalate("charged"))],
    )
    states = compile(saga)["States"]
    assert "CompensationFailed" not in states
    assert "Compensated" in states


def test_custom_retry_policies_are_emitted_in_order() -> None:
    fast = RetryPolicy(["TransientError"], interval_seconds=1, max_attempts=1)
    saga = Saga(
        "one",
        [Step("Charge", "charge", retry=[fast], on_later_failure=Escalate("charged"))],
        decision_timeout_seconds=3600,
    )
    states = compile(saga)["States"]
    assert states["Charge"]["Retry"] == [fast.to_asl()]
    assert states["AwaitDecisionCharge"]["TimeoutSeconds"] == 3600
