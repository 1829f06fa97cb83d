"""Run one definition with scripted task results on the engine and on a reference
interpreter (moto, LocalStack), and reduce both histories to what must agree: the states
entered, the attempts of each task visit, the final status, error, cause and output, and the
events each function got.

Scripts are per function: a list of outcomes consumed one per invocation (the last one
repeats). ``Ok(value)`` returns ``value``; ``Err(type, message)`` fails the invocation as a
Lambda function error of that ``errorType`` (moto: patched ``LambdaSimpleBackend.invoke``).

LocalStack's Lambda needs Docker, so there the engine's run decides which state consumed
which outcome: each Task state gets, as a mock config, the results the engine's history
shows for it in order (``TaskSucceeded`` output / ``TaskFailed`` error and cause). A
reference that takes another path or retries otherwise runs out of mocked results or takes
them in another place, and its trace differs. The events functions got are read from its
``TaskScheduled`` parameters.
"""

from __future__ import annotations

import io
import json
import random
import tempfile
import time
import uuid
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import boto3
from moto import mock_aws

from stepsaga._project.home import StateHome
from stepsaga.engine import LocalEngine
from stepsaga.engine._engine import substitute
from stepsaga.testing._backends import cap_retry_delays
from stepsaga.testing._localstack import LocalStack

REGION = "us-east-1"


@dataclass(frozen=True)
class Ok:
    value: Any


@dataclass(frozen=True)
class Err:
    error_type: str
    message: str = "scripted failure"


Outcome = Ok | Err
Scripts = Mapping[str, Sequence[Outcome]]


@dataclass
class Trace:
    """What both interpreters must agree on (``calls``: the events each function got)."""

    entered: list[str]
    attempts: list[tuple[str, int]]
    status: str
    error: str | None
    cause: Any
    output: Any
    calls: list[tuple[str, Any]] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    #: Each Task state's results in invocation order, as mock config responses.
    task_results: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: The Parallel and Map states' own events (``…StateStarted/Failed/Succeeded``), in order.
    group_events: list[str] = field(default_factory=list)
    #: How many ``MapIteration*`` events of each type, with their indexes.
    iteration_events: list[tuple[str, int]] = field(default_factory=list)

    def comparable(self) -> dict[str, Any]:
        left_out = ("delays", "task_results", "group_events", "iteration_events")
        return {k: v for k, v in self.__dict__.items() if k not in left_out}


class _Player:
    """Hands out each function's scripted outcomes in order."""

    def __init__(self, scripts: Scripts) -> None:
        self.scripts = {name: list(outcomes) for name, outcomes in scripts.items()}
        self.calls: list[tuple[str, Any]] = []

    def next(self, function: str, event: Any) -> Outcome:
        self.calls.append((function, event))
        outcomes = self.scripts[function]
        return outcomes.pop(0) if len(outcomes) > 1 else outcomes[0]


def _cause(cause: str | None) -> Any:
    """Lambda causes carry a stack trace that differs by runtime: keep type and message."""
    if cause is None:
        return None
    try:
        parsed = json.loads(cause)
    except ValueError:
        return cause
    if isinstance(parsed, dict) and "errorType" in parsed:
        return {"errorType": parsed["errorType"], "errorMessage": parsed.get("errorMessage")}
    return parsed


def _normalize(value: Any) -> Any:
    """Caught errors embed Lambda causes in the output: compare those by type and message."""
    if isinstance(value, dict):
        out = {k: _normalize(v) for k, v in value.items()}
        if "Error" in out and isinstance(value.get("Cause"), str):
            out["Cause"] = _cause(value["Cause"])
        return out
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    return value


