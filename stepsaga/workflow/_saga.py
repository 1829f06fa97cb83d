"""The saga DSL: frozen values validated when the saga is defined, not at synth or deploy.

A ``Saga`` is an ordered list of ``Step``s, ``Parallel`` groups (steps that run at once) and
``ForEach`` per-item steps (one step per element of a list in the case). Each
side-effecting step names its operation (part of the action key) and its effect class
(undeclared = ``physical``), and says what happens to its effect when a *later* step is
rejected: ``Compensate(...)`` runs an idempotent undo task, ``Escalate(reason)`` records a
reconciliation item instead (for effects that must not be reversed automatically, like
refunds).

Function registry: every Task names a logical function (``ReserveStock``) and the
``StepHandler`` that implements it as a ``module:attr`` reference (default
``tasks.<operation>:<StepName>``, compensations ``compensations.<operation>:<Name>``); the
reconciler is built in. ``Saga.functions`` lists them; the compiled ASL holds
``${<Function>FunctionArn}`` placeholders that CDK's ``DefinitionSubstitutions``
(``Saga.definition_substitutions``) or the local engine
(``stepsaga.workflow._substitutions.render``) fill in. Handlers are referenced by name only
and never imported here (compiling a saga costs no client library).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ConfigDict

from stepsaga._model.case import ApprovedCase
from stepsaga.errors import InvalidInputError, SagaDefinitionError
from stepsaga.workflow import _names as names
from stepsaga.workflow._effects import UNDECLARED, EffectClass, has_effect
from stepsaga.workflow._retry import DEFAULT_RETRY, RetryPolicy

#: Where the generic event fields come from in the execution input (the case).
IDENTITY_PATHS: dict[str, str] = {
    "tenant_id": "tenant_id",
    "case_id": "case_id",
    "revision": "approval.revision",
    "approved_at": "approval.approved_at",
}

#: Logical name of the one function that handles every reconciliation event.
RECONCILER_FUNCTION = "Reconcile"
#: The built-in reconciler (``stepsaga._handlers.reconcile``): no app code to write.
RECONCILER_HANDLER = "stepsaga._handlers.reconcile:reconciler"

#: A Lambda invocation lasts at most 15 minutes.
MAX_TASK_TIMEOUT = 900
DEFAULT_TASK_TIMEOUT = 60
#: Standard executions last at most a year; an operator gets a week by default.
MAX_DECISION_TIMEOUT = 365 * 24 * 3600
DEFAULT_DECISION_TIMEOUT = 7 * 24 * 3600


def _effect(value: object, where: str) -> EffectClass:
    if isinstance(value, str) and value in {e.value for e in EffectClass}:
        return EffectClass(value)
    allowed = ", ".join(e.value for e in EffectClass)
    raise SagaDefinitionError(f"{where}: effect must be one of {allowed}, got {value!r}")


def _retry(value: Sequence[RetryPolicy], where: str) -> tuple[RetryPolicy, ...]:
    policies = tuple(value)
    seen: set[str] = set()
    for policy in policies:
        if not isinstance(policy, RetryPolicy):
            raise SagaDefinitionError(f"{where}: retry must be RetryPolicy values, got {policy!r}")
        for error in policy.errors:
            if error in seen:
                raise SagaDefinitionError(
                    f"{where}: {error} appears in two retriers (only the first would match)"
                )
            seen.add(error)
    return policies


def _timeout(value: int, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SagaDefinitionError(f"{where}: timeout_seconds must be an integer")
    if not 1 <= value <= MAX_TASK_TIMEOUT:
        raise SagaDefinitionError(
            f"{where}: timeout_seconds must be between 1 and {MAX_TASK_TIMEOUT}, got {value}"
        )


def _state_name(value: object, where: str) -> None:
    if not isinstance(value, str) or not names.STATE_NAME.match(value):
        raise SagaDefinitionError(
            f"{where}: name must be PascalCase letters and digits (at most 48), got {value!r}"
        )


def _operation(value: object, where: str) -> None:
    if not isinstance(value, str) or not names.OPERATION.match(value):
        raise SagaDefinitionError(
            f"{where}: operation must be snake_case (a-z, 0-9, _; at most 48), got {value!r}"
        )


def _handler(value: object, where: str) -> None:
    if not isinstance(value, str) or not names.HANDLER_REF.match(value):
        raise SagaDefinitionError(
            f"{where}: handler must be a 'package.module:StepHandler' reference, got {value!r}"
        )


class FreeParams(BaseModel):
    """The params of a step that declares no ``params_model``: any JSON object."""

    model_config = ConfigDict(extra="allow", frozen=True)


@dataclass(frozen=True)
class Compensate:
    """Undo a completed step with its own idempotent task when a later step is rejected.

    ``name`` is the compensation's state and function name; its action key derives from
    the original action's key. If it still fails after its retries, the failure is
    recorded for reconciliation and the execution fails with ``Saga.CompensationFailed``.
    """

    name: str
    operation: str
    effect: EffectClass = UNDECLARED
    #: The ``StepHandler`` (``module:attr``); default ``compensations.<operation>:<name>``.
    handler: str | None = None
    retry: Sequence[RetryPolicy] = DEFAULT_RETRY
    timeout_seconds: int = DEFAULT_TASK_TIMEOUT

    def __post_init__(self) -> None:
        where = f"compensation {self.name!r}"
        _state_name(self.name, where)
        _operation(self.operation, where)
        object.__setattr__(self, "effect", _effect(self.effect, where))
        if self.effect is EffectClass.READ:
            raise SagaDefinitionError(
                f"{where}: a compensation changes something; it cannot be read"
            )
        _handler(self.handler_ref, where)
        object.__setattr__(self, "retry", _retry(self.retry, where))
        _timeout(self.timeout_seconds, where)

    @property
    def handler_ref(self) -> str:
        return self.handler or f"compensations.{self.operation}:{self.name}"


@dataclass(frozen=True)
class Escalate:
    """Do not reverse this step automatically when a later step is rejected: record a
    reconciliation item saying ``reason`` (e.g. "card charged, seats not provisioned")
    for a person to decide. Never an automatic charge."""

    reason: str

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise SagaDefinitionError("escalation: reason must say what a person has to decide")
        if len(self.reason) > 200:
            raise SagaDefinitionError("escalation: reason must be at most 200 characters")


OnLaterFailure = Compensate | Escalate


@dataclass(frozen=True)
class Step:
    """One forward Task. ``name`` is its state and function name."""

    name: str
    #: Part of the action key; required unless the step is a ``read``.
    operation: str | None = None
    #: Undeclared means ``physical``: never repeated on an uncertain outcome.
    effect: EffectClass = UNDECLARED
    #: Dotted path in the execution input whose value is the step's ``params``
    #: (e.g. ``"reserve"`` → ``$$.Execution.Input.reserve``); ``None`` sends ``{}``.
    params: str | None = None
    #: The pydantic model of ``params`` (documents the event; checked against the input
    #: model when the saga has one).
    params_model: type[BaseModel] | None = None
    #: Required for side-effecting steps: what to do when a later step is rejected.
    on_later_failure: OnLaterFailure | None = None
    #: The ``StepHandler`` (``module:attr``); default ``tasks.<operation>:<name>``.
    handler: str | None = None
    retry: Sequence[RetryPolicy] = DEFAULT_RETRY
    timeout_seconds: int = DEFAULT_TASK_TIMEOUT
    #: Money-moving steps: a person's ``not_applied`` on an item of this step (or of its
    #: compensation) re-runs the effect, so it needs a second, other person
    #: (``stepsaga.ledger._approvals``). ``applied`` needs one.
    dual_control: bool = False

    def __post_init__(self) -> None:
        where = f"step {self.name!r}"
        _state_name(self.name, where)
        if not isinstance(self.dual_control, bool):
            raise SagaDefinitionError(f"{where}: dual_control must be True or False")
        object.__setattr__(self, "effect", _effect(self.effect, where))
        if self.operation is None:
            if self.has_effect:
                raise SagaDefinitionError(
                    f"{where}: a {self.effect.value} step must declare its operation "
                    "(it is part of the action key)"
                )
            object.__setattr__(self, "operation", names.snake(self.name))
        _operation(self.operation, where)
        if self.params is not None and (
            not isinstance(self.params, str) or not names.CASE_PATH.match(self.params)
        ):
            raise SagaDefinitionError(
                f"{where}: params must be a dotted path in the case like 'refund', got "
                f"{self.params!r}"
            )
        if self.params_model is not None and not (
            isinstance(self.params_model, type) and issubclass(self.params_model, BaseModel)
        ):
            raise SagaDefinitionError(f"{where}: params_model must be a pydantic model class")
        if self.has_effect and self.on_later_failure is None:
            raise SagaDefinitionError(
                f"{where}: say what happens to its effect when a later step is rejected: "
                "on_later_failure=Compensate(...) or Escalate(reason)"
            )
        if not self.has_effect and self.on_later_failure is not None:
            raise SagaDefinitionError(
                f"{where}: a read step has no effect to compensate or escalate"
            )
        if not self.has_effect and self.dual_control:
            raise SagaDefinitionError(
                f"{where}: a read step opens no reconciliation item; dual_control needs an effect"
            )
        if self.on_later_failure is not None and not isinstance(
            self.on_later_failure, Compensate | Escalate
        ):
            raise SagaDefinitionError(
                f"{where}: on_later_failure must be Compensate(...) or Escalate(reason)"
            )
        _handler(self.handler_ref, where)
        object.__setattr__(self, "retry", _retry(self.retry, where))
        _timeout(self.timeout_seconds, where)

    @property
    def has_effect(self) -> bool:
        return has_effect(self.effect)

    @property
    def op(self) -> str:
        """The operation (always set after validation)."""
        assert self.operation is not None
        return self.operation

    @property
    def handler_ref(self) -> str:
        return self.handler or f"tasks.{self.operation}:{self.name}"

    @property
    def params_type(self) -> type[BaseModel]:
        """What the handler's ``call.params`` is validated as."""
        return self.params_model or FreeParams

    @property
    def compensation(self) -> Compensate | None:
        return self.on_later_failure if isinstance(self.on_later_failure, Compensate) else None

    @property
    def escalation(self) -> Escalate | None:
        return self.on_later_failure if isinstance(self.on_later_failure, Escalate) else None


