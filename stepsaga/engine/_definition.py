"""Load an ASL definition into frozen state objects, refusing what the engine lacks.

Everything is checked here, once, before any execution starts: unknown or unimplemented
fields and state types, path and intrinsic syntax, ``Next``/``Default``/``Catch`` targets,
reachability, retrier bounds, in the top-level machine and in every ``Parallel`` branch and
``Map`` item processor. Errors name the state and the field
(:class:`~stepsaga.engine._errors.InvalidDefinition`). Nothing is silently ignored.

:data:`REFUSED` is the one list of what the engine does not implement; the loader's
messages come from it, and the workflow compiler and validator should read it rather than
keep lists of their own.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from stepsaga.engine import _intrinsics as intrinsics
from stepsaga.engine import _jsonata_eval as jsonata_eval
from stepsaga.engine._choice import (
    ChoiceRuleError,
    Predicate,
    compile_condition,
    compile_rule,
    parse_timestamp,
)
from stepsaga.engine._errors import STATES_ALL
from stepsaga.engine._jsonata_eval import Expression
from stepsaga.engine._jsonata_eval import Template as JTemplate
from stepsaga.engine._paths import Path, PathSyntaxError, parse
from stepsaga.engine._payload import Template, compile_template
from stepsaga.engine._retry import Catcher, JitterStrategy, Retrier
from stepsaga.engine._variables import Assign, AssignError, compile_assign
from stepsaga.errors import InvalidDefinition, TemplateError

#: A payload template in either query language (both have ``evaluate(env)``).
AnyTemplate = Template | JTemplate

LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
LAMBDA_INVOKE_WAIT = "arn:aws:states:::lambda:invoke.waitForTaskToken"
_MAX_SECONDS = 99_999_999
_MAX_DELAY_SECONDS = 31_622_401


class StateType(StrEnum):
    TASK = "Task"
    PASS = "Pass"  # noqa: S105
    CHOICE = "Choice"
    WAIT = "Wait"
    SUCCEED = "Succeed"
    FAIL = "Fail"
    PARALLEL = "Parallel"
    MAP = "Map"


@dataclass(frozen=True)
class Refusal:
    """One thing the embedded engine refuses. ``fields`` are the ASL fields whose mere
    presence means it (the loader names them in its error); empty when the loader has to
    look at a value instead (a resource ARN, a ``Mode``, a path's syntax)."""

    feature: str
    fields: tuple[str, ...] = ()


#: Everything the embedded engine refuses when a definition loads: the single list.
REFUSED: tuple[Refusal, ...] = (
    Refusal("cross-account Credentials", ("Credentials",)),
    Refusal("execution-level TimeoutSeconds", ()),
    Refusal(
        "Task resources other than arn:aws:states:::lambda:invoke and "
        "arn:aws:states:::lambda:invoke.waitForTaskToken; lambda:invoke parameters other "
        "than FunctionName, Payload, Qualifier, ClientContext, InvocationType "
        "(RequestResponse only) and LogType"
    ),
    Refusal(
        "Distributed Map (ProcessorConfig.Mode DISTRIBUTED, ExecutionType, ItemReader, "
        "ItemBatcher, ResultWriter, ToleratedFailure…, Label)",
        (
            "ItemReader",
            "ItemBatcher",
            "ResultWriter",
            "ToleratedFailurePercentage",
            "ToleratedFailurePercentagePath",
            "ToleratedFailureCount",
            "ToleratedFailureCountPath",
            "Label",
        ),
    ),
    Refusal(
        "JSONPath filters, slices, unions and recursive descent in reference paths "
        "(InputPath, OutputPath, ResultPath, ItemsPath, Choice Variable, …Path fields); "
        "Parameters, ResultSelector and Assign values take them"
    ),
    Refusal("the context object ($$) and variables in InputPath, OutputPath and ResultPath"),
    Refusal(
        f"intrinsic functions other than {', '.join(intrinsics.SUPPORTED)}",
    ),
    Refusal(
        "JSONata: a JSONPath state inside a JSONata machine; the JSONPath fields (InputPath, "
        "Parameters, ResultSelector, ResultPath, OutputPath, …Path) in a JSONata state and "
        "Arguments/Output in a JSONPath one; JSONata's $eval (Step Functions has $parse)"
    ),
)


class QueryLanguage(StrEnum):
    JSONPATH = "JSONPath"
    JSONATA = "JSONata"


_COMMON = {"Type", "Comment", "QueryLanguage"}
#: The fields of a JSONPath state, per type.
_FIELDS: dict[StateType, set[str]] = {
    StateType.TASK: _COMMON
    | {"Next", "End", "Resource", "Parameters", "ResultSelector", "ResultPath", "InputPath"}
    | {"OutputPath", "Retry", "Catch", "TimeoutSeconds", "TimeoutSecondsPath"}
    | {"HeartbeatSeconds", "HeartbeatSecondsPath", "Assign"},
    StateType.PASS: _COMMON
    | {"Next", "End", "Result", "ResultPath", "Parameters", "InputPath", "OutputPath"}
    | {"Assign"},
    StateType.CHOICE: _COMMON | {"Choices", "Default", "InputPath", "OutputPath", "Assign"},
    StateType.WAIT: _COMMON
    | {"Next", "End", "Seconds", "SecondsPath", "Timestamp", "TimestampPath", "InputPath"}
    | {"OutputPath", "Assign"},
    StateType.SUCCEED: _COMMON | {"InputPath", "OutputPath"},
    StateType.FAIL: _COMMON | {"Error", "ErrorPath", "Cause", "CausePath"},
    StateType.PARALLEL: _COMMON
    | {"Next", "End", "Branches", "Parameters", "ResultSelector", "ResultPath", "InputPath"}
    | {"OutputPath", "Retry", "Catch", "Assign"},
    StateType.MAP: _COMMON
    | {"Next", "End", "ItemProcessor", "Iterator", "ItemsPath", "ItemSelector", "Parameters"}
    | {"MaxConcurrency", "MaxConcurrencyPath", "ResultSelector", "ResultPath", "InputPath"}
    | {"OutputPath", "Retry", "Catch", "Assign"},
}
#: The fields of a JSONata state, per type (AWS: "Arguments and Output replace the five
#: JSONPath fields"; no ``…Path`` field; ``Items`` replaces ``ItemsPath``).
_JSONATA_FIELDS: dict[StateType, set[str]] = {
    StateType.TASK: _COMMON
    | {"Next", "End", "Resource", "Arguments", "Output", "Assign", "Retry", "Catch"}
    | {"TimeoutSeconds", "HeartbeatSeconds"},
    StateType.PASS: _COMMON | {"Next", "End", "Output", "Assign"},
    StateType.CHOICE: _COMMON | {"Choices", "Default", "Output", "Assign"},
    StateType.WAIT: _COMMON | {"Next", "End", "Seconds", "Timestamp", "Output", "Assign"},
    StateType.SUCCEED: _COMMON | {"Output"},
    StateType.FAIL: _COMMON | {"Error", "Cause"},
    StateType.PARALLEL: _COMMON
    | {"Next", "End", "Branches", "Arguments", "Output", "Assign", "Retry", "Catch"},
    StateType.MAP: _COMMON
    | {"Next", "End", "ItemProcessor", "Items", "ItemSelector", "MaxConcurrency", "Output"}
    | {"Assign", "Retry", "Catch"},
}
#: Fields each query language does not have (a state using them is refused at load).
_LANGUAGE_FIELDS = {
    QueryLanguage.JSONPATH: ("Arguments", "Output", "Items"),
    QueryLanguage.JSONATA: (
        "InputPath",
        "Parameters",
        "ResultSelector",
        "ResultPath",
        "OutputPath",
        "Result",
        "ItemsPath",
        "Iterator",
        "SecondsPath",
        "TimestampPath",
        "TimeoutSecondsPath",
        "HeartbeatSecondsPath",
        "MaxConcurrencyPath",
        "ErrorPath",
        "CausePath",
    ),
}
#: The JSONPath fields a JSONata state may not carry (what a translation must rewrite).
JSONPATH_ONLY_FIELDS = frozenset(_LANGUAGE_FIELDS[QueryLanguage.JSONATA])
_LAMBDA_PARAMETERS = {
    "FunctionName",
    "Payload",
    "Qualifier",
    "ClientContext",
    "InvocationType",
    "LogType",
}
_TOP_LEVEL = {"StartAt", "States", "Comment", "Version", "QueryLanguage"}
#: The fields the engine implements, per state type, in either query language (the
#: complement of :data:`REFUSED`).
STATE_FIELDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {kind.value: frozenset(fields | _JSONATA_FIELDS[kind]) for kind, fields in _FIELDS.items()}
)
_BRANCH = {"StartAt", "States", "Comment"}
_PROCESSOR = _BRANCH | {"ProcessorConfig"}
#: AWS runs at most 40 iterations of an inline Map at once, whatever MaxConcurrency says.
INLINE_MAP_CONCURRENCY = 40


