"""Scenarios: a mock config test case plus the behaviour it must produce, on any backend.

A :class:`Scenario` names the responses each ``Task`` state gets (``mocks``) and what the
execution must then do: the states entered (``path``), the retries (every state not listed
must run without any), the errors a ``Catch`` handled (no others), and the outcome. The same
:meth:`Scenario.check` runs on the embedded engine and on Step Functions Local.

Mocked results have public constructors, so a mock config never needs to know the
handlers' private shapes: ``step_result`` (what a step or compensation returns),
``reconciliation_result`` (what ``Reconcile…``, ``Escalate…``, ``Record…Failure`` and
``AwaitDecision…`` return: ``applied``/``not_applied``/``undecided``) and ``task_error`` (a
handler's exception as Lambda reports it). A mocked ``AwaitDecision…`` result *is* the
operator's ``SendTaskSuccess`` output (Step Functions Local completes a mocked
``.waitForTaskToken`` task with it, and so does the engine).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stepsaga.testing._history import (
    History,
    HistoryLike,
    assert_caught,
    assert_outcome,
    assert_path,
    assert_retries,
    assert_visits,
)
from stepsaga.testing._mockconfig import MockConfigBuilder, Response, Return, Throw
from stepsaga.workflow import _names as names
from stepsaga.workflow._events import (
    OperatorDecision,
    ReconciliationOutcome,
    ReconciliationResult,
    StepResult,
)


@dataclass(frozen=True)
class Scenario:
    """A test case (``name`` in the mock config) and its expected behaviour."""

    name: str
    summary: str
    mocks: Mapping[str, tuple[Response, ...]]
    path: tuple[str, ...]
    status: str
    error: str | None = None
    #: Retries per state; every other state entered must have none.
    retries: Mapping[str, int] = field(default_factory=dict)
    #: Error name a ``Catch`` handled, per state; no other state may catch one.
    caught: Mapping[str, str] = field(default_factory=dict)
    #: The state machine (saga name) whose test case this is.
    state_machine: str = ""
    #: ``False`` when branches or items run at once: ``path`` is then the states entered
    #: in any order (each as often as listed).
    ordered: bool = True

    def check(self, history: HistoryLike) -> None:
        """Assert the whole expected behaviour; the message shows the actual path."""
        h = History.of(history)
        if self.ordered:
            assert_path(h, self.path)
        else:
            assert_visits(h, self.path)
        assert_outcome(h, self.status, error=self.error)
        for state in dict.fromkeys(self.path):
            assert_retries(h, state, self.retries.get(state, 0))
        for state, error in self.caught.items():
            assert_caught(h, state, error)
        unexpected = [c for c in h.caught() if c.state not in self.caught]
        if unexpected:
            raise AssertionError(
                f"unexpected Catch in {unexpected[0].state} ({unexpected[0].error})\n"
                f"the execution went:\n{h.describe()}"
            )


def mock_config(scenarios: Iterable[Scenario], state_machine: str = "") -> MockConfigBuilder:
    """One mock config file holding every scenario's test case (of ``state_machine``, or
    of each scenario's own)."""
    builder = MockConfigBuilder()
    for scenario in scenarios:
        machine = scenario.state_machine or state_machine
        if not machine:
            raise ValueError(f"scenario {scenario.name}: name its state machine (saga)")
        builder.test_case(machine, scenario.name, scenario.mocks)
    return builder


# --- mocked results -------------------------------------------------------------------


def step_result(
    action_key: str, result: Mapping[str, Any] | None = None, *, replayed: bool = False
) -> Return:
    """What a step or compensation handler returns for a completed action."""
    payload = StepResult(
        action_key=action_key, status="COMPLETED", result=dict(result or {}), replayed=replayed
    )
    return Return.payload(payload.model_dump(mode="json"))


@dataclass(frozen=True)
class ReconciliationReturn(Return):
    """:func:`reconciliation_result`: a ``Return`` that takes the shape of the state it
    mocks (:meth:`for_state`). ``Reconcile…``/``Escalate…``/``Record…Failure`` are
    ``lambda:invoke`` tasks (``{"StatusCode", "Payload"}``); an ``AwaitDecision…`` task
    ends with the operator's ``SendTaskSuccess`` output itself, with no Lambda wrapper."""

    outcome: ReconciliationOutcome = ReconciliationOutcome.UNDECIDED
    item_id: str | None = None

    def for_state(self, state: str) -> Return:
        if not state.startswith(names.await_decision("")):
            return self
        if self.outcome is ReconciliationOutcome.UNDECIDED:
            raise ValueError(
                f"{state} waits for an operator's decision: mock applied or not_applied"
            )
        decision = OperatorDecision(
            outcome=self.outcome,
            item_id=self.item_id or f"rec-mock-{state}",
            decided_by="mock@stepsaga.testing",
        )
        return Return(decision.model_dump(mode="json"), times=self.times)


def reconciliation_result(
    outcome: ReconciliationOutcome | str, item_id: str | None = None, *, times: int = 1
) -> Return:
    """What the reconciler returns: ``applied``/``not_applied`` (decided) or ``undecided``
    with the item it opened (escalations, items left to a person). For an
    ``AwaitDecision…`` state the mock config holds the operator's decision instead
    (:class:`ReconciliationReturn`), so one constructor fits every reconciler state."""
    decided = ReconciliationOutcome(outcome)
    payload = ReconciliationResult(outcome=decided, item_id=item_id)
    wrapped = Return.payload(payload.model_dump(mode="json"), times=times)
    return ReconciliationReturn(wrapped.value, times=times, outcome=decided, item_id=item_id)


def task_error(error: str, message: str, *, times: int = 1) -> Throw:
    """A handler's exception as Lambda reports it: Error = the class name (the error-name
    contract), Cause = the JSON Lambda builds."""
    cause = json.dumps({"errorMessage": message, "errorType": error})
    return Throw(error, cause, times=times)
