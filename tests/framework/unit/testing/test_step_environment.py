"""``StepEnvironment``: one step's real handler alone, with fake clients and a real ledger,
fed the event the compiled ASL builds."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from stepsaga import (
    ApprovedCase,
    Call,
    Compensate,
    EffectClass,
    Escalate,
    ForEach,
    Outcome,
    Parallel,
    Saga,
    Step,
    StepHandler,
)
from stepsaga._util.clock import ManualClock
from stepsaga.errors import BusinessRejectedError, OutcomeUnknownError
from stepsaga.ledger import Status
from stepsaga.testing import StepEnvironment


class Seats(BaseModel):
    plan: str
    seats: int


class Upgrade(ApprovedCase):
    seats: Seats


class FakeSeats:
    """Seats by key; ``refuse``/``lose`` make the next call fail."""

    def __init__(self) -> None:
        self.provisioned: list[str] = []
        self.removed: list[str] = []
        self.refuse = False
        self.lose = False
        self.seen_attempts: list[int] = []


class Provision(StepHandler[Seats, FakeSeats]):
    def perform(self, clients: FakeSeats, call: Call[Seats]) -> Outcome:
        clients.seen_attempts.append(call.ctx.attempt)
        if clients.refuse:
            raise BusinessRejectedError("seats: plan sold out")
        clients.provisioned.append(call.action.key)
        if clients.lose:
            raise OutcomeUnknownError("seats: no reply")
        return Outcome(result={"seats": call.params.seats}, reference=call.action.key)


class Deprovision(StepHandler[Seats, FakeSeats]):
    def perform(self, clients: FakeSeats, call: Call[Seats]) -> Outcome:
        assert call.original is not None
        clients.removed.append(call.original.key)
        return Outcome(result={"removed": call.params.seats})


saga = Saga(
    "seat-upgrade",
    input_model=Upgrade,
    steps=[
        Step(
            "ProvisionSeat",
            operation="provision_seat",
            effect=EffectClass.PHYSICAL,
            params="seats",
            on_later_failure=Compensate(
                "DeprovisionSeat", operation="deprovision_seat", effect=EffectClass.KEYED_WRITE
            ),
        ),
        Step(
            "Notify",
            operation="notify",
            effect=EffectClass.BLIND_WRITE,
            on_later_failure=Escalate("notified"),
        ),
    ],
)


class Notify(StepHandler[dict[str, object], FakeSeats]):
    def perform(self, clients: FakeSeats, call: Call[dict[str, object]]) -> Outcome:
        return Outcome()


HANDLERS: dict[str, StepHandler[Any, FakeSeats]] = {
    "provision_seat": Provision(),
    "deprovision_seat": Deprovision(),
    "notify": Notify(),
}
CASE = Upgrade.model_validate(
    {
        "tenant_id": "initech",
        "case_id": "UP-7",
        "approval": {
            "approved_by": "ops@initech.example",
            "approved_at": "2026-11-29T09:30:00Z",
            "revision": 1,
        },
        "seats": {"plan": "team", "seats": 5},
    }
)


@pytest.fixture
def env(tmp_path: Path) -> StepEnvironment:
    clock = ManualClock(datetime(2026, 11, 29, 12, 0, tzinfo=UTC))
    return StepEnvironment(saga, FakeSeats(), home=tmp_path, clock=clock, step_handlers=HANDLERS)


def test_a_step_runs_once_and_a_duplicate_replays(env: StepEnvironment) -> None:
    with env:
        first = env.run("ProvisionSeat", CASE)
        again = env.run("ProvisionSeat", CASE)
        record = env.record("ProvisionSeat", CASE)
    assert (first.status, first.replayed, first.result) == ("COMPLETED", False, {"seats": 5})
    assert first.action_key == "initech:UP-7:r1:provision_seat"
    assert again.replayed
    assert env.deps.clients.provisioned == ["initech:UP-7:r1:provision_seat"]
    assert record is not None
    assert record.status is Status.COMPLETED


def test_a_refusal_is_raised_by_its_error_name_and_recorded_failed(env: StepEnvironment) -> None:
    env.deps.clients.refuse = True
    with env, pytest.raises(BusinessRejectedError):
        env.run("ProvisionSeat", CASE)
    record = env.record("ProvisionSeat", CASE)
    assert record is not None
    assert record.status is Status.FAILED


def test_an_uncertain_physical_step_is_never_repeated(env: StepEnvironment) -> None:
    env.deps.clients.lose = True
    with env:
        with pytest.raises(OutcomeUnknownError):
            env.run("ProvisionSeat", CASE)
        with pytest.raises(OutcomeUnknownError):
            env.run("ProvisionSeat", CASE, retry_count=1)
        record = env.record("ProvisionSeat", CASE)
    assert env.deps.clients.seen_attempts == [1]
    assert record is not None
    assert record.status is Status.UNKNOWN


def test_a_compensation_undoes_the_recorded_step(env: StepEnvironment) -> None:
    with env:
        env.run("ProvisionSeat", CASE)
        undone = env.compensate("ProvisionSeat", CASE)
        again = env.compensate("ProvisionSeat", CASE)
    assert undone.action_key == "initech:UP-7:r1:provision_seat:compensate:deprovision_seat"
    assert undone.result == {"removed": 5}
    assert again.replayed
    assert env.deps.clients.removed == ["initech:UP-7:r1:provision_seat"]


def test_misuse_is_named(env: StepEnvironment) -> None:
    with env:
        with pytest.raises(ValueError, match="has no step 'Ship'"):
            env.run("Ship", CASE)
        with pytest.raises(ValueError, match="has no completed record"):
            env.compensate("ProvisionSeat", CASE)
        with pytest.raises(ValueError, match="has no compensation"):
            env.compensate("Notify", CASE)


class Team(BaseModel):
    member: str
    seats: int


class Teams(ApprovedCase):
    seats: Seats
    teams: list[Team]


grouped = Saga(
    "team-upgrade",
    input_model=Teams,
    steps=[
        Parallel(
            "Both",
            [
                [saga.step("ProvisionSeat")],
                [
                    Step(
                        "Notify",
                        operation="notify",
                        effect=EffectClass.BLIND_WRITE,
                        on_later_failure=Escalate("notified"),
                    )
                ],
            ],
        ),
        ForEach(
            "EachTeam",
            items="teams",
            item_key="member",
            step=Step(
                "ProvisionTeam",
                operation="provision_team",
                effect=EffectClass.KEYED_WRITE,
                on_later_failure=Compensate("DeprovisionTeam", operation="deprovision_team"),
            ),
        ),
    ],
)
TEAMS = Teams.model_validate(
    {**CASE.model_dump(mode="json"), "teams": [{"member": "ann", "seats": 2}]}
)


def test_group_members_and_items_run_alone_too(tmp_path: Path) -> None:
    handlers = {**HANDLERS, "provision_team": Provision(), "deprovision_team": Deprovision()}
    clock = ManualClock(datetime(2026, 11, 29, 12, 0, tzinfo=UTC))
    with StepEnvironment(
        grouped, FakeSeats(), home=tmp_path, clock=clock, step_handlers=handlers
    ) as env:
        member = env.run("ProvisionSeat", TEAMS)
        env.compensate("ProvisionSeat", TEAMS)
        team = TEAMS.teams[0].model_dump()
        item = env.run("ProvisionTeam", TEAMS, item=team)
        undone = env.compensate("ProvisionTeam", TEAMS, item=team)
        with pytest.raises(ValueError, match="runs once per item of teams: pass item="):
            env.run("ProvisionTeam", TEAMS)
        with pytest.raises(ValueError, match="not a per-item step"):
            env.run("ProvisionSeat", TEAMS, item=team)
    assert member.action_key == "initech:UP-7:r1:provision_seat"
    assert item.action_key == "initech:UP-7:r1:provision_team#ann"
    assert undone.action_key == "initech:UP-7:r1:provision_team#ann:compensate:deprovision_team"
    assert env.deps.clients.removed == [member.action_key, item.action_key]