@dataclass(frozen=True)
class IO:
    """``InputPath``/``OutputPath``: a path, or ``None`` for JSON ``null`` (→ ``{}``)."""

    input_path: Path | None
    output_path: Path | None


@dataclass(frozen=True)
class TaskState:
    name: str
    io: IO
    next: str | None
    waits_for_token: bool
    parameters: AnyTemplate  # Parameters, or JSONata Arguments
    function_name: str | None  # when static: lets the engine check the registry up front
    result_selector: Template | None
    result_path: Path | None
    retriers: tuple[Retrier, ...]
    catchers: tuple[Catcher, ...]
    timeout_seconds: int | None
    timeout_path: Path | None
    heartbeat_seconds: int | None
    heartbeat_path: Path | None
    assign: Assign | None = None
    output: JTemplate | None = None  # JSONata Output (None: the state's default output)
    jsonata: bool = False
    timeout_expr: Expression | None = None  # JSONata TimeoutSeconds "{% … %}"
    heartbeat_expr: Expression | None = None
    type: StateType = StateType.TASK

    @property
    def resource(self) -> str:
        return "invoke.waitForTaskToken" if self.waits_for_token else "invoke"


@dataclass(frozen=True)
class PassState:
    name: str
    io: IO
    next: str | None
    has_result: bool
    result: Any
    parameters: Template | None
    result_path: Path | None
    assign: Assign | None = None
    output: JTemplate | None = None  # JSONata Output (None: the state's default output)
    jsonata: bool = False
    type: StateType = StateType.PASS


@dataclass(frozen=True)
class ChoiceState:
    name: str
    io: IO
    choices: tuple[tuple[Predicate, str], ...]
    default: str | None
    assign: Assign | None = None
    output: JTemplate | None = None  # JSONata Output (None: the state's default output)
    jsonata: bool = False
    #: per choice rule: its own Assign and (JSONata) Output, used when that rule matches
    rule_effects: tuple[tuple[Assign | None, JTemplate | None], ...] = ()
    type: StateType = StateType.CHOICE


@dataclass(frozen=True)
class WaitState:
    name: str
    io: IO
    next: str | None
    seconds: int | None
    seconds_path: Path | None
    timestamp: datetime | None
    timestamp_path: Path | None
    assign: Assign | None = None
    output: JTemplate | None = None  # JSONata Output (None: the state's default output)
    jsonata: bool = False
    seconds_expr: Expression | None = None
    timestamp_expr: Expression | None = None
    type: StateType = StateType.WAIT


@dataclass(frozen=True)
class SucceedState:
    name: str
    io: IO
    output: JTemplate | None = None
    jsonata: bool = False
    type: StateType = StateType.SUCCEED


@dataclass(frozen=True)
class FailState:
    name: str
    error: str | None
    error_path: Path | intrinsics.Call | Expression | None
    cause: str | None
    cause_path: Path | intrinsics.Call | Expression | None
    type: StateType = StateType.FAIL


@dataclass(frozen=True)
class Machine:
    """A state machine body: the top level, one ``Parallel`` branch or a ``Map`` processor."""

    start_at: str
    states: Mapping[str, State]

    def walk(self) -> list[State]:
        """Every state, those nested in branches and item processors included."""
        out: list[State] = []
        for state in self.states.values():
            out.append(state)
            for machine in children(state):
                out += machine.walk()
        return out