#: AWS runs at most 40 iterations of an inline Map at once.
MAX_ITEM_CONCURRENCY = 40


def _steps_of(value: object, where: str) -> tuple[Step, ...]:
    if isinstance(value, Step) or not isinstance(value, Sequence):
        raise SagaDefinitionError(f"{where}: must be a list of Step values")
    steps = tuple(value)
    if not steps or not all(isinstance(s, Step) for s in steps):
        raise SagaDefinitionError(f"{where}: must be a non-empty list of Step values")
    return steps


@dataclass(frozen=True)
class Parallel:
    """Steps that run at once: each branch is a list of steps run in order, and the
    branches run concurrently (an ASL ``Parallel`` state).

    A rejection in one branch does not cancel the others: every branch runs to its end
    (an uncertain step waits in reconciliation inside its branch), then, if any branch was
    rejected, the completed steps of every branch and the steps before the group are
    undone, each once, latest first (branch by branch, last branch first).
    """

    name: str
    branches: Sequence[Sequence[Step]]

    def __post_init__(self) -> None:
        where = f"parallel group {self.name!r}"
        _state_name(self.name, where)
        if isinstance(self.branches, Step) or not isinstance(self.branches, Sequence):
            raise SagaDefinitionError(f"{where}: branches must be a list of lists of steps")
        branches = tuple(
            _steps_of(b, f"{where}: branch {i + 1}") for i, b in enumerate(self.branches)
        )
        if len(branches) < 2:
            raise SagaDefinitionError(f"{where}: needs at least two branches")
        object.__setattr__(self, "branches", branches)

    @property
    def steps(self) -> tuple[Step, ...]:
        """Every step of every branch, branch by branch."""
        return tuple(step for branch in self.branches for step in branch)


