"""One error, one fate: every framework error class and a team's subclass of each, raised
by a downstream call, crossed with every effect class and every entry point (a saga step,
a compensation, ``ledgered_tool``, the MCP tool). The name that leaves (Lambda's
``errorType``: the raised class's name) is the nearest framework class; the compiled ASL
routes it as ``stepsaga.errors.FATES`` says; the record's status agrees with that route; and
a replay (a redrive calling the same key again) raises the same name or, for a retried
error, performs."""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from stepsaga import Compensate, EffectClass, Saga, Step, errors
from stepsaga._handlers import RecordingMetrics, build_handlers, local_deps
from stepsaga._handlers.guard import Handler
from stepsaga._handlers.step_handler import Call, Outcome, StepHandler
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.errors import FATES, Route, StepSagaError, fate_of
from stepsaga.ledger import ActionScope, Intent, Ledger, Status, ledgered_tool, open_ledger
from stepsaga.ledger._outcomes import ROUTES_FOR_STATUS
from stepsaga.workflow._compiler import compile as compile_saga
from tests.framework.conformance.ledger.error_table import make_error
from tests.framework.conformance.ledger.helpers import APPROVED_AT
from tests.framework.unit.handlers import effect_probe
from tests.framework.unit.handlers.helpers import CapturedLogs, context

RECORDED = (EffectClass.KEYED_WRITE, EffectClass.BLIND_WRITE, EffectClass.PHYSICAL)
NAMES = {
    EffectClass.READ: "Read",
    EffectClass.KEYED_WRITE: "Keyed",
    EffectClass.BLIND_WRITE: "Blind",
    EffectClass.PHYSICAL: "Physical",
}


def _team_subclass(cls: type[StepSagaError]) -> type[StepSagaError]:
    return type(f"Team{cls.__name__}", (cls,), {"__module__": "team_project.errors"})


#: Every class of ``stepsaga.errors`` and a team's subclass of each.
CLASSES: list[type[StepSagaError]] = [
    made
    for cls in FATES
    for made in (cls, _team_subclass(cls))
    if cls is not StepSagaError or made is cls
]
_ids = itertools.count()


def test_every_framework_error_has_a_route_and_a_family() -> None:
    ours = {
        cls
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, StepSagaError)
    }
    assert set(FATES) <= ours
    for cls in FATES:
        assert cls.error_name() == cls.__name__
        assert _team_subclass(cls).error_name() == cls.__name__
    # The API errors (``ExecutionDoesNotExist``…) route as their nearest class of FATES.
    for cls in ours - set(FATES):
        nearest = next(base for base in cls.__mro__ if base in FATES)
        assert cls.error_name() == nearest.__name__
        assert fate_of(cls) == FATES[nearest]
    assert errors.ExecutionDoesNotExist.error_name() == "NotFoundError"
    assert errors.AwsCallError.error_name() == "StepSagaError"
    assert fate_of(errors.NotFoundError).route is Route.COMPENSATE  # a refusal, not a crash


# --- the probe saga: a step per effect class, a compensation per recorded one --------------