@dataclass(frozen=True)
class ParallelState:
    name: str
    io: IO
    next: str | None
    branches: tuple[Machine, ...]
    parameters: AnyTemplate | None  # Parameters, or JSONata Arguments
    result_selector: Template | None
    result_path: Path | None
    retriers: tuple[Retrier, ...]
    catchers: tuple[Catcher, ...]
    assign: Assign | None = None
    output: JTemplate | None = None  # JSONata Output (None: the state's default output)
    jsonata: bool = False
    type: StateType = StateType.PARALLEL


@dataclass(frozen=True)
class MapState:
    """An inline ``Map``; ``item_selector`` is ``ItemSelector`` or the legacy ``Parameters``,
    ``max_concurrency`` 0 means as many as AWS allows (:data:`INLINE_MAP_CONCURRENCY`)."""

    name: str
    io: IO
    next: str | None
    processor: Machine
    items_path: Path
    item_selector: AnyTemplate | None
    max_concurrency: int
    max_concurrency_path: Path | None
    result_selector: Template | None
    result_path: Path | None
    retriers: tuple[Retrier, ...]
    catchers: tuple[Catcher, ...]
    assign: Assign | None = None
    output: JTemplate | None = None  # JSONata Output (None: the state's default output)
    jsonata: bool = False
    items: JTemplate | None = None  # JSONata Items (None: the state's input)
    max_concurrency_expr: Expression | None = None
    type: StateType = StateType.MAP


State = (
    TaskState
    | PassState
    | ChoiceState
    | WaitState
    | SucceedState
    | FailState
    | ParallelState
    | MapState
)


def children(state: State) -> tuple[Machine, ...]:
    """The machines a state runs inside itself (branches, item processor); none for others."""
    if isinstance(state, ParallelState):
        return state.branches
    if isinstance(state, MapState):
        return (state.processor,)
    return ()


@dataclass(frozen=True)
class Definition:
    """A loaded state machine definition; ``text`` is its canonical JSON, ``digest`` its hash."""

    start_at: str
    states: Mapping[str, State]
    text: str
    digest: str

    @property
    def machine(self) -> Machine:
        return Machine(self.start_at, self.states)

    def task_states(self) -> list[TaskState]:
        """Every Task state, those inside Parallel branches and Map processors included
        (state names are unique across the whole definition, so mock configs and the handler
        check can address them by name)."""
        return [s for s in self.machine.walk() if isinstance(s, TaskState)]


def canonical_json(definition: Mapping[str, Any] | str) -> str:
    data = json.loads(definition) if isinstance(definition, str) else definition
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def load(definition: Mapping[str, Any] | str) -> Definition:
    """Validate and compile ``definition`` (a dict or its JSON text)."""
    if isinstance(definition, str):
        try:
            data = json.loads(definition)
        except ValueError as exc:
            raise InvalidDefinition(f"not JSON: {exc}") from None
    else:
        data = definition
    if not isinstance(data, Mapping):
        raise InvalidDefinition("a definition is a JSON object")
    _refuse_unknown(data, _TOP_LEVEL, None, {"TimeoutSeconds": "execution-level TimeoutSeconds"})
    language = _query_language(data, None, QueryLanguage.JSONPATH)
    machine = _load_machine(data, None, "", _Scope(language=language))
    text = canonical_json(data)
    return Definition(
        start_at=machine.start_at,
        states=machine.states,
        text=text,
        digest=hashlib.sha256(text.encode()).hexdigest(),
    )


@dataclass
class _Scope:
    """What loading a nested machine needs to know about where it sits."""

    seen: set[str] = dataclasses.field(default_factory=set)  # names so far, in all machines
    language: QueryLanguage = QueryLanguage.JSONPATH  # the top level's: each state's default


def _load_machine(
    data: Mapping[str, Any], owner: str | None, prefix: str, scope: _Scope
) -> Machine:
    """``StartAt`` + ``States`` of the top level (``owner`` None) or of a nested machine
    whose fields are reported as ``<prefix>States`` on the ``owner`` state."""
    states_raw = data.get("States")
    if not isinstance(states_raw, Mapping) or not states_raw:
        raise InvalidDefinition(
            "States must be a non-empty object", state=owner, field=f"{prefix}States"
        )
    start_at = data.get("StartAt")
    if not isinstance(start_at, str):
        raise InvalidDefinition("StartAt must name a state", state=owner, field=f"{prefix}StartAt")
    states: dict[str, State] = {}
    for name, raw in states_raw.items():
        if name in scope.seen:
            raise InvalidDefinition(
                "state names must be unique across the whole state machine, "
                "Parallel branches and Map processors included",
                state=name,
            )
        scope.seen.add(name)
        states[name] = _load_state(name, raw, scope)
    if start_at not in states:
        raise InvalidDefinition(
            f"StartAt names {start_at!r}, which is not a state of this "
            + ("machine" if owner is None else "branch"),
            state=owner,
            field=f"{prefix}StartAt",
        )
    _check_transitions(start_at, states)
    return Machine(start_at, states)


# --- states ------------------------------------------------------------------------------


def _load_state(name: str, raw: Any, scope: _Scope) -> State:
    if not isinstance(name, str) or not 1 <= len(name) <= 80:
        raise InvalidDefinition("state names have 1 to 80 characters", state=str(name))
    if not isinstance(raw, Mapping):
        raise InvalidDefinition("a state is a JSON object", state=name)
    type_name = raw.get("Type")
    try:
        state_type = StateType(str(type_name))
    except ValueError:
        raise InvalidDefinition(
            f"state type {type_name!r} is not supported by the embedded engine "
            f"(supported: {', '.join(t.value for t in StateType)})",
            state=name,
            field="Type",
        ) from None
    language = _query_language(raw, name, scope.language)
    if language is QueryLanguage.JSONATA:
        _refuse_other_language(raw, name, language)
        _refuse_unknown(raw, _JSONATA_FIELDS[state_type], name)
        return _load_jsonata_state(name, state_type, raw, scope)
    _refuse_other_language(raw, name, language)
    _refuse_unknown(raw, _FIELDS[state_type], name)
    state = _load_jsonpath_state(name, state_type, raw, scope)
    if "Assign" in raw:
        assign = _assign(name, raw["Assign"], "Assign", jsonata=False)
        state = dataclasses.replace(state, assign=assign)  # type: ignore[arg-type]
    return state


