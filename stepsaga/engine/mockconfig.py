"""Step Functions Local mock configurations (``MockConfigFile.json``), read unchanged.

Format::

    {"StateMachines": {"<machine>": {"TestCases": {"<case>": {"<State>": "<Response>"}}}},
     "MockedResponses": {"<Response>": {"0": {"Return": …},
                                        "1-2": {"Throw": {"Error": …, "Cause": …}}}}}

Invocation numbers are 0-based and count every invocation of a state in one execution,
retries included (Step Functions Local keeps one counter per state per execution). A
``Return`` value replaces the whole service integration result (for ``lambda:invoke``:
``{"StatusCode": 200, "Payload": …}``); for ``.waitForTaskToken`` it is the callback's
output. States a test case does not name run their real handlers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepsaga.engine.errors import MockConfigError

_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


@dataclass(frozen=True)
class MockedResponse:
    """``Return`` (``value``) or ``Throw`` (``error``/``cause``) for one invocation."""

    returns: bool
    value: Any = None
    error: str = ""
    cause: str = ""

    def to_json(self) -> dict[str, Any]:
        if self.returns:
            return {"Return": self.value}
        return {"Throw": {"Error": self.error, "Cause": self.cause}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MockedResponse:
        if "Return" in data:
            return cls(returns=True, value=data["Return"])
        throw = data["Throw"]
        return cls(returns=False, error=throw["Error"], cause=throw.get("Cause", ""))


@dataclass(frozen=True)
class MockTestCase:
    """One test case resolved: for each mocked state, its responses by invocation number."""

    state_machine: str
    name: str
    responses: Mapping[str, tuple[MockedResponse, ...]]
    response_names: Mapping[str, str]

    def response(self, state: str, invocation: int) -> MockedResponse | None:
        """The mocked response, or ``None`` when the test case runs more invocations than it
        defines (the engine fails the execution then, naming both)."""
        responses = self.responses[state]
        return responses[invocation] if invocation < len(responses) else None

    def to_json(self) -> dict[str, Any]:
        return {
            "StateMachine": self.state_machine,
            "TestCase": self.name,
            "States": {
                state: {
                    "MockedResponse": self.response_names[state],
                    "Responses": [r.to_json() for r in rs],
                }
                for state, rs in self.responses.items()
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MockTestCase:
        states = data["States"]
        return cls(
            state_machine=data["StateMachine"],
            name=data["TestCase"],
            responses={
                s: tuple(MockedResponse.from_json(r) for r in v["Responses"])
                for s, v in states.items()
            },
            response_names={s: v["MockedResponse"] for s, v in states.items()},
        )


@dataclass(frozen=True)
class MockConfig:
    """A validated mock configuration file."""

    state_machines: Mapping[str, Mapping[str, Mapping[str, str]]]
    mocked_responses: Mapping[str, tuple[MockedResponse, ...]]
    source: str = "<mock config>"

    @classmethod
    def from_file(cls, path: str | Path) -> MockConfig:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise MockConfigError(
                f"cannot read mock config {path}: {exc.strerror}", field="mock_config"
            ) from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise MockConfigError(
                f"mock config {path} is not JSON: {exc}", field="mock_config"
            ) from None
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<mock config>") -> MockConfig:
        def fail(message: str) -> MockConfigError:
            return MockConfigError(f"{source}: {message}", field="mock_config")

        if not isinstance(data, Mapping):
            raise fail("the mock config is a JSON object")
        unknown = set(data) - {"StateMachines", "MockedResponses"}
        if unknown:
            raise fail(f"unknown top-level field(s) {sorted(unknown)}")
        machines_raw = data.get("StateMachines", {})
        responses_raw = data.get("MockedResponses", {})
        if not isinstance(machines_raw, Mapping) or not isinstance(responses_raw, Mapping):
            raise fail("StateMachines and MockedResponses are objects")
        responses = {name: _responses(name, raw, fail) for name, raw in responses_raw.items()}
        machines: dict[str, dict[str, dict[str, str]]] = {}
        for machine, body in machines_raw.items():
            if (
                not isinstance(body, Mapping)
                or set(body) != {"TestCases"}
                or not isinstance(body["TestCases"], Mapping)
            ):
                raise fail(f'StateMachines.{machine} must be {{"TestCases": {{…}}}}')
            machines[machine] = {}
            for case, states in body["TestCases"].items():
                if not isinstance(states, Mapping):
                    raise fail(
                        f"test case {machine}.{case} maps state names to mocked response names"
                    )
                for state, response in states.items():
                    if response not in responses:
                        raise fail(
                            f"test case {machine}.{case}: state {state!r} uses mocked response "
                            f"{response!r}, which MockedResponses does not define"
                        )
                machines[machine][case] = dict(states)
        return cls(state_machines=machines, mocked_responses=responses, source=source)

    def test_case(self, state_machine: str, name: str) -> MockTestCase:
        cases = self.state_machines.get(state_machine)
        if cases is None:
            known = ", ".join(sorted(self.state_machines)) or "none"
            raise MockConfigError(
                f"{self.source}: no state machine {state_machine!r} (it has: {known})",
                field="state_machine",
            )
        states = cases.get(name)
        if states is None:
            raise MockConfigError(
                f"{self.source}: state machine {state_machine!r} has no test case {name!r} "
                f"(it has: {', '.join(sorted(cases)) or 'none'})",
                field="test_case",
            )
        return MockTestCase(
            state_machine=state_machine,
            name=name,
            responses={
                state: self.mocked_responses[response] for state, response in states.items()
            },
            response_names=dict(states),
        )


def _responses(name: str, raw: Any, fail: Any) -> tuple[MockedResponse, ...]:
    if not isinstance(raw, Mapping) or not raw:
        raise fail(f"MockedResponses.{name} maps invocation numbers to Return/Throw")
    ranges: list[tuple[int, int, MockedResponse]] = []
    for key, body in raw.items():
        match = _RANGE.match(key)
        if match is None:
            raise fail(
                f'MockedResponses.{name}: {key!r} is not an invocation number or range like "1-2"'
            )
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) is not None else start
        if end < start:
            raise fail(f"MockedResponses.{name}: range {key!r} ends before it starts")
        ranges.append((start, end, _response(name, key, body, fail)))
    ranges.sort(key=lambda r: r[0])
    expanded: list[MockedResponse] = []
    for start, end, response in ranges:
        if start != len(expanded):
            raise fail(
                f"MockedResponses.{name}: invocation numbers must start at 0 and leave no gaps or "
                f"overlaps; expected {len(expanded)}, found {start}"
            )
        expanded.extend([response] * (end - start + 1))
    return tuple(expanded)


def _response(name: str, key: str, body: Any, fail: Any) -> MockedResponse:
    where = f"MockedResponses.{name}.{key}"
    if (
        not isinstance(body, Mapping)
        or len(body) != 1
        or next(iter(body)) not in ("Return", "Throw")
    ):
        raise fail(f"{where} must have exactly one of Return or Throw")
    if "Return" in body:
        return MockedResponse(returns=True, value=body["Return"])
    throw = body["Throw"]
    if (
        not isinstance(throw, Mapping)
        or not isinstance(throw.get("Error"), str)
        or set(throw) - {"Error", "Cause"}
    ):
        raise fail(f"{where}.Throw needs Error (and optionally Cause), both strings")
    cause = throw.get("Cause", "")
    if not isinstance(cause, str):
        raise fail(f"{where}.Throw.Cause must be a string")
    return MockedResponse(returns=False, error=throw["Error"], cause=cause)