@dataclass(frozen=True)
class ForEach:
    """One ``step`` per element of the list at ``items`` in the case (an inline ASL
    ``Map``), at most ``max_concurrency`` at once.

    Each item's action key is ``…:<operation>#<item id>``, the item id being the value of
    the item's ``item_key`` field — never its position, which changes when the list does,
    unless ``stable_index=True`` declares the list's order fixed. The step's params are the
    item itself. Completed items are undone one by one when a later step (or another item)
    is rejected; an uncertain item waits in reconciliation while the others go on.
    """

    name: str
    #: Dotted path in the case of a JSON array (``"shipment.lines"``).
    items: str
    step: Step
    #: The field of each item whose value identifies it (``"line_id"``).
    item_key: str | None = None
    #: Identify items by position: only when the list's order can never change.
    stable_index: bool = False
    max_concurrency: int = 1

    def __post_init__(self) -> None:
        where = f"per-item step {self.name!r}"
        _state_name(self.name, where)
        if not isinstance(self.items, str) or not names.CASE_PATH.match(self.items):
            raise SagaDefinitionError(
                f"{where}: items must be a dotted path in the case like 'shipment.lines', "
                f"got {self.items!r}"
            )
        if not isinstance(self.step, Step):
            raise SagaDefinitionError(f"{where}: step must be a Step, got {self.step!r}")
        if self.step.params is not None:
            raise SagaDefinitionError(
                f"{where}: step {self.step.name!r} takes the item as its params; leave params unset"
            )
        if self.item_key is not None and (
            not isinstance(self.item_key, str) or not names.FIELD_NAME.match(self.item_key)
        ):
            raise SagaDefinitionError(
                f"{where}: item_key must be a field name of the items, got {self.item_key!r}"
            )
        if (self.item_key is None) == (self.stable_index is not True):
            raise SagaDefinitionError(
                f"{where}: declare how an item is identified in its action key: "
                "item_key='<field>' or, only if the list's order never changes, "
                "stable_index=True"
            )
        c = self.max_concurrency
        if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= MAX_ITEM_CONCURRENCY:
            raise SagaDefinitionError(
                f"{where}: max_concurrency must be between 1 and {MAX_ITEM_CONCURRENCY}, got {c!r}"
            )

    @property
    def steps(self) -> tuple[Step, ...]:
        return (self.step,)

    def item_ids(self, case: Mapping[str, Any]) -> tuple[str, ...]:
        """The item ids of ``case`` (the execution input), in list order; a list that is
        missing, an item without its key, a bad or repeated id is ``InvalidInputError``."""
        node: Any = case
        for part in self.items.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if not isinstance(node, list):
            raise InvalidInputError(f"{self.items}: must be a list", field=self.items)
        ids: list[str] = []
        for index, item in enumerate(node):
            where = f"{self.items}[{index}]"
            if self.item_key is None:
                value: Any = index
            elif isinstance(item, Mapping) and self.item_key in item:
                value = item[self.item_key]
            else:
                raise InvalidInputError(f"{where}: needs {self.item_key}", field=where)
            text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
            if not isinstance(text, str) or not names.ITEM_ID.match(text):
                raise InvalidInputError(
                    f"{where}.{self.item_key}: must be 1-64 letters, digits, '.', '_' or '-' "
                    "starting with a letter or digit",
                    field=f"{where}.{self.item_key}",
                )
            if text in ids:
                raise InvalidInputError(
                    f"{where}.{self.item_key}: {text!r} appears twice (each item needs its "
                    "own action key)",
                    field=f"{where}.{self.item_key}",
                )
            ids.append(text)
        return tuple(ids)