def _load_jsonpath_state(
    name: str, state_type: StateType, raw: Mapping[str, Any], scope: _Scope
) -> State:
    if state_type is StateType.TASK:
        return _load_task(name, raw)
    if state_type is StateType.PARALLEL:
        return _load_parallel(name, raw, scope)
    if state_type is StateType.MAP:
        return _load_map(name, raw, scope)
    if state_type is StateType.PASS:
        return PassState(
            name=name,
            io=_io(name, raw),
            next=_next(name, raw),
            has_result="Result" in raw,
            result=raw.get("Result"),
            parameters=_template(name, raw, "Parameters"),
            result_path=_optional_path(name, raw, "ResultPath"),
        )
    if state_type is StateType.CHOICE:
        return _load_choice(name, raw)
    if state_type is StateType.WAIT:
        return _load_wait(name, raw)
    if state_type is StateType.SUCCEED:
        return SucceedState(name=name, io=_io(name, raw))
    return _load_fail(name, raw)


_UNSUPPORTED_HINTS = {f: refusal.feature for refusal in REFUSED for f in refusal.fields}


def _refuse_unknown(
    raw: Mapping[str, Any],
    allowed: set[str],
    state: str | None,
    hints: Mapping[str, str] | None = None,
) -> None:
    for field in raw:
        if field in allowed:
            continue
        hint = (hints or {}).get(field) or _UNSUPPORTED_HINTS.get(field)
        what = (
            f"{hint} is not supported by the embedded engine"
            if hint
            else "unknown or unsupported field"
        )
        raise InvalidDefinition(what, state=state, field=field)


def _query_language(
    raw: Mapping[str, Any], state: str | None, default: QueryLanguage
) -> QueryLanguage:
    """The state's (or the top level's) query language; AWS lets a JSONPath machine hold
    JSONata states, not the other way round."""
    value = raw.get("QueryLanguage", default.value)
    try:
        language = QueryLanguage(value)
    except ValueError:
        raise InvalidDefinition(
            f"QueryLanguage {value!r} is JSONPath or JSONata", state=state, field="QueryLanguage"
        ) from None
    if default is QueryLanguage.JSONATA and language is QueryLanguage.JSONPATH:
        raise InvalidDefinition(
            "a state of a JSONata state machine cannot use JSONPath",
            state=state,
            field="QueryLanguage",
        )
    return language


def _refuse_other_language(raw: Mapping[str, Any], name: str, language: QueryLanguage) -> None:
    for field in _LANGUAGE_FIELDS[language]:
        if field in raw:
            other = "JSONata" if language is QueryLanguage.JSONPATH else "JSONPath"
            raise InvalidDefinition(
                f"{field} is a {other} field; this state's QueryLanguage is {language.value}",
                state=name,
                field=field,
            )


def _assign(name: str, raw: Any, field: str, *, jsonata: bool) -> Assign:
    try:
        return compile_assign(raw, field, jsonata=jsonata)
    except AssignError as exc:
        raise InvalidDefinition(str(exc), state=name, field=exc.field) from None


def _next(name: str, raw: Mapping[str, Any]) -> str | None:
    has_next, end = "Next" in raw, raw.get("End", False)
    if has_next and end:
        raise InvalidDefinition(
            "a state has either Next or End: true, not both", state=name, field="Next"
        )
    if has_next:
        if not isinstance(raw["Next"], str):
            raise InvalidDefinition("Next must name a state", state=name, field="Next")
        return str(raw["Next"])
    if end is not True:
        raise InvalidDefinition("a state needs Next or End: true", state=name, field="End")
    return None


def _path(
    name: str, field: str, value: Any, *, context: bool = False, variables: bool = True
) -> Path:
    try:
        path = parse(value)
    except (PathSyntaxError, TypeError) as exc:
        raise InvalidDefinition(str(exc), state=name, field=field) from None
    if path.context and not context:
        raise InvalidDefinition(
            "this field cannot read the context object ($$)", state=name, field=field
        )
    if path.variable is not None and not variables:
        raise InvalidDefinition(
            f"this field cannot read a variable (${path.variable})", state=name, field=field
        )
    return path


def _optional_path(name: str, raw: Mapping[str, Any], field: str) -> Path | None:
    """``InputPath``/``OutputPath``/``ResultPath``: absent means ``$``, JSON ``null`` is
    returned as ``None``; they address the state's own data, never ``$$`` or a variable."""
    if field not in raw:
        return parse("$")
    value = raw[field]
    return None if value is None else _path(name, field, value, variables=False)


def _io(name: str, raw: Mapping[str, Any]) -> IO:
    return IO(_optional_path(name, raw, "InputPath"), _optional_path(name, raw, "OutputPath"))


def _template(name: str, raw: Mapping[str, Any], field: str) -> Template | None:
    if field not in raw:
        return None
    try:
        return compile_template(raw[field], field)
    except TemplateError as exc:
        raise InvalidDefinition(str(exc), state=name, field=exc.field) from None


def _positive_int(
    name: str, raw: Mapping[str, Any], field: str, *, minimum: int = 1, maximum: int = _MAX_SECONDS
) -> int | None:
    if field not in raw:
        return None
    value = raw[field]
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise InvalidDefinition(
            f"must be an integer from {minimum} to {maximum}", state=name, field=field
        )
    return value


# --- Task --------------------------------------------------------------------------------


