"""The status machine, explored by hypothesis against a model, on both stores.

Two actions share one small tenant budget: a keyed write (takeover allowed) and a
physical effect (expired lease → UNKNOWN). Claims, every transition (also with stale
claims), the clock, the sweeper and reconciliation are interleaved at random; after each
step the stored records and the budget must match the model exactly.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from moto import mock_aws

from stepsaga import EffectClass
from stepsaga._util.clock import ManualClock
from stepsaga.backends import ReconOutcome
from stepsaga.errors import (
    ActionInProgressError,
    AttemptBudgetExhaustedError,
    BudgetExhaustedError,
    IllegalTransitionError,
    OutcomeUnknownError,
)
from stepsaga.ledger import Action, LedgerPolicy, Status, open_ledger
from stepsaga.ledger._dynamodb import create_table
from stepsaga.ledger._models import Claim, Replay
from tests.framework.conformance.ledger.helpers import START, make_action

BUDGET = 7
POLICY = LedgerPolicy(lease_seconds=60, attempt_budget=3, sweep_grace_seconds=120)
ACTIONS: dict[str, Action] = {
    "keyed": make_action("keyed", effect=EffectClass.KEYED_WRITE, cost=3),
    "physical": make_action("physical", effect=EffectClass.PHYSICAL, cost=5),
}
TRANSITIONS = {
    "complete": Status.COMPLETED,
    "fail": Status.FAILED,
    "release": Status.RELEASED,
    "unknown": Status.UNKNOWN,
}


@dataclass(frozen=True)
class Expected:
    status: Status
    owner: str
    attempts: int
    lease_expires_at: datetime | None
    debited: int


class LedgerMachine(RuleBasedStateMachine):
    backend = "sqlite"

    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock(START)
        self.folder = tempfile.mkdtemp(prefix="ledger-sm-")
        self.mock: Any = None
        if self.backend == "sqlite":
            url = f"sqlite:///{self.folder}/ledger.sqlite3"
        else:
            self.mock = mock_aws()
            self.mock.start()
            create_table(boto3.client("dynamodb", region_name="us-east-1"), "ledger")
            url = "dynamodb://ledger?region=us-east-1"
        self.ledger = open_ledger(url, clock=self.clock, policy=POLICY)
        self.ledger.set_budget("acme", BUDGET)
        self.model: dict[str, Expected] = {}
        self.claims: list[Claim] = []
        self.reasons = 0

    def teardown(self) -> None:
        self.ledger.close()
        if self.mock is not None:
            self.mock.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def remaining(self) -> int:
        return BUDGET - sum(m.debited for m in self.model.values())

    # --- rules ---------------------------------------------------------------------------

    @rule(name=st.sampled_from(sorted(ACTIONS)))
    def claim(self, name: str) -> None:
        action = ACTIONS[name]
        cost = action.cost or 0
        now = self.clock.now()
        before = self.model.get(action.key)

        if before is None or before.status is Status.RELEASED:
            if before is not None and before.attempts >= POLICY.attempt_budget:
                with pytest.raises(AttemptBudgetExhaustedError):
                    self.ledger.claim(action)
                return
            if self.remaining() < cost:
                with pytest.raises(BudgetExhaustedError):
                    self.ledger.claim(action)
                return
            claim = self.ledger.claim(action)
            assert isinstance(claim, Claim)
            attempts = 1 if before is None else before.attempts + 1
            assert (claim.attempt, claim.takeover) == (attempts, False)
            self.model[action.key] = Expected(
                Status.IN_PROGRESS, claim.owner, attempts, now + POLICY.lease, cost
            )
            self.claims.append(claim)
        elif before.status in (Status.COMPLETED, Status.FAILED):
            replay = self.ledger.claim(action)
            assert isinstance(replay, Replay)
            assert replay.record.status is before.status
        elif before.status is Status.UNKNOWN:
            with pytest.raises(OutcomeUnknownError):
                self.ledger.claim(action)
        elif before.lease_expires_at is not None and now < before.lease_expires_at:
            with pytest.raises(ActionInProgressError):
                self.ledger.claim(action)
        elif action.effect is EffectClass.PHYSICAL:
            with pytest.raises(OutcomeUnknownError):
                self.ledger.claim(action)
            self.model[action.key] = replace(before, status=Status.UNKNOWN, lease_expires_at=None)
        elif before.attempts >= POLICY.attempt_budget:
            with pytest.raises(AttemptBudgetExhaustedError):
                self.ledger.claim(action)
        else:
            claim = self.ledger.claim(action)
            assert isinstance(claim, Claim)
            assert (claim.attempt, claim.takeover) == (before.attempts + 1, True)
            self.model[action.key] = replace(
                before,
                owner=claim.owner,
                attempts=before.attempts + 1,
                lease_expires_at=now + POLICY.lease,
            )
            self.claims.append(claim)

    @precondition(lambda self: bool(self.claims))
    @rule(index=st.integers(0, 30), op=st.sampled_from(sorted(TRANSITIONS)))
    def finish(self, index: int, op: str) -> None:
        claim = self.claims[index % len(self.claims)]
        target = TRANSITIONS[op]
        before = self.model[claim.key]
        held = before.status is Status.IN_PROGRESS and before.owner == claim.owner
        repeated = before.owner == claim.owner and before.status is target

        def run() -> object:
            if op == "complete":
                return self.ledger.complete(claim, {"by": claim.owner})
            if op == "fail":
                return self.ledger.fail(claim, {"error": "BusinessRejectedError", "message": "no"})
            if op == "release":
                return self.ledger.release(claim, "before dispatch")
            return self.ledger.mark_unknown(claim, "timeout")

        if not (held or repeated):
            with pytest.raises(IllegalTransitionError):
                run()
            return
        run()
        if held:
            refund = target in (Status.RELEASED, Status.FAILED)
            self.model[claim.key] = replace(
                before,
                status=target,
                lease_expires_at=None,
                debited=0 if refund else before.debited,
            )

    @rule(seconds=st.sampled_from([1, 30, 61, 200]))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule()
    def sweep(self) -> None:
        cutoff = self.clock.now() - POLICY.sweep_grace
        expected = set()
        for key, m in self.model.items():
            if (
                m.status is Status.IN_PROGRESS
                and m.lease_expires_at
                and m.lease_expires_at < cutoff
            ):
                expected.add(key)
                self.model[key] = replace(m, status=Status.UNKNOWN, lease_expires_at=None)
        assert {r.key for r in self.ledger.sweep()} == expected

    @precondition(lambda self: bool(self.model))
    @rule(name=st.sampled_from(sorted(ACTIONS)), outcome=st.sampled_from(list(ReconOutcome)))
    def resolve(self, name: str, outcome: ReconOutcome) -> None:
        key = ACTIONS[name].key
        before = self.model.get(key)
        if before is None:
            return
        self.reasons += 1
        item = self.ledger.open_item(key, f"check {self.reasons}", step=name, evidence={})
        now = self.clock.now()
        uncertain = before.status is Status.UNKNOWN or (
            before.status is Status.IN_PROGRESS
            and before.lease_expires_at is not None
            and now >= before.lease_expires_at
        )
        settled = {
            ReconOutcome.APPLIED: (Status.COMPLETED,),
            ReconOutcome.NOT_APPLIED: (Status.RELEASED, Status.FAILED),
        }[outcome]
        if not uncertain and before.status not in settled:
            with pytest.raises(IllegalTransitionError):
                self.ledger.resolve_item(item.item_id, outcome, by="ops", note="checked")
            return
        self.ledger.resolve_item(item.item_id, outcome, by="ops", note="checked", result={})
        applied = outcome is ReconOutcome.APPLIED
        # "Not applied" grants one attempt past a spent lifetime budget.
        granted = before.attempts if applied else min(before.attempts, POLICY.attempt_budget - 1)
        if uncertain:
            self.model[key] = replace(
                before,
                owner=f"reconciliation:{item.item_id}",
                status=Status.COMPLETED if applied else Status.RELEASED,
                lease_expires_at=None,
                attempts=granted,
                debited=before.debited if applied else 0,
            )
        elif before.status is Status.RELEASED and granted < before.attempts:
            self.model[key] = replace(
                before, owner=f"reconciliation:{item.item_id}", attempts=granted
            )

    # --- what must always hold ----------------------------------------------------------

    @invariant()
    def store_matches_model(self) -> None:
        for key, m in self.model.items():
            record = self.ledger.get(key)
            assert record is not None
            assert (record.status, record.owner, record.attempts, record.debited) == (
                m.status,
                m.owner,
                m.attempts,
                m.debited,
            )
            assert record.lease_expires_at == m.lease_expires_at
            assert record.attempts <= POLICY.attempt_budget
        assert self.ledger.budget("acme") == self.remaining()


class DynamoDBLedgerMachine(LedgerMachine):
    backend = "dynamodb"


_settings = {
    "deadline": None,
    "stateful_step_count": 30,
    "suppress_health_check": [HealthCheck.too_slow],
}
TestSqliteStatusMachine = LedgerMachine.TestCase
TestSqliteStatusMachine.settings = settings(max_examples=60, **_settings)  # type: ignore[arg-type]
TestDynamoDBStatusMachine = DynamoDBLedgerMachine.TestCase
TestDynamoDBStatusMachine.settings = settings(max_examples=30, **_settings)  # type: ignore[arg-type]