class Scripted(StepHandler[effect_probe.Note, None]):
    """Raises the scripted exceptions on its next calls, then succeeds."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.script: list[Exception] = []

    def consequential(self, params: effect_probe.Note) -> Mapping[str, Any]:
        return {"text": params.text}

    def perform(self, clients: None, call: Call[effect_probe.Note]) -> Outcome:
        if self.script:
            raise self.script.pop(0)
        return Outcome(result={"ok": True}, reference=call.action.key)


def _steps() -> list[Step]:
    steps = [
        Step(
            f"{NAMES[effect]}Step",
            operation=f"{NAMES[effect].lower()}_op",
            effect=effect,
            params="note",
            params_model=effect_probe.Note,
            on_later_failure=None
            if effect is EffectClass.READ
            else Compensate(
                f"Undo{NAMES[effect]}", operation=f"undo_{NAMES[effect].lower()}", effect=effect
            ),
            handler=effect_probe.PATH,
        )
        for effect in EffectClass
    ]
    # A last step, so the physical step's compensation is reachable too.
    finish = Step(
        "Finish",
        operation="finish_op",
        effect=EffectClass.READ,
        params="note",
        params_model=effect_probe.Note,
        handler=effect_probe.PATH,
    )
    return [*steps, finish]


STEPS = _steps()
SAGA = Saga(name="identity-probe", steps=STEPS)
ASL: dict[str, Any] = compile_saga(SAGA)["States"]


def asl_route(state: str, name: str, *, compensation: bool) -> Route:
    """Where the compiled state sends ``name``: a retrier, else a catcher, else nowhere."""
    definition = ASL[state]
    if any(name in retrier["ErrorEquals"] for retrier in definition.get("Retry", [])):
        return Route.RETRY
    for catcher in definition.get("Catch", []):
        if name in catcher["ErrorEquals"] or "States.ALL" in catcher["ErrorEquals"]:
            if compensation or catcher["Next"].startswith("Reconcile"):
                return Route.RECONCILE  # a compensation's failure is recorded for a person
            return Route.COMPENSATE
    return Route.FAIL


@dataclass
class World:
    ledger: Ledger
    handlers: dict[str, Handler]
    operations: dict[str, Scripted]

    def event(self, step: Step, case: str, kind: str = "step", **more: Any) -> dict[str, Any]:
        state = more.pop("state", step.name)
        return {
            "kind": kind,
            "saga": SAGA.name,
            "tenant_id": "acme",
            "case_id": case,
            "revision": 1,
            "approved_at": "2026-11-29T09:30:00Z",
            "step": state,
            "params": {"text": "hello"},
            "execution": {"name": f"acme-{case}-r1", "state": state, "retry_count": 0},
            **more,
        }


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    clock = ManualClock(APPROVED_AT)
    local = local_deps(
        StateHome(tmp_path / "home"),
        None,
        clock=clock,
        logger=CapturedLogs().logger,
        metrics=RecordingMetrics(),
    )
    local.ledger.close()
    ledger = open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite3'}", clock=clock)
    deps = replace(local, ledger=ledger)
    operations: dict[str, Scripted] = {}
    for step in STEPS:
        operations[step.op] = Scripted(step.op)
        if isinstance(step.on_later_failure, Compensate):
            undo = step.on_later_failure.operation
            operations[undo] = Scripted(undo)
    catalog: dict[str, StepHandler[Any, Any]] = dict(operations)
    yield World(ledger, build_handlers(deps, SAGA, catalog), operations)
    deps.close()


def _leaves(call: Callable[..., object], *args: Any, **kwargs: Any) -> BaseException | None:
    """What ``call(*args, **kwargs)`` raised (None: it returned)."""
    try:
        call(*args, **kwargs)
    except Exception as exc:
        return exc
    return None


def _check(
    cls: type[StepSagaError],
    first: BaseException | None,
    status: Status | None,
    again: BaseException | None,
    route: Route | None,
) -> None:
    """The name, the route, the record and the replay agree."""
    where = f"{cls.__name__} ({cls.__mro__[1].__name__})"
    assert isinstance(first, StepSagaError), where
    name = first.error_name()
    if route is not None:  # a Lambda handler: errorType is the raised class's name
        assert type(first).__name__ == name, where
        assert route is fate_of(first).route or route is Route.RECONCILE, where
    if status is not None:
        assert fate_of(first).route in ROUTES_FOR_STATUS[status], (where, status)
    if status in (Status.FAILED, Status.UNKNOWN):
        assert isinstance(again, StepSagaError), where
        assert again.error_name() == name, where  # one fate after a replay
        if route is not None:
            assert type(again).__name__ == name, where
    else:  # nothing recorded or released: the replay performs
        assert again is None, (where, again)


def test_a_saga_step(world: World) -> None:
    for cls, step in itertools.product(CLASSES, STEPS):
        case = f"CASE-S{next(_ids)}"
        operation = world.operations[step.op]
        operation.script = [make_error(cls), make_error(cls)]
        event = world.event(step, case, operation=step.op, effect=step.effect.value)
        first = _leaves(world.handlers[step.name], event, context(step.name))
        operation.script = []
        record = world.ledger.get(f"acme:{case}:r1:{step.op}")
        status = None if record is None else record.status
        assert isinstance(first, StepSagaError)
        route = asl_route(step.name, type(first).__name__, compensation=False)
        if step.effect is not EffectClass.READ:
            assert route is fate_of(first).route, (cls, step.name, route)
        again = _leaves(world.handlers[step.name], event, context(step.name))
        _check(cls, first, status, again, route)


def test_a_compensation(world: World) -> None:
    for cls, step in itertools.product(CLASSES, STEPS[1:4]):
        assert isinstance(step.on_later_failure, Compensate)
        undo = step.on_later_failure
        case = f"CASE-C{next(_ids)}"
        forward = world.event(step, case, operation=step.op, effect=step.effect.value)
        original = world.handlers[step.name](forward, context(step.name))
        world.operations[undo.operation].script = [make_error(cls), make_error(cls)]
        failure = {"Error": "BusinessRejectedError", "Cause": "{}"}
        event = world.event(
            step,
            case,
            kind="compensation",
            state=undo.name,
            operation=undo.operation,
            effect=undo.effect.value,
            compensates={"step": step.name, "operation": step.op, "effect": step.effect.value},
            original=original,
            failure=failure,
        )
        first = _leaves(world.handlers[undo.name], event, context(undo.name))
        world.operations[undo.operation].script = []
        record = world.ledger.get(f"acme:{case}:r1:{step.op}:compensate:{undo.operation}")
        status = None if record is None else record.status
        assert isinstance(first, StepSagaError)
        route = asl_route(undo.name, type(first).__name__, compensation=True)
        again = _leaves(world.handlers[undo.name], event, context(undo.name))
        _check(cls, first, status, again, route)


def _tool(ledger: Ledger, effect: EffectClass, script: list[Exception]) -> Callable[..., Any]:
    @ledgered_tool(ledger, operation=f"{effect.value}_tool", effect=effect)
    def tool(text: str, *, scope: ActionScope) -> dict[str, Any]:
        if script:
            raise script.pop(0)
        return {"ok": text}

    return tool


def test_ledgered_tool(world: World) -> None:
    for cls, effect in itertools.product(CLASSES, EffectClass):
        case = f"CASE-T{next(_ids)}"
        script = [make_error(cls)]
        tool = _tool(world.ledger, effect, script)
        scope = ActionScope("acme", Intent(case, 1, APPROVED_AT))
        first = _leaves(tool, "hello", scope=scope)
        record = world.ledger.get(scope.key(f"{effect.value}_tool"))
        again = _leaves(tool, "hello", scope=scope)
        _check(cls, first, None if record is None else record.status, again, None)


def test_the_mcp_tool(world: World) -> None:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:  # pragma: no cover - the dev extra installs it
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("mcp is not installed: pip install 'stepsaga[mcp]'")
    from stepsaga.agents import KeyBook, LedgeredTools
    from stepsaga.agents._keys import case_for_key

    server: MCPServer[Any] = MCPServer("identity")
    tools = LedgeredTools(server, ledger=world.ledger, tenant="acme")
    script: list[Exception] = []
    for effect in RECORDED:

        @tools.mutating(effect=effect, name=f"{effect.value}_tool")
        def tool(
            text: Annotated[str, Field(description="what to do")], *, scope: ActionScope
        ) -> dict[str, Any]:
            if script:
                raise script.pop(0)
            return {"ok": text}

    def call(name: str, key: str) -> Any:
        """The tool's result; an error result raised as the framework error it names (the
        MCP layer answers errors as structured content, not as exceptions)."""
        arguments = {"text": "hello", "idempotencyKey": key}
        result: Any = asyncio.run(server.call_tool(name, arguments, None))
        if result.is_error:
            failure = result.structured_content
            named: type[StepSagaError] = getattr(errors, failure["error"])
            error = named.__new__(named)  # its name, not its constructor's data
            Exception.__init__(error, failure["message"])
            raise error
        return result

    for cls, effect in itertools.product(CLASSES, RECORDED):
        name = f"{effect.value}_tool"
        key = KeyBook(world.ledger).issue("acme", tool=name, args={"text": "hello"})
        script[:] = [make_error(cls)]
        # The tool's error result is the MCP layer's format; the error is its cause.
        first = _leaves(call, name, key)
        assert first is not None
        record = world.ledger.get(f"acme:{case_for_key(key)}:r1:{name}")
        again = _leaves(call, name, key)
        _check(cls, _ours(first), None if record is None else record.status, _ours(again), None)


def _ours(error: BaseException | None) -> BaseException | None:
    """The stepsaga error an MCP tool error was raised from (its cause chain)."""
    while error is not None and not isinstance(error, StepSagaError):
        error = error.__cause__
    return error