def _load_task(name: str, raw: Mapping[str, Any], *, jsonata: bool = False) -> TaskState:
    """A ``lambda:invoke`` Task, JSONPath (``Parameters``) or JSONata (``Arguments``): the
    resource, timeout and heartbeat rules are the same in both. A JSONata state's JSONPath
    fields were refused before, so reading them here finds their defaults."""
    resource = raw.get("Resource")
    if resource not in (LAMBDA_INVOKE, LAMBDA_INVOKE_WAIT):
        raise InvalidDefinition(
            f"Resource {resource!r} is not supported by the embedded engine "
            f"(supported: {LAMBDA_INVOKE}, {LAMBDA_INVOKE_WAIT})",
            state=name,
            field="Resource",
        )
    parameters: AnyTemplate
    if jsonata:
        parameters, function_name = _lambda_arguments(name, raw)
        timeout, timeout_expr = _number_or_expression(name, raw, "TimeoutSeconds")
        heartbeat, heartbeat_expr = _number_or_expression(name, raw, "HeartbeatSeconds")
    else:
        parameters, function_name = _lambda_parameters(name, raw)
        timeout, timeout_expr = _positive_int(name, raw, "TimeoutSeconds"), None
        heartbeat, heartbeat_expr = _positive_int(name, raw, "HeartbeatSeconds"), None
        for field in ("TimeoutSeconds", "HeartbeatSeconds"):
            if field in raw and f"{field}Path" in raw:
                raise InvalidDefinition(
                    f"use {field} or {field}Path, not both", state=name, field=f"{field}Path"
                )
    if timeout is not None and heartbeat is not None and heartbeat >= timeout:
        raise InvalidDefinition(
            "HeartbeatSeconds must be smaller than TimeoutSeconds",
            state=name,
            field="HeartbeatSeconds",
        )
    return TaskState(
        name=name,
        io=_io(name, raw),
        next=_next(name, raw),
        waits_for_token=resource == LAMBDA_INVOKE_WAIT,
        parameters=parameters,
        function_name=function_name,
        result_selector=_template(name, raw, "ResultSelector"),
        result_path=_optional_path(name, raw, "ResultPath"),
        retriers=_retriers(name, raw.get("Retry", [])),
        catchers=_catchers(name, raw.get("Catch", []), jsonata=jsonata),
        timeout_seconds=timeout,
        timeout_path=_path(name, "TimeoutSecondsPath", raw["TimeoutSecondsPath"])
        if "TimeoutSecondsPath" in raw
        else None,
        heartbeat_seconds=heartbeat,
        heartbeat_path=_path(name, "HeartbeatSecondsPath", raw["HeartbeatSecondsPath"])
        if "HeartbeatSecondsPath" in raw
        else None,
        timeout_expr=timeout_expr,
        heartbeat_expr=heartbeat_expr,
    )


def _lambda_parameters(name: str, raw: Mapping[str, Any]) -> tuple[Template, str | None]:
    """JSONPath ``Parameters`` of ``lambda:invoke``, and the function's name when static."""
    parameters_raw = raw.get("Parameters")
    if not isinstance(parameters_raw, Mapping):
        raise InvalidDefinition(
            "lambda:invoke needs Parameters with FunctionName", state=name, field="Parameters"
        )
    for key in parameters_raw:
        plain = key[:-2] if key.endswith(".$") else key
        if plain not in _LAMBDA_PARAMETERS:
            raise InvalidDefinition(
                f"lambda:invoke parameter {plain!r} is not supported",
                state=name,
                field=f"Parameters.{key}",
            )
    if "FunctionName" not in parameters_raw and "FunctionName.$" not in parameters_raw:
        raise InvalidDefinition(
            "lambda:invoke needs FunctionName", state=name, field="Parameters.FunctionName"
        )
    invocation_type = parameters_raw.get("InvocationType", "RequestResponse")
    if invocation_type != "RequestResponse" or "InvocationType.$" in parameters_raw:
        raise InvalidDefinition(
            "only InvocationType RequestResponse is supported",
            state=name,
            field="Parameters.InvocationType",
        )
    static_name = parameters_raw.get("FunctionName")
    parameters = _template(name, raw, "Parameters")
    assert parameters is not None
    return parameters, static_name if isinstance(static_name, str) else None


def _error_equals(name: str, field: str, raw: Mapping[str, Any], last: bool) -> tuple[str, ...]:
    errors = raw.get("ErrorEquals")
    if not isinstance(errors, list) or not errors or not all(isinstance(e, str) for e in errors):
        raise InvalidDefinition(
            "ErrorEquals must be a non-empty array of error names",
            state=name,
            field=f"{field}.ErrorEquals",
        )
    if STATES_ALL in errors and (len(errors) != 1 or not last):
        raise InvalidDefinition(
            "States.ALL must appear alone and in the last entry",
            state=name,
            field=f"{field}.ErrorEquals",
        )
    return tuple(errors)


def _retriers(name: str, raw: Any) -> tuple[Retrier, ...]:
    if not isinstance(raw, list):
        raise InvalidDefinition("Retry must be an array", state=name, field="Retry")
    retriers = []
    for i, entry in enumerate(raw):
        field = f"Retry[{i}]"
        if not isinstance(entry, Mapping):
            raise InvalidDefinition("a retrier is an object", state=name, field=field)
        allowed = {
            "ErrorEquals",
            "IntervalSeconds",
            "MaxAttempts",
            "BackoffRate",
            "MaxDelaySeconds",
            "JitterStrategy",
            "Comment",
        }
        for key in entry:
            if key not in allowed:
                raise InvalidDefinition(
                    "unknown or unsupported field", state=name, field=f"{field}.{key}"
                )
        errors = _error_equals(name, field, entry, i == len(raw) - 1)
        interval = _positive_int(name, entry, "IntervalSeconds")
        attempts = _positive_int(name, entry, "MaxAttempts", minimum=0)
        max_delay = _positive_int(name, entry, "MaxDelaySeconds", maximum=_MAX_DELAY_SECONDS)
        rate = entry.get("BackoffRate", 2.0)
        if isinstance(rate, bool) or not isinstance(rate, int | float) or rate < 1.0:
            raise InvalidDefinition(
                "BackoffRate must be a number >= 1.0", state=name, field=f"{field}.BackoffRate"
            )
        try:
            jitter = JitterStrategy(entry.get("JitterStrategy", "NONE"))
        except ValueError:
            raise InvalidDefinition(
                "JitterStrategy is FULL or NONE", state=name, field=f"{field}.JitterStrategy"
            ) from None
        retriers.append(
            Retrier(
                error_equals=errors,
                interval_seconds=1 if interval is None else interval,
                max_attempts=3 if attempts is None else attempts,
                backoff_rate=float(rate),
                max_delay_seconds=max_delay,
                jitter=jitter,
            )
        )
    return tuple(retriers)


