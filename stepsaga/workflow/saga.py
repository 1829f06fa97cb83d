"""The saga DSL: frozen values validated when the saga is defined, not at synth or deploy.

A ``Saga`` is an ordered list of ``Step``s. Each side-effecting step names its operation
(part of the action key) and its effect class (undeclared = ``physical``), and says what
happens to its effect when a *later* step is rejected: ``Compensate(...)`` runs an
idempotent undo task, ``Escalate(reason)`` records a reconciliation item instead (for
effects that must not be reversed automatically, like refunds).

Function registry: every Task names a logical function (``ReserveStock``) and the
``StepHandler`` that implements it as a ``module:attr`` reference (default
``tasks.<operation>:<StepName>``, compensations ``compensations.<operation>:<Name>``); the
reconciler is built in. ``Saga.functions`` lists them; the compiled ASL holds
``${<Function>FunctionArn}`` placeholders that CDK's ``DefinitionSubstitutions``
(``Saga.definition_substitutions``) or the local engine
(``stepsaga.workflow.substitutions.render``) fill in. Handlers are referenced by name only
and never imported here (compiling a saga costs no client library).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ConfigDict

from stepsaga.case import ApprovedCase
from stepsaga.workflow import names
from stepsaga.workflow.effects import UNDECLARED, EffectClass, has_effect
from stepsaga.workflow.retry import DEFAULT_RETRY, RetryPolicy, SagaDefinitionError

#: Where the generic event fields come from in the execution input (the case).
IDENTITY_PATHS: dict[str, str] = {
    "tenant_id": "tenant_id",
    "case_id": "case_id",
    "revision": "approval.revision",
    "approved_at": "approval.approved_at",
}

#: Logical name of the one function that handles every reconciliation event.
RECONCILER_FUNCTION = "Reconcile"
#: The built-in reconciler (``stepsaga.handlers.reconcile``): no app code to write.
RECONCILER_HANDLER = "stepsaga.handlers.reconcile:reconciler"

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
    #: (e.g. ``"reserve"`` → ``$.case.reserve``); ``None`` sends ``{}``.
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

    def __post_init__(self) -> None:
        where = f"step {self.name!r}"
        _state_name(self.name, where)
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


@dataclass(frozen=True)
class Saga:
    """An ordered saga; validated as a whole when constructed.

    The execution input is the validated case (``ApprovedCase.execution_input()``), so it
    carries ``tenant_id``, ``case_id``, ``approval.revision`` and ``approval.approved_at``
    (``IDENTITY_PATHS``). Give ``input_model`` to have every path checked at definition.
    """

    #: The state machine's name on both backends (AWS name rules).
    name: str
    steps: Sequence[Step]
    #: The execution input's model: an ``ApprovedCase`` subclass (``stepsaga start``
    #: validates case files with it). ``None`` accepts any case with the identity fields.
    input_model: type[ApprovedCase] | None = None
    #: How long a case waits for an operator's decision before the execution times out
    #: (it can then be redriven, which waits again).
    decision_timeout_seconds: int = DEFAULT_DECISION_TIMEOUT
    comment: str = ""
    #: ``"JSONPath"`` (the default) or ``"JSONata"``: the query language of the compiled ASL
    #: (same states, routes and data either way; ``stepsaga.workflow.jsonata``).
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
            if not isinstance(step, Step):
                raise SagaDefinitionError(f"{where}: steps must be Step values, got {step!r}")
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
            self._check_paths(where, self.input_model)
            object.__setattr__(self, "steps", self._with_params_models(self.input_model))

    # --- the function registry ---------------------------------------------------------

    @property
    def functions(self) -> dict[str, str]:
        """Logical function name → handler reference (``module:attr``), in first-use order."""
        functions: dict[str, str] = {}
        for step in self.steps:
            functions[step.name] = step.handler_ref
        for step in self.steps:
            if step.compensation is not None:
                functions[step.compensation.name] = step.compensation.handler_ref
        if self.uses_reconciler:
            functions[RECONCILER_FUNCTION] = RECONCILER_HANDLER
        return functions

    @property
    def uses_reconciler(self) -> bool:
        return any(step.has_effect for step in self.steps)

    def definition_substitutions(self, arn_for: Callable[[str], str]) -> dict[str, str]:
        """``DefinitionSubstitutions`` for the compiled ASL: ``<Function>FunctionArn`` →
        ``arn_for(<Function>)`` for every function in ``functions``."""
        return {names.substitution_key(f): arn_for(f) for f in self.functions}

    def step(self, name: str) -> Step:
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(name)

    # --- whole-saga checks -------------------------------------------------------------

    def _check_operations(self, where: str) -> None:
        owners: dict[str, str] = {}
        for step in self.steps:
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
        states = [names.PREPARE]
        for step in self.steps:
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
        owners = [s.name for s in self.steps] + [
            s.compensation.name for s in self.steps if s.compensation is not None
        ]
        if RECONCILER_FUNCTION in owners:
            raise SagaDefinitionError(
                f"{where}: {RECONCILER_FUNCTION!r} is the reconciler's function name; "
                "rename the step or compensation"
            )

    def _with_params_models(self, model: type[BaseModel]) -> tuple[Step, ...]:
        """Steps whose ``params_model`` is left out get the input model's type at their
        ``params`` path: a step's params are declared once, in the input model."""
        steps = []
        for step in self.steps:
            target = _model_at(model, step.params) if step.params is not None else None
            if step.params_model is None and target is not None:
                step = replace(step, params_model=target)
            steps.append(step)
        return tuple(steps)

    def _check_paths(self, where: str, model: type[BaseModel]) -> None:
        for field, path in IDENTITY_PATHS.items():
            problem = _resolve(model, path)
            if problem:
                raise SagaDefinitionError(
                    f"{where}: the input model must provide {path!r} (the events' {field}): "
                    f"{problem}"
                )
        for step in self.steps:
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