def task_results(events: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per Task state, what each invocation returned (``Return``) or raised (``Throw``),
    found by following ``previousEventId`` back to the state's ``TaskStateEntered`` (so
    concurrent branches and iterations keep their own)."""
    by_id = {event["id"]: event for event in events}

    def state_of(event: Mapping[str, Any]) -> str:
        while "stateEnteredEventDetails" not in event:
            event = by_id[event["previousEventId"]]
        return str(event["stateEnteredEventDetails"]["name"])

    results: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if event["type"] == "TaskSucceeded":
            output = json.loads(event["taskSucceededEventDetails"]["output"])
            results.setdefault(state_of(event), []).append({"Return": output})
        elif event["type"] in ("TaskFailed", "TaskTimedOut"):
            details = event.get("taskFailedEventDetails") or event["taskTimedOutEventDetails"]
            thrown = {"Error": details.get("error", ""), "Cause": details.get("cause", "")}
            results.setdefault(state_of(event), []).append({"Throw": thrown})
    return results


def scheduled_calls(events: Sequence[Mapping[str, Any]]) -> list[tuple[str, Any]]:
    """The (function, payload) of each ``lambda:invoke`` as the history schedules it."""
    calls = []
    for event in events:
        if event["type"] == "TaskScheduled":
            parameters = json.loads(event["taskScheduledEventDetails"]["parameters"])
            calls.append((parameters["FunctionName"], _normalize(parameters.get("Payload"))))
    return calls


def _iteration_index(event: Mapping[str, Any]) -> int:
    kind = event["type"]
    details_key = kind[0].lower() + kind[1:] + "EventDetails"
    return int(event.get(details_key, {}).get("index", -1))


def reduce(events: list[dict[str, Any]], describe: Mapping[str, Any]) -> Trace:
    entered: list[str] = []
    attempts: list[tuple[str, int]] = []
    for event in events:
        if event["type"].endswith("StateEntered"):
            entered.append(event["stateEnteredEventDetails"]["name"])
            if event["type"] == "TaskStateEntered":
                attempts.append((entered[-1], 0))
        elif event["type"] == "TaskScheduled":
            name, n = attempts[-1]
            attempts[-1] = (name, n + 1)
    output = _normalize(json.loads(describe["output"])) if describe.get("output") else None
    group_events = [
        event["type"]
        for event in events
        if event["type"].startswith(("ParallelState", "MapState"))
        and not event["type"].endswith(("Entered", "Exited"))
    ]
    iteration_events = sorted(
        (event["type"], _iteration_index(event))
        for event in events
        if event["type"].startswith("MapIteration")
    )
    return Trace(
        group_events=group_events,
        iteration_events=iteration_events,
        entered=entered,
        attempts=attempts,
        status=describe["status"],
        error=describe.get("error"),
        cause=_cause(describe.get("cause")),
        output=output,
    )


# --- the engine ----------------------------------------------------------------------------


def run_engine(tmp: Path, definition: Mapping[str, Any], scripts: Scripts, payload: Any) -> Trace:
    player = _Player(scripts)

    def handler_for(function: str) -> Any:
        def handler(event: Any, context: Any) -> Any:
            outcome = player.next(function, event)
            if isinstance(outcome, Err):
                raise type(outcome.error_type, (Exception,), {})(outcome.message)
            return outcome.value

        return handler

    slept: list[float] = []
    engine = LocalEngine(
        StateHome(Path(tempfile.mkdtemp(dir=tmp))),  # a fresh store per run
        {name: handler_for(name) for name in scripts},
        time_scale=0,
        rng=random.Random(11),
        sleeper=slept.append,
    )
    try:
        arn = engine.create_state_machine("conformance", definition)
        described = engine.start_execution(arn, "run", payload)
        events = engine.get_execution_history(described["executionArn"])["events"]
        trace = reduce(events, described)
        trace.task_results = task_results(events)
        trace.delays = [d.seconds for d in engine.list_delays(described["executionArn"])]
        trace.calls = [(name, _normalize(event)) for name, event in player.calls]
        return trace
    finally:
        engine.close()


# --- moto --------------------------------------------------------------------------------


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


class Moto:
    """moto's Step Functions interpreter with Lambda results scripted (tests only)."""

    name = "moto"

    def __init__(self) -> None:
        self.player = _Player({})
        self.slept: list[float] = []
        self.functions: set[str] = set()
        self._count = 0
        session = boto3.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )
        self.sfn: Any = session.client("stepfunctions")
        self.lam: Any = session.client("lambda")
        iam: Any = session.client("iam")
        self.role = iam.create_role(RoleName="conformance", AssumeRolePolicyDocument="{}")["Role"][
            "Arn"
        ]

    def invoke(
        self, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: Any
    ) -> bytes:
        name = function_name.rsplit(":", 1)[-1] if ":function:" in function_name else function_name
        outcome = self.player.next(name, json.loads(body) if body else {})
        if isinstance(outcome, Err):
            response_headers["x-amz-function-error"] = "Unhandled"
            error = {
                "errorMessage": outcome.message,
                "errorType": outcome.error_type,
                "requestId": "",
                "stackTrace": [],
            }
            return json.dumps(error).encode()
        return json.dumps(outcome.value).encode()

    def run(
        self,
        definition: Mapping[str, Any],
        scripts: Scripts,
        payload: Any,
        engine: Trace | None = None,
    ) -> Trace:
        self.player = _Player(scripts)
        self.slept = []
        for name in scripts:
            if name not in self.functions:
                self.lam.create_function(
                    FunctionName=name,
                    Runtime="python3.12",
                    Role=self.role,
                    Handler="index.handler",
                    Code={"ZipFile": _zip()},
                )
                self.functions.add(name)
        self._count += 1
        machine = self.sfn.create_state_machine(
            name=f"conformance-{self._count}", definition=json.dumps(definition), roleArn=self.role
        )["stateMachineArn"]
        execution = self.sfn.start_execution(
            stateMachineArn=machine, name="run", input=json.dumps(payload)
        )
        deadline = time.monotonic() + 60
        while True:
            described = self.sfn.describe_execution(executionArn=execution["executionArn"])
            if described["status"] != "RUNNING" or time.monotonic() > deadline:
                break
            time.sleep(0.005)
        events = self.sfn.get_execution_history(
            executionArn=execution["executionArn"], maxResults=1000
        )["events"]
        trace = reduce(events, described)
        trace.delays = list(self.slept)
        trace.calls = [(name, _normalize(event)) for name, event in self.player.calls]
        return trace