def _catchers(name: str, raw: Any, *, jsonata: bool = False) -> tuple[Catcher, ...]:
    if not isinstance(raw, list):
        raise InvalidDefinition("Catch must be an array", state=name, field="Catch")
    allowed = {"ErrorEquals", "Next", "Comment", "Assign"}
    allowed |= {"Output"} if jsonata else {"ResultPath"}
    catchers = []
    for i, entry in enumerate(raw):
        field = f"Catch[{i}]"
        if not isinstance(entry, Mapping):
            raise InvalidDefinition("a catcher is an object", state=name, field=field)
        for key in entry:
            if key not in allowed:
                raise InvalidDefinition(
                    "unknown or unsupported field", state=name, field=f"{field}.{key}"
                )
        if not isinstance(entry.get("Next"), str):
            raise InvalidDefinition("a catcher needs Next", state=name, field=f"{field}.Next")
        result_path = parse("$") if jsonata else _optional_path(name, entry, "ResultPath")
        catchers.append(
            Catcher(
                _error_equals(name, field, entry, i == len(raw) - 1),
                entry["Next"],
                result_path,
                assign=_assign(name, entry["Assign"], f"{field}.Assign", jsonata=jsonata)
                if "Assign" in entry
                else None,
                output=_jsonata_template(name, entry, "Output", f"{field}.Output")
                if jsonata
                else None,
            )
        )
    return tuple(catchers)


# --- Parallel and Map --------------------------------------------------------------------


def _load_parallel(
    name: str, raw: Mapping[str, Any], scope: _Scope, *, jsonata: bool = False
) -> ParallelState:
    branches_raw = raw.get("Branches")
    if not isinstance(branches_raw, list) or not branches_raw:
        raise InvalidDefinition(
            "Branches must be a non-empty array of state machines", state=name, field="Branches"
        )
    branches = []
    for i, branch in enumerate(branches_raw):
        branches.append(_load_nested(name, branch, f"Branches[{i}]", _BRANCH, scope))
    return ParallelState(
        name=name,
        io=_io(name, raw),
        next=_next(name, raw),
        branches=tuple(branches),
        parameters=_jsonata_template(name, raw, "Arguments")
        if jsonata
        else _template(name, raw, "Parameters"),
        result_selector=_template(name, raw, "ResultSelector"),
        result_path=_optional_path(name, raw, "ResultPath"),
        retriers=_retriers(name, raw.get("Retry", [])),
        catchers=_catchers(name, raw.get("Catch", []), jsonata=jsonata),
    )


def _load_nested(name: str, raw: Any, field: str, allowed: set[str], scope: _Scope) -> Machine:
    if not isinstance(raw, Mapping):
        raise InvalidDefinition("a branch is a state machine object", state=name, field=field)
    for key in raw:
        if key not in allowed:
            raise InvalidDefinition(
                "unknown or unsupported field", state=name, field=f"{field}.{key}"
            )
    return _load_machine(raw, name, f"{field}.", scope)


def _load_map(name: str, raw: Mapping[str, Any], scope: _Scope) -> MapState:
    if ("ItemProcessor" in raw) == ("Iterator" in raw):
        raise InvalidDefinition(
            "a Map state needs exactly one of ItemProcessor or the legacy Iterator",
            state=name,
            field="ItemProcessor",
        )
    if "ItemSelector" in raw and "Parameters" in raw:
        raise InvalidDefinition(
            "use ItemSelector or the legacy Parameters, not both", state=name, field="Parameters"
        )
    if "MaxConcurrency" in raw and "MaxConcurrencyPath" in raw:
        raise InvalidDefinition(
            "use MaxConcurrency or MaxConcurrencyPath, not both",
            state=name,
            field="MaxConcurrencyPath",
        )
    if "ItemProcessor" in raw:
        processor_raw = raw["ItemProcessor"]
        config = (
            processor_raw.get("ProcessorConfig", {}) if isinstance(processor_raw, Mapping) else {}
        )
        if not isinstance(config, Mapping):
            raise InvalidDefinition(
                "ProcessorConfig must be an object",
                state=name,
                field="ItemProcessor.ProcessorConfig",
            )
        for key in config:
            if key not in ("Mode", "ExecutionType"):
                raise InvalidDefinition(
                    "unknown or unsupported field",
                    state=name,
                    field=f"ItemProcessor.ProcessorConfig.{key}",
                )
        mode = config.get("Mode", "INLINE")
        if mode == "DISTRIBUTED" or "ExecutionType" in config:
            raise InvalidDefinition(
                "Distributed Map is not supported by the embedded engine (only Mode INLINE)",
                state=name,
                field="ItemProcessor.ProcessorConfig."
                + ("Mode" if mode == "DISTRIBUTED" else "ExecutionType"),
            )
        if mode != "INLINE":
            raise InvalidDefinition(
                f"Mode {mode!r} is not a Map processor mode (INLINE or DISTRIBUTED)",
                state=name,
                field="ItemProcessor.ProcessorConfig.Mode",
            )
        processor = _load_nested(name, processor_raw, "ItemProcessor", _PROCESSOR, scope)
    else:
        processor = _load_nested(name, raw["Iterator"], "Iterator", _BRANCH, scope)
    selector_field = "ItemSelector" if "ItemSelector" in raw else "Parameters"
    return MapState(
        name=name,
        io=_io(name, raw),
        next=_next(name, raw),
        processor=processor,
        items_path=_path(name, "ItemsPath", raw["ItemsPath"], context=True)
        if "ItemsPath" in raw
        else parse("$"),
        item_selector=_template(name, raw, selector_field),
        max_concurrency=_positive_int(name, raw, "MaxConcurrency", minimum=0) or 0,
        max_concurrency_path=_path(name, "MaxConcurrencyPath", raw["MaxConcurrencyPath"])
        if "MaxConcurrencyPath" in raw
        else None,
        result_selector=_template(name, raw, "ResultSelector"),
        result_path=_optional_path(name, raw, "ResultPath"),
        retriers=_retriers(name, raw.get("Retry", [])),
        catchers=_catchers(name, raw.get("Catch", [])),
    )


# --- Choice, Wait, Fail ------------------------------------------------------------------


