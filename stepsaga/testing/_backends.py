"""Run a saga on a backend and read back what happened, the same way on each.

Why: a scenario (a mock config test case and its expected path) should run unchanged on the
embedded engine and on a Step Functions API — Step Functions Local in a container, or AWS.
Both backends get the compiled definition with its ``${<Function>FunctionArn}`` placeholders
filled with Lambda ARNs (function name = the saga's logical function name, e.g.
``ReserveStock``, ``Reconcile``), so mock config files, histories and assertions are the same.
"""

from __future__ import annotations

import json
import re
import time
import uuid
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stepsaga.engine import Handler, LocalEngine
from stepsaga.errors import StateNotMockedError
from stepsaga.testing._history import History

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

    from stepsaga.workflow._saga import Saga

#: The account Step Functions Local and the embedded engine use by default.
DEFAULT_ACCOUNT = "123456789012"
_FUNCTION_IN_ARN = re.compile(r":function:([\w-]+)(?::[\w$-]+)?$")


def lambda_arn(function: str, region: str = "us-east-1", account: str = DEFAULT_ACCOUNT) -> str:
    """The ARN a test deployment uses for the saga function named ``function``."""
    return f"arn:aws:lambda:{region}:{account}:function:{function}"


@dataclass(frozen=True)
class Execution:
    """An execution as it stands after :meth:`SagaRunner.run` returned."""

    arn: str
    status: str
    output: Any
    error: str | None
    cause: str | None
    history: History


class SagaRunner(ABC):
    """Where a test runs a state machine: :class:`EngineBackend` or
    :class:`StepFunctionsBackend`."""

    region: str
    account: str

    @abstractmethod
    def deploy(self, name: str, definition: Mapping[str, Any]) -> str:
        """Create the state machine, or update its definition; returns its ARN."""

    @abstractmethod
    def run(
        self,
        state_machine_arn: str,
        input: Any,
        *,
        test_case: str | None = None,
        name: str | None = None,
    ) -> Execution:
        """Start an execution (with the mock config's ``test_case``) and return it once it
        ended — or, on the embedded engine, once it waits for a task token."""

    def deploy_saga(self, saga: Saga) -> str:
        """Compile ``saga``, fill its function ARNs and deploy it under ``saga.name`` (the
        name mock config files refer to)."""
        from stepsaga.workflow import compile
        from stepsaga.workflow._substitutions import render

        substitutions = saga.definition_substitutions(
            lambda function: lambda_arn(function, self.region, self.account)
        )
        return self.deploy(saga.name, render(compile(saga), substitutions))


class EngineBackend(SagaRunner):
    """The embedded engine: executions run in-process and synchronously."""

    def __init__(self, engine: LocalEngine) -> None:
        self.engine = engine
        self.region = engine.region
        self.account = engine.account_id

    def deploy(self, name: str, definition: Mapping[str, Any]) -> str:
        return self.engine.ensure_state_machine(name, definition)

    def run(
        self,
        state_machine_arn: str,
        input: Any,
        *,
        test_case: str | None = None,
        name: str | None = None,
    ) -> Execution:
        described = self.engine.start_execution(
            state_machine_arn, name or uuid.uuid4().hex, input, test_case=test_case
        )
        arn = str(described["executionArn"])
        return _execution(described, History.of(self.engine.get_execution_history(arn)))


