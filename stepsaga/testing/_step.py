"""One step of a saga alone: ``StepEnvironment`` (like Temporal's ``ActivityEnvironment``).

It runs a step's real handler — the saga's own ``StepHandler`` wrapped in stepsaga's
machinery (ledger claim, per-effect-class decisions, error table) — with the clients you
give (fakes) over a real SQLite ledger, and no engine. The event is the compiled ASL's
``Payload`` for that Task, evaluated on the case, so what the handler sees is what Step
Functions would send::

    with StepEnvironment(saga, FakeBilling(), home=tmp_path) as env:
        result = env.run("ChargeCard", case)           # StepResult
        assert env.run("ChargeCard", case).replayed    # a duplicate replays
        env.compensate("ProvisionSeat", case)          # undo a completed step

A step of a parallel group runs the same way; a per-item step runs for one item
(``env.run("ReserveLine", case, item=case.lines[0].model_dump())``; ``index=`` for a step
that declares ``stable_index``), keyed ``…:<operation>#<item id>``.

A handler's error is raised as the Lambda would report it (a ``StepSagaError`` whose class
name is the error name); the ledger (``env.ledger``, ``env.record(step, case)``) shows what
it recorded.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from stepsaga._handlers.deps import HandlerDeps, local_deps
from stepsaga._handlers.guard import Handler
from stepsaga._handlers.registry import build_handlers
from stepsaga._handlers.step_handler import StepHandler
from stepsaga._model.case import ApprovedCase
from stepsaga._model.keys import action_key
from stepsaga._project.home import StateHome
from stepsaga._util.clock import Clock, SystemClock
from stepsaga.backends._naming import execution_name
from stepsaga.engine._paths import parse
from stepsaga.engine._payload import Env, compile_template
from stepsaga.ledger import Ledger, LedgerPolicy, Record
from stepsaga.workflow import compile
from stepsaga.workflow._events import StepResult
from stepsaga.workflow._names import item_operation
from stepsaga.workflow._saga import Parallel, Saga
from stepsaga.workflow._validate import nested_machines

__all__ = ["StepEnvironment"]


class _Context:
    """A Lambda context with a request id (handlers log it)."""

    aws_request_id = "step-environment"
    function_name = "step-environment"


class StepEnvironment:
    """Run ``saga``'s step handlers one at a time with ``clients``, over the ledger in
    ``home`` (a folder; use pytest's ``tmp_path``). ``step_handlers`` (operation →
    ``StepHandler``) replaces the handlers the saga references."""

    def __init__(
        self,
        saga: Saga,
        clients: Any = None,
        *,
        home: Path,
        clock: Clock | None = None,
        policy: LedgerPolicy | None = None,
        step_handlers: Mapping[str, StepHandler[Any, Any]] | None = None,
    ) -> None:
        self.saga = saga
        self.clock: Clock = clock or SystemClock()
        self.deps: HandlerDeps = local_deps(
            StateHome(home), clients, clock=self.clock, policy=policy, log_level="ERROR"
        )
        self._handlers: dict[str, Handler] = build_handlers(self.deps, saga, step_handlers)
        self._definition = compile(saga)

    @property
    def ledger(self) -> Ledger:
        return self.deps.ledger

    # --- running one step ----------------------------------------------------------------

    def run(
        self,
        step: str,
        case: ApprovedCase,
        *,
        item: Mapping[str, Any] | None = None,
        index: int = 0,
        retry_count: int = 0,
    ) -> StepResult:
        """Invoke the forward step ``step`` for ``case`` (a per-item step: for ``item``, at
        ``index`` in its list; ``retry_count``: the state's ``$$.State.RetryCount``)."""
        self._forward(step)
        return self._invoke(step, case, self._state(case, step, item, index), retry_count)

    def compensate(
        self,
        step: str,
        case: ApprovedCase,
        *,
        item: Mapping[str, Any] | None = None,
        index: int = 0,
        retry_count: int = 0,
    ) -> StepResult:
        """Invoke ``step``'s compensation for ``case`` (and ``item``), undoing the result
        the ledger recorded for ``step`` (run it first)."""
        compensation = self._forward(step).compensation
        if compensation is None:
            raise ValueError(f"step {step} of saga {self.saga.name} has no compensation")
        record = self.record(step, case, item=item, index=index)
        if record is None or record.result is None:
            raise ValueError(f"step {step} has no completed record for case {case.case_id}")
        state = self._state(case, step, item, index)
        result = StepResult(
            action_key=record.key, status="COMPLETED", result=dict(record.result), replayed=False
        ).model_dump(mode="json")
        # Where the compiled compensation reads the original result from, in its state.
        original = self._task(compensation.name)["Parameters"]["Payload"]["original.$"]
        state = parse(original).set(state, result)
        state["failure"] = {"Error": "BusinessRejectedError", "Cause": "a later step"}
        return self._invoke(compensation.name, case, state, retry_count)

    def record(
        self,
        step: str,
        case: ApprovedCase,
        *,
        item: Mapping[str, Any] | None = None,
        index: int = 0,
    ) -> Record | None:
        """The ledger's record of ``step``'s action for ``case`` (and ``item``), if any."""
        operation = item_operation(self._forward(step).op, self._item_id(step, item, index))
        key = action_key(case.tenant_id, case.case_id, case.approval.revision, operation)
        return self.ledger.get(key)

    # --- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        self.deps.close()

    def __enter__(self) -> StepEnvironment:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- the event the compiled ASL builds ----------------------------------------------

    def _forward(self, step: str) -> Any:
        try:
            return self.saga.step(step)
        except KeyError:
            steps = ", ".join(s.name for s in self.saga.all_steps)
            raise ValueError(f"saga {self.saga.name} has no step {step!r} ({steps})") from None

    def _item_id(self, step: str, item: Mapping[str, Any] | None, index: int) -> str | None:
        """The id of ``item`` for a per-item step (``None`` for any other step)."""
        each = self.saga.per_item(step)
        if each is None:
            if item is not None:
                raise ValueError(f"step {step} is not a per-item step; it takes no item")
            return None
        if item is None:
            raise ValueError(f"step {step} runs once per item of {each.items}: pass item=")
        if each.item_key is not None:
            return each.item_ids(_at(each.items, [item]))[0]
        return each.item_ids(_at(each.items, [*([{}] * index), item]))[index]

    def _state(
        self, case: ApprovedCase, step: str, item: Mapping[str, Any] | None, index: int
    ) -> dict[str, Any]:
        """The state data ``step`` runs in: the case itself at the top level (the machine
        adds its results next to the case's fields), one item's iteration for a per-item
        step. The case is read from the context object either way (``_invoke``)."""
        key = self._item_id(step, item, index)
        if key is not None:
            return {"item": dict(item or {}), "key": key, "results": {}}
        state = case.execution_input()
        for element in self.saga.steps:
            if isinstance(element, Parallel) and any(s.name == step for s in element.steps):
                branches: list[dict[str, Any]] = [{"results": {}} for _ in element.branches]
                state["groups"] = {element.name: {"branches": branches, "failures": []}}
        return state

    def _task(self, name: str) -> Mapping[str, Any]:
        """The Task state ``name``, wherever it sits (top level, branch, item processor)."""
        machines: list[Mapping[str, Any]] = [self._definition]
        while machines:
            machine = machines.pop()
            if name in machine["States"]:
                found: Mapping[str, Any] = machine["States"][name]
                return found
            for state in machine["States"].values():
                machines += nested_machines(state)
        raise KeyError(name)

    def _invoke(
        self, state_name: str, case: ApprovedCase, state: dict[str, Any], retry_count: int
    ) -> StepResult:
        parameters = self._task(state_name)["Parameters"]
        name = execution_name(case.tenant_id, case.case_id, case.approval.revision)
        context = {
            "Execution": {"Name": name, "Input": case.execution_input()},
            "State": {"Name": state_name, "RetryCount": retry_count},
        }
        env = Env(state, context, random.Random(0))  # noqa: S311 - no secrets
        event = compile_template(parameters, "Parameters").evaluate(env)["Payload"]
        return StepResult.model_validate(self._handlers[state_name](event, _Context()))


def _at(path: str, items: list[Any]) -> dict[str, Any]:
    """``{"a": {"b": items}}`` for ``path`` ``a.b``: a case holding just this list."""
    node: dict[str, Any] = {}
    top = node
    parts = path.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = items
    return top