def _load_choice(name: str, raw: Mapping[str, Any], *, jsonata: bool = False) -> ChoiceState:
    choices_raw = raw.get("Choices")
    if not isinstance(choices_raw, list) or not choices_raw:
        raise InvalidDefinition("Choices must be a non-empty array", state=name, field="Choices")
    choices = []
    effects: list[tuple[Assign | None, JTemplate | None]] = []
    for i, rule in enumerate(choices_raw):
        field = f"Choices[{i}]"
        try:
            predicate = (
                _jsonata_rule(rule, field) if jsonata else compile_rule(rule, field, top_level=True)
            )
        except ChoiceRuleError as exc:
            raise InvalidDefinition(str(exc), state=name, field=exc.field) from None
        if not isinstance(rule.get("Next"), str):
            raise InvalidDefinition("a choice rule needs Next", state=name, field=f"{field}.Next")
        choices.append((predicate, str(rule["Next"])))
        effects.append(
            (
                _assign(name, rule["Assign"], f"{field}.Assign", jsonata=jsonata)
                if "Assign" in rule
                else None,
                _jsonata_template(name, rule, "Output", f"{field}.Output") if jsonata else None,
            )
        )
    default = raw.get("Default")
    if default is not None and not isinstance(default, str):
        raise InvalidDefinition("Default must name a state", state=name, field="Default")
    return ChoiceState(
        name=name,
        io=_io(name, raw),
        choices=tuple(choices),
        default=default,
        rule_effects=tuple(effects),
    )


def _jsonata_rule(rule: Any, field: str) -> Predicate:
    if not isinstance(rule, Mapping):
        raise ChoiceRuleError(field, "a choice rule must be an object")
    for key in rule:
        if key not in {"Condition", "Next", "Assign", "Output", "Comment"}:
            raise ChoiceRuleError(
                f"{field}.{key}",
                "unknown or unsupported field (a JSONata choice rule has Condition, Next, "
                "Assign, Output)",
            )
    if "Condition" not in rule:
        raise ChoiceRuleError(f"{field}.Condition", "a JSONata choice rule needs Condition")
    return compile_condition(rule["Condition"], f"{field}.Condition")


def _load_wait(name: str, raw: Mapping[str, Any]) -> WaitState:
    given = [f for f in ("Seconds", "SecondsPath", "Timestamp", "TimestampPath") if f in raw]
    if len(given) != 1:
        raise InvalidDefinition(
            "a Wait state needs exactly one of Seconds, SecondsPath, Timestamp, TimestampPath",
            state=name,
            field=given[1] if len(given) > 1 else "Seconds",
        )
    timestamp = None
    if "Timestamp" in raw:
        timestamp = parse_timestamp(raw["Timestamp"])
        if timestamp is None:
            raise InvalidDefinition(
                "Timestamp must be an RFC 3339 timestamp", state=name, field="Timestamp"
            )
    return WaitState(
        name=name,
        io=_io(name, raw),
        next=_next(name, raw),
        seconds=_positive_int(name, raw, "Seconds", minimum=0),
        seconds_path=_path(name, "SecondsPath", raw["SecondsPath"])
        if "SecondsPath" in raw
        else None,
        timestamp=timestamp,
        timestamp_path=_path(name, "TimestampPath", raw["TimestampPath"])
        if "TimestampPath" in raw
        else None,
    )


def _load_fail(name: str, raw: Mapping[str, Any]) -> FailState:
    def text_or_path(field: str) -> tuple[str | None, Path | intrinsics.Call | None]:
        path_field = f"{field}Path"
        if field in raw and path_field in raw:
            raise InvalidDefinition(
                f"use {field} or {path_field}, not both", state=name, field=path_field
            )
        if field in raw:
            if not isinstance(raw[field], str):
                raise InvalidDefinition("must be a string", state=name, field=field)
            return raw[field], None
        if path_field in raw:
            value = raw[path_field]
            if isinstance(value, str) and intrinsics.looks_like_call(value):
                try:
                    return None, intrinsics.parse_call(value)
                except ValueError as exc:
                    raise InvalidDefinition(str(exc), state=name, field=path_field) from None
            return None, _path(name, path_field, value, context=True)
        return None, None

    error, error_path = text_or_path("Error")
    cause, cause_path = text_or_path("Cause")
    return FailState(
        name=name, error=error, error_path=error_path, cause=cause, cause_path=cause_path
    )


# --- the graph ---------------------------------------------------------------------------


def _targets(state: State) -> list[tuple[str, str]]:
    """(field, target) pairs of every transition out of ``state``."""
    out: list[tuple[str, str]] = []
    if (
        isinstance(state, TaskState | PassState | WaitState | ParallelState | MapState)
        and state.next is not None
    ):
        out.append(("Next", state.next))
    if isinstance(state, TaskState | ParallelState | MapState):
        out += [(f"Catch[{i}].Next", c.next) for i, c in enumerate(state.catchers)]
    if isinstance(state, ChoiceState):
        out += [(f"Choices[{i}].Next", target) for i, (_, target) in enumerate(state.choices)]
        if state.default is not None:
            out.append(("Default", state.default))
    return out


def _check_transitions(start_at: str, states: Mapping[str, State]) -> None:
    for state in states.values():
        for field, target in _targets(state):
            if target not in states:
                raise InvalidDefinition(f"{target!r} is not a state", state=state.name, field=field)
    seen = {start_at}
    todo = [start_at]
    while todo:
        for _, target in _targets(states[todo.pop()]):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    unreachable = [name for name in states if name not in seen]
    if unreachable:
        raise InvalidDefinition(f"not reachable from StartAt {start_at!r}", state=unreachable[0])


# --- JSONata states ----------------------------------------------------------------------