class StepFunctionsBackend(SagaRunner):
    """A Step Functions API through a boto3 client (Step Functions Local, LocalStack, or
    AWS): polls ``DescribeExecution`` until the execution ends, at most ``timeout`` seconds.

    ``max_retry_delay`` (seconds) caps every retrier's ``IntervalSeconds`` and
    ``MaxDelaySeconds`` when deploying (:func:`cap_retry_delays`): emulators that wait
    for real would otherwise spend minutes in a production retry envelope. Paths, attempts
    and errors stay those of the definition; only the delays shrink.
    """

    def __init__(
        self,
        client: SFNClient,
        *,
        timeout: float = 120.0,
        poll_interval: float = 0.2,
        account: str = DEFAULT_ACCOUNT,
        role_arn: str | None = None,
        max_retry_delay: int | None = None,
    ) -> None:
        self.client = client
        self.max_retry_delay = max_retry_delay
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.region = client.meta.region_name
        self.account = account
        self.role_arn = role_arn or f"arn:aws:iam::{account}:role/stepsaga-test"

    def deploy(self, name: str, definition: Mapping[str, Any]) -> str:
        if self.max_retry_delay is not None:
            definition = cap_retry_delays(definition, self.max_retry_delay)
        try:
            return self._create_or_update(name, definition)
        except self.client.exceptions.InvalidDefinition as exc:
            if not any(f in str(exc) for f in _RETRY_EXTENSIONS):
                raise
            # Emulators older than the 2023 retrier fields refuse them; paths do not depend
            # on them (they shape delays only), so run without rather than not at all.
            warnings.warn(
                f"{name}: this Step Functions API refuses {'/'.join(_RETRY_EXTENSIONS)}; "
                "deploying without them (retry delays differ, paths do not)",
                stacklevel=2,
            )
            return self._create_or_update(name, _without_retry_extensions(definition))

    def _create_or_update(self, name: str, definition: Mapping[str, Any]) -> str:
        text = json.dumps(definition)
        try:
            created = self.client.create_state_machine(
                name=name, definition=text, roleArn=self.role_arn
            )
            return created["stateMachineArn"]
        except self.client.exceptions.StateMachineAlreadyExists:
            arn = f"arn:aws:states:{self.region}:{self.account}:stateMachine:{name}"
            self.client.update_state_machine(stateMachineArn=arn, definition=text)
            return arn

    def run(
        self,
        state_machine_arn: str,
        input: Any,
        *,
        test_case: str | None = None,
        name: str | None = None,
    ) -> Execution:
        target = f"{state_machine_arn}#{test_case}" if test_case else state_machine_arn
        started = self.client.start_execution(
            stateMachineArn=target, name=name or uuid.uuid4().hex, input=json.dumps(input)
        )
        arn = started["executionArn"]
        deadline = time.monotonic() + self.timeout
        while True:
            described = self.client.describe_execution(executionArn=arn)
            if described["status"] != "RUNNING":
                break
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"execution {arn} still RUNNING after {self.timeout:g} s; so far:\n"
                    f"{History.of(list(self._events(arn))).describe()}"
                )
            time.sleep(self.poll_interval)
        return _execution(dict(described), History.of(list(self._events(arn))))

    def _events(self, execution_arn: str) -> Iterator[Mapping[str, Any]]:
        pages = self.client.get_paginator("get_execution_history").paginate(
            executionArn=execution_arn
        )
        for page in pages:
            yield from page["events"]


_RETRY_EXTENSIONS = ("JitterStrategy", "MaxDelaySeconds")


def cap_retry_delays(definition: Mapping[str, Any], seconds: int) -> dict[str, Any]:
    """A copy of ``definition`` whose retriers wait at most ``seconds`` each (their
    ``IntervalSeconds`` and ``MaxDelaySeconds`` capped, in every nested branch and item
    processor too); attempts, backoff and jitter are kept."""
    copy: dict[str, Any] = json.loads(json.dumps(definition))
    _cap(copy, max(1, int(seconds)))
    return copy


def _cap(machine: dict[str, Any], seconds: int) -> None:
    for state in machine.get("States", {}).values():
        for retrier in state.get("Retry", []):
            retrier["IntervalSeconds"] = min(int(retrier.get("IntervalSeconds", 1)), seconds)
            retrier["MaxDelaySeconds"] = min(int(retrier.get("MaxDelaySeconds", seconds)), seconds)
        for branch in state.get("Branches", []):
            _cap(branch, seconds)
        for key in ("ItemProcessor", "Iterator"):
            if isinstance(state.get(key), dict):
                _cap(state[key], seconds)


def _without_retry_extensions(definition: Mapping[str, Any]) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(definition))
    for state in copy.get("States", {}).values():
        for retrier in state.get("Retry", []):
            for field in _RETRY_EXTENSIONS:
                retrier.pop(field, None)
    return copy


def _execution(described: Mapping[str, Any], history: History) -> Execution:
    output = described.get("output")
    return Execution(
        arn=str(described["executionArn"]),
        status=str(described["status"]),
        output=None if output is None else json.loads(output),
        error=described.get("error"),
        cause=described.get("cause"),
        history=history,
    )


def strict_handlers(handlers: Mapping[str, Handler] | None = None) -> Mapping[str, Handler]:
    """An engine registry: ``handlers`` (by function name), and for every other function a
    handler that fails the task with ``StateNotMockedError`` naming it.

    Why: the embedded engine checks at start that every ``Task`` has a handler, while a test
    case mocks only the states it expects to reach. This registry satisfies the check and
    turns a state reached by surprise into a visible failure in the history — as Step
    Functions Local does when it calls a Lambda endpoint without that function.
    """
    return _StrictRegistry(dict(handlers or {}))


class _StrictRegistry(Mapping[str, Handler]):
    def __init__(self, handlers: dict[str, Handler]) -> None:
        self._handlers = handlers

    def __getitem__(self, function_name: str) -> Handler:
        found = self._handlers.get(function_name)
        if found is not None:
            return found
        match = _FUNCTION_IN_ARN.search(function_name)
        name = match.group(1) if match else function_name
        return self._handlers.get(name) or _not_mocked(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._handlers)

    def __len__(self) -> int:
        return len(self._handlers)


def _not_mocked(function: str) -> Handler:
    def handler(event: Any, context: Any) -> Any:
        state = event.get("execution", {}).get("state") if isinstance(event, dict) else None
        where = f"state {state!r} " if state else ""
        raise StateNotMockedError(
            f"{where}invoked function {function!r}: the test case does not mock it and no "
            "handler is registered for it"
        )

    return handler