@contextmanager
def moto_backend() -> Iterator[Moto]:
    config: Any = {
        "stepfunctions": {"execute_state_machine": True},
        "lambda": {"use_docker": False},
    }
    with mock_aws(config=config):
        backend = Moto()

        def record(seconds: float) -> None:
            backend.slept.append(seconds)

        with (
            mock.patch("moto.awslambda_simple.models.LambdaSimpleBackend.invoke", _bound(backend)),
            mock.patch(
                "moto.stepfunctions.parser.asl.component.common.retry.retrier_decl.time",
                SimpleNamespace(sleep=record),
            ),
        ):
            yield backend


class LocalStackReference:
    """LocalStack's Step Functions with every Task mocked by what the engine's run got."""

    name = "localstack"

    def __init__(self, server: LocalStack) -> None:
        self.server = server
        self.sfn: Any = server.get_client()

    def run(
        self,
        definition: Mapping[str, Any],
        scripts: Scripts,
        payload: Any,
        engine: Trace | None = None,
    ) -> Trace:
        assert engine is not None, "LocalStack replays the engine's task results"
        machine = f"conformance-{uuid.uuid4().hex[:12]}"  # one server for the whole session
        responses = {
            f"{state}-{machine}": {str(n): result for n, result in enumerate(results)}
            for state, results in engine.task_results.items()
        }
        self.server.use_mock_config(
            {
                "StateMachines": {
                    machine: {
                        "TestCases": {
                            "run": {state: f"{state}-{machine}" for state in engine.task_results}
                        }
                    }
                },
                "MockedResponses": responses,
            }
        )
        arn = self.sfn.create_state_machine(
            name=machine,
            definition=json.dumps(cap_retry_delays(definition, 1)),  # it sleeps for real
            roleArn="arn:aws:iam::000000000000:role/conformance",
        )["stateMachineArn"]
        execution = self.sfn.start_execution(
            stateMachineArn=f"{arn}#run", name="run", input=json.dumps(payload)
        )["executionArn"]
        deadline = time.monotonic() + 120
        while True:
            described = self.sfn.describe_execution(executionArn=execution)
            if described["status"] != "RUNNING" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        pages = self.sfn.get_paginator("get_execution_history").paginate(executionArn=execution)
        events = [event for page in pages for event in page["events"]]
        trace = reduce(events, described)
        trace.calls = scheduled_calls(events)
        return trace


Reference = Moto | LocalStackReference


def _bound(backend: Moto) -> Any:
    def invoke(
        self: Any,
        function_name: str,
        qualifier: Any,
        body: Any,
        headers: Any,
        response_headers: Any,
    ) -> bytes:
        return backend.invoke(function_name, qualifier, body, headers, response_headers)

    return invoke


def compiled(definition: Mapping[str, Any]) -> dict[str, Any]:
    """Substitute the compiler's ``${XFunctionArn}`` placeholders with plain function names."""
    names = {placeholder[2:-1]: placeholder[2:-4] for placeholder in _placeholders(definition)}
    result = substitute(dict(definition), names)
    assert isinstance(result, dict)
    return result


def _placeholders(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value} if value.startswith("${") and value.endswith("Arn}") else set()
    if isinstance(value, dict):
        return set().union(*(_placeholders(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_placeholders(v) for v in value)) if value else set()
    return set()