def _load_jsonata_state(
    name: str, state_type: StateType, raw: Mapping[str, Any], scope: _Scope
) -> State:
    """A state whose QueryLanguage is JSONata: ``Arguments``/``Output``/``Assign`` and
    ``{% … %}`` values instead of the JSONPath fields (which the caller has refused)."""
    output = _jsonata_template(name, raw, "Output")
    assign = _assign(name, raw["Assign"], "Assign", jsonata=True) if "Assign" in raw else None
    common: dict[str, Any] = {"assign": assign, "output": output, "jsonata": True}
    io = _io(name, {})
    if state_type is StateType.TASK:
        return dataclasses.replace(_load_task(name, raw, jsonata=True), **common)
    if state_type is StateType.PASS:
        return PassState(
            name=name,
            io=io,
            next=_next(name, raw),
            has_result=False,
            result=None,
            parameters=None,
            result_path=parse("$"),
            **common,
        )
    if state_type is StateType.CHOICE:
        return dataclasses.replace(_load_choice(name, raw, jsonata=True), **common)
    if state_type is StateType.WAIT:
        return dataclasses.replace(_load_jsonata_wait(name, raw), **common)
    if state_type is StateType.SUCCEED:
        return SucceedState(name=name, io=io, output=output, jsonata=True)
    if state_type is StateType.FAIL:
        return _load_jsonata_fail(name, raw)
    if state_type is StateType.PARALLEL:
        return dataclasses.replace(_load_parallel(name, raw, scope, jsonata=True), **common)
    return dataclasses.replace(_load_jsonata_map(name, raw, scope), **common)


def _jsonata_template(
    name: str, raw: Mapping[str, Any], key: str, field: str | None = None
) -> JTemplate | None:
    if key not in raw:
        return None
    try:
        return jsonata_eval.compile_template(raw[key], field or key)
    except TemplateError as exc:
        raise InvalidDefinition(str(exc), state=name, field=exc.field) from None


def _number_or_expression(
    name: str, raw: Mapping[str, Any], field: str, *, minimum: int = 1
) -> tuple[int | None, Expression | None]:
    """A field that takes an integer or a ``{% … %}`` expression (evaluated at run time)."""
    value = raw.get(field)
    if jsonata_eval.is_expression(value):
        try:
            return None, jsonata_eval.compile_expression(value, field)
        except jsonata_eval.JsonataSyntaxError as exc:
            raise InvalidDefinition(str(exc), state=name, field=field) from None
    return _positive_int(name, raw, field, minimum=minimum), None


def _lambda_arguments(name: str, raw: Mapping[str, Any]) -> tuple[JTemplate, str | None]:
    """JSONata ``Arguments`` of ``lambda:invoke``, and the function's name when static."""
    arguments = raw.get("Arguments")
    if isinstance(arguments, Mapping):
        for key in arguments:
            if key not in _LAMBDA_PARAMETERS:
                raise InvalidDefinition(
                    f"lambda:invoke argument {key!r} is not supported",
                    state=name,
                    field=f"Arguments.{key}",
                )
        if "FunctionName" not in arguments:
            raise InvalidDefinition(
                "lambda:invoke needs FunctionName", state=name, field="Arguments.FunctionName"
            )
        if arguments.get("InvocationType", "RequestResponse") != "RequestResponse":
            raise InvalidDefinition(
                "only InvocationType RequestResponse is supported",
                state=name,
                field="Arguments.InvocationType",
            )
    elif not jsonata_eval.is_expression(arguments):
        raise InvalidDefinition(
            "lambda:invoke needs Arguments with FunctionName", state=name, field="Arguments"
        )
    template = _jsonata_template(name, raw, "Arguments")
    assert template is not None
    static_name = arguments.get("FunctionName") if isinstance(arguments, Mapping) else None
    if isinstance(static_name, str) and not jsonata_eval.is_expression(static_name):
        return template, static_name
    return template, None


def _load_jsonata_wait(name: str, raw: Mapping[str, Any]) -> WaitState:
    given = [f for f in ("Seconds", "Timestamp") if f in raw]
    if len(given) != 1:
        raise InvalidDefinition(
            "a JSONata Wait state needs exactly one of Seconds or Timestamp",
            state=name,
            field=given[1] if len(given) > 1 else "Seconds",
        )
    seconds, seconds_expr = _number_or_expression(name, raw, "Seconds", minimum=0)
    timestamp, timestamp_expr = None, None
    if "Timestamp" in raw:
        value = raw["Timestamp"]
        if jsonata_eval.is_expression(value):
            try:
                timestamp_expr = jsonata_eval.compile_expression(value, "Timestamp")
            except jsonata_eval.JsonataSyntaxError as exc:
                raise InvalidDefinition(str(exc), state=name, field="Timestamp") from None
        else:
            timestamp = parse_timestamp(value)
            if timestamp is None:
                raise InvalidDefinition(
                    "Timestamp must be an RFC 3339 timestamp", state=name, field="Timestamp"
                )
    return WaitState(
        name=name,
        io=_io(name, {}),
        next=_next(name, raw),
        seconds=seconds,
        seconds_path=None,
        timestamp=timestamp,
        timestamp_path=None,
        seconds_expr=seconds_expr,
        timestamp_expr=timestamp_expr,
    )


def _load_jsonata_fail(name: str, raw: Mapping[str, Any]) -> FailState:
    def text_or_expression(field: str) -> tuple[str | None, Expression | None]:
        if field not in raw:
            return None, None
        value = raw[field]
        if not isinstance(value, str):
            raise InvalidDefinition("must be a string", state=name, field=field)
        if not jsonata_eval.is_expression(value):
            return value, None
        try:
            return None, jsonata_eval.compile_expression(value, field)
        except jsonata_eval.JsonataSyntaxError as exc:
            raise InvalidDefinition(str(exc), state=name, field=field) from None

    error, error_expr = text_or_expression("Error")
    cause, cause_expr = text_or_expression("Cause")
    return FailState(
        name=name, error=error, error_path=error_expr, cause=cause, cause_path=cause_expr
    )


def _load_jsonata_map(name: str, raw: Mapping[str, Any], scope: _Scope) -> MapState:
    plain = {k: v for k, v in raw.items() if k not in ("Items", "ItemSelector", "MaxConcurrency")}
    state = _load_map(name, {**plain, "Catch": []}, scope)
    items = _jsonata_template(name, raw, "Items")
    if items is not None and items.static and not isinstance(raw["Items"], list):
        raise InvalidDefinition(
            "Items is a JSON array or a JSONata expression", state=name, field="Items"
        )
    limit, limit_expr = _number_or_expression(name, raw, "MaxConcurrency", minimum=0)
    return dataclasses.replace(
        state,
        items=items,
        item_selector=_jsonata_template(name, raw, "ItemSelector"),
        max_concurrency=limit or 0,
        max_concurrency_expr=limit_expr,
        catchers=_catchers(name, raw.get("Catch", []), jsonata=True),
    )