#: What a saga is a sequence of.
Element = Step | Parallel | ForEach


@dataclass(frozen=True)
class Saga:
    """An ordered saga; validated as a whole when constructed.

    The execution input is the validated case (``ApprovedCase.execution_input()``), so it
    carries ``tenant_id``, ``case_id``, ``approval.revision`` and ``approval.approved_at``
    (``IDENTITY_PATHS``). Give ``input_model`` to have every path checked at definition.
    """

    #: The state machine's name on both backends (AWS name rules).
    name: str
    #: In order; a ``Parallel`` or ``ForEach`` is one element (its steps run at once).
    steps: Sequence[Element]
    #: The execution input's model: an ``ApprovedCase`` subclass (``stepsaga start``
    #: validates case files with it). ``None`` accepts any case with the identity fields.
    input_model: type[ApprovedCase] | None = None
    #: How long a case waits for an operator's decision before the execution times out
    #: (it can then be redriven, which waits again).
    decision_timeout_seconds: int = DEFAULT_DECISION_TIMEOUT
    comment: str = ""
    #: ``"JSONPath"`` (the default) or ``"JSONata"``: the query language of the compiled ASL
    #: (same states, routes and data either way; ``stepsaga.workflow._jsonata``).
    query_language: names.QueryLanguage | str = names.QueryLanguage.JSONPATH

    def __post_init__(self) -> None:
        where = f"saga {self.name!r}"
        if not isinstance(self.name, str) or not names.SAGA_NAME.match(self.name):
            raise SagaDefinitionError(
                f"{where}: name must be 1-80 letters, digits, '-' or '_' (AWS name rules)"
            )
        steps = tuple(self.steps)
        object.__setattr__(self, "steps", steps)
        if not steps:
            raise SagaDefinitionError(f"{where}: needs at least one step")
        for step in steps:
            if not isinstance(step, Step | Parallel | ForEach):
                raise SagaDefinitionError(
                    f"{where}: steps must be Step, Parallel or ForEach values, got {step!r}"
                )
        if self.input_model is not None and not (
            isinstance(self.input_model, type) and issubclass(self.input_model, ApprovedCase)
        ):
            raise SagaDefinitionError(
                f"{where}: input_model must extend stepsaga.ApprovedCase (tenant, case id, "
                "approval)"
            )
        d = self.decision_timeout_seconds
        if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= MAX_DECISION_TIMEOUT:
            raise SagaDefinitionError(
                f"{where}: decision_timeout_seconds must be between 1 and "
                f"{MAX_DECISION_TIMEOUT}, got {d!r}"
            )
        try:
            language = names.QueryLanguage(self.query_language)
        except ValueError:
            raise SagaDefinitionError(
                f"{where}: query_language must be JSONPath or JSONata, got {self.query_language!r}"
            ) from None
        object.__setattr__(self, "query_language", language)
        self._check_operations(where)
        self._check_state_names(where)
        self._check_functions(where)
        if self.input_model is not None:
            self._check_reserved_fields(where, self.input_model)
            self._check_paths(where, self.input_model)
            object.__setattr__(self, "steps", self._with_params_models(self.input_model))

    @property
    def all_steps(self) -> tuple[Step, ...]:
        """Every step, those in parallel groups and per-item steps included, in order."""
        out: list[Step] = []
        for element in self.steps:
            out += [element] if isinstance(element, Step) else list(element.steps)
        return tuple(out)

    def check_input(self, execution_input: Mapping[str, Any]) -> None:
        """Refuse, before anything starts, an input the machine would misread: a top-level
        field the machine writes itself (``names.RESERVED_CASE_FIELDS``), per-item lists
        that cannot key every item (missing list or key, bad or repeated id), or a value the
        steps' request digest would refuse (money finer than its currency, an unknown
        currency, text that is no plain decimal — the digest's own code, run over the whole
        input): ``InvalidInputError`` naming the field."""
        for field in sorted(names.RESERVED_CASE_FIELDS & set(execution_input)):
            raise InvalidInputError(
                f"case field {field!r} is reserved: saga {self.name} keeps its own "
                f"{field!r} next to the case's fields (rename it)",
                field=field,
            )
        for element in self.steps:
            if isinstance(element, ForEach):
                element.item_ids(execution_input)
        from stepsaga.ledger._canonical import canonical_params  # the ledger: on first start

        canonical_params(execution_input, path="")

    def per_item(self, step: str) -> ForEach | None:
        """The ``ForEach`` that runs step ``step`` once per item, if any."""
        for element in self.steps:
            if isinstance(element, ForEach) and element.step.name == step:
                return element
        return None

    # --- the function registry ---------------------------------------------------------

    @property
    def functions(self) -> dict[str, str]:
        """Logical function name → handler reference (``module:attr``), in first-use order."""
        functions: dict[str, str] = {}
        for step in self.all_steps:
            functions[step.name] = step.handler_ref
        for step in self.all_steps:
            if step.compensation is not None:
                functions[step.compensation.name] = step.compensation.handler_ref
        if self.uses_reconciler:
            functions[RECONCILER_FUNCTION] = RECONCILER_HANDLER
        return functions

    @property
    def uses_reconciler(self) -> bool:
        return any(step.has_effect for step in self.all_steps)

    def definition_substitutions(self, arn_for: Callable[[str], str]) -> dict[str, str]:
        """``DefinitionSubstitutions`` for the compiled ASL: ``<Function>FunctionArn`` →
        ``arn_for(<Function>)`` for every function in ``functions``."""
        return {names.substitution_key(f): arn_for(f) for f in self.functions}

    def step(self, name: str) -> Step:
        for step in self.all_steps:
            if step.name == name:
                return step
        raise KeyError(name)

    # --- whole-saga checks -------------------------------------------------------------

    def _check_operations(self, where: str) -> None:
        owners: dict[str, str] = {}
        for step in self.all_steps:
            ops = [(step.op, step.name)]
            if step.compensation is not None:
                ops.append((step.compensation.operation, step.compensation.name))
            for op, owner in ops:
                if op in owners:
                    raise SagaDefinitionError(
                        f"{where}: operation {op!r} is used by {owners[op]} and {owner} "
                        "(each action needs its own key)"
                    )
                owners[op] = owner

    def state_names(self) -> list[str]:
        """Every state the compiled machine may contain (unchecked for reachability)."""
        states: list[str] = []
        for element in self.steps:
            states += self._group_state_names(element)
        for step in self.all_steps:
            states.append(step.name)
            if step.has_effect:
                states += [
                    names.reconcile(step.name),
                    names.decision(step.name),
                    names.await_decision(step.name),
                ]
            if step.compensation is not None:
                comp = step.compensation.name
                states += [comp, names.record_failure(comp), names.decision(comp)]
            if step.escalation is not None:
                states.append(names.escalate(step.name))
        states += [names.COMPLETED, names.COMPENSATED, names.COMPENSATION_FAILED]
        return states

    @staticmethod
    def _group_state_names(element: Element) -> list[str]:
        if isinstance(element, Parallel):
            states = [element.name, names.group_outcome(element.name)]
            states.append(names.group_rejected(element.name))
            for i in range(len(element.branches)):
                states += [names.branch_done(element.name, i)]
                states += [names.branch_rejected(element.name, i)]
                if len(element.branches[i]) > 1:
                    states += [names.branch_rejected_later(element.name, i)]
            states += [names.was_applied(s.name) for s in element.steps if s.has_effect]
            return states
        if isinstance(element, ForEach):
            step = element.step.name
            states = [element.name, names.group_outcome(element.name)]
            states += [names.group_rejected(element.name)]
            states += [names.item_done(step), names.item_rejected(step)]
            if element.step.has_effect:
                states += [names.was_applied(step), names.undo_items(step)]
                states += [names.undo_outcome(step), names.item_undone(step)]
            if element.step.compensation is not None:
                states.append(names.item_not_undone(element.step.compensation.name))
            return states
        return []

    def _check_state_names(self, where: str) -> None:
        seen: set[str] = set()
        for state in self.state_names():
            if state in seen:
                raise SagaDefinitionError(
                    f"{where}: state name {state!r} is used twice (rename a step or compensation)"
                )
            if len(state) > names.MAX_STATE_NAME:
                raise SagaDefinitionError(
                    f"{where}: state name {state!r} is longer than {names.MAX_STATE_NAME}"
                )
            seen.add(state)

    def _check_functions(self, where: str) -> None:
        owners = [s.name for s in self.all_steps] + [
            s.compensation.name for s in self.all_steps if s.compensation is not None
        ]
        if RECONCILER_FUNCTION in owners:
            raise SagaDefinitionError(
                f"{where}: {RECONCILER_FUNCTION!r} is the reconciler's function name; "
                "rename the step or compensation"
            )

    def _with_params_models(self, model: type[BaseModel]) -> tuple[Element, ...]:
        """Steps whose ``params_model`` is left out get the input model's type at their
        ``params`` path (a per-item step: its list's item type): a step's params are
        declared once, in the input model."""

        def typed(step: Step, target: type[BaseModel] | None) -> Step:
            if step.params_model is None and target is not None:
                return replace(step, params_model=target)
            return step

        def at_params(step: Step) -> Step:
            return typed(step, _model_at(model, step.params) if step.params else None)

        elements: list[Element] = []
        for element in self.steps:
            if isinstance(element, Step):
                elements.append(at_params(element))
            elif isinstance(element, Parallel):
                branches = [[at_params(s) for s in b] for b in element.branches]
                elements.append(replace(element, branches=branches))
            else:
                item = _item_model_at(model, element.items)
                elements.append(replace(element, step=typed(element.step, item)))
        return tuple(elements)

    @staticmethod
    def _check_reserved_fields(where: str, model: type[BaseModel]) -> None:
        """The machine's state data is the case plus ``names.StateField``'s fields: a case
        model with one of those at its top level would be overwritten."""
        for name, info in model.model_fields.items():
            for used in sorted({name, info.alias or name, info.serialization_alias or name}):
                if used in names.RESERVED_CASE_FIELDS:
                    raise SagaDefinitionError(
                        f"{where}: input model {model.__name__} field {used!r} is reserved "
                        "(the compiled machine keeps its own "
                        f"{', '.join(sorted(names.RESERVED_CASE_FIELDS))} next to the case)"
                    )

    def _check_paths(self, where: str, model: type[BaseModel]) -> None:
        for field, path in IDENTITY_PATHS.items():
            problem = _resolve(model, path)
            if problem:
                raise SagaDefinitionError(
                    f"{where}: the input model must provide {path!r} (the events' {field}): "
                    f"{problem}"
                )
        for element in self.steps:
            if isinstance(element, ForEach):
                self._check_items(element, model)
        for step in self.all_steps:
            if step.params is None:
                continue
            problem = _resolve(model, step.params)
            if problem:
                raise SagaDefinitionError(f"step {step.name!r}: params {step.params!r}: {problem}")
            target = _model_at(model, step.params)
            if (
                step.params_model is not None
                and target is not None
                and target is not step.params_model
            ):
                raise SagaDefinitionError(
                    f"step {step.name!r}: params {step.params!r} is a {target.__name__} in the "
                    f"input model, not a {step.params_model.__name__}"
                )

    @staticmethod
    def _check_items(element: ForEach, model: type[BaseModel]) -> None:
        where = f"per-item step {element.name!r}: items {element.items!r}"
        problem = _resolve(model, element.items)
        if problem:
            raise SagaDefinitionError(f"{where}: {problem}")
        item = _item_model_at(model, element.items)
        if item is None:
            raise SagaDefinitionError(f"{where} must be a list of pydantic models")
        if element.item_key is not None:
            field = item.model_fields.get(element.item_key)
            if field is None or not field.is_required():
                raise SagaDefinitionError(
                    f"{where}: {item.__name__} needs a required field {element.item_key!r} "
                    "(the item key)"
                )
        step = element.step
        if step.params_model is not None and step.params_model is not item:
            raise SagaDefinitionError(
                f"step {step.name!r}: its items are {item.__name__} in the input model, not "
                f"{step.params_model.__name__}"
            )


def _field_type(model: type[BaseModel], name: str) -> Any:
    field = model.model_fields.get(name)
    return None if field is None else field.annotation


def _resolve(model: type[BaseModel], path: str) -> str:
    """Empty when ``path`` exists in ``model``; otherwise what is wrong."""
    current: Any = model
    walked: list[str] = []
    for part in path.split("."):
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return f"{'.'.join(walked)} has no fields"
        if part not in current.model_fields:
            return f"{current.__name__} has no field {part!r}"
        current = _field_type(current, part)
        walked.append(part)
    return ""


def _model_at(model: type[BaseModel], path: str) -> type[BaseModel] | None:
    current: Any = model
    for part in path.split("."):
        current = _field_type(current, part)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return current
    return None


def _item_model_at(model: type[BaseModel], path: str) -> type[BaseModel] | None:
    """The element model of the list (``list[X]``, ``tuple[X, ...]``) at ``path``."""
    current: Any = model
    for part in path.split("."):
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        current = _field_type(current, part)
    if get_origin(current) not in (list, tuple):
        return None
    args = [a for a in get_args(current) if a is not Ellipsis]
    if len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        return args[0]
    return None
