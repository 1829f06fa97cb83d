"""Write Step Functions Local mock configurations (``MockConfigFile.json``) from Python.

Why a builder: the file names every response twice (test case → response name → numbered
invocations) and numbers invocations by hand, so "throttled twice, then succeeds" becomes
index arithmetic. Here a test case maps each state to its responses in order; the builder
numbers them (0-based, retries included, ranges like ``"1-2"`` for repeats) and writes exactly
the format Step Functions Local reads — the same file ``stepsaga start --mock-config`` and
:class:`stepsaga.engine.MockConfig` read. A state's response list is named
``<State>_<TestCase>`` after the first test case using it, and shared by later test cases
that give that state the same responses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepsaga.engine import MockConfig


def _check_times(times: object) -> None:
    if not isinstance(times, int) or isinstance(times, bool) or times < 1:
        raise ValueError(f"times must be an integer >= 1, got {times!r}")


@dataclass(frozen=True)
class Return:
    """The state succeeds with ``value`` for ``times`` consecutive invocations.

    ``value`` replaces the whole integration result: for ``lambda:invoke`` that is
    ``{"StatusCode": 200, "Payload": …}`` (build it with :meth:`payload`); for a
    ``.waitForTaskToken`` task it is the callback's output (what ``SendTaskSuccess`` sends).
    """

    value: Any
    times: int = 1

    def __post_init__(self) -> None:
        _check_times(self.times)
        try:
            json.dumps(self.value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Return value is not JSON: {exc}") from None

    @classmethod
    def payload(cls, payload: Any, *, times: int = 1) -> Return:
        """A ``lambda:invoke`` result whose function returned ``payload``."""
        return cls({"StatusCode": 200, "Payload": payload}, times=times)

    def to_json(self) -> dict[str, Any]:
        return {"Return": self.value}


@dataclass(frozen=True)
class Throw:
    """The state fails with ``error`` (the name ``Retry``/``Catch`` match) for ``times``
    consecutive invocations; each retry consumes one."""

    error: str
    cause: str = ""
    times: int = 1

    def __post_init__(self) -> None:
        _check_times(self.times)
        if not isinstance(self.error, str) or not self.error:
            raise ValueError(f"Throw needs an error name, got {self.error!r}")
        if not isinstance(self.cause, str):
            raise ValueError(f"Throw cause must be a string, got {self.cause!r}")

    def to_json(self) -> dict[str, Any]:
        return {"Throw": {"Error": self.error, "Cause": self.cause}}


Response = Return | Throw


def _shaped(response: Response, state: str) -> Response:
    """A response that takes its state's shape (``scenarios.ReconciliationReturn``)."""
    for_state = getattr(response, "for_state", None)
    return for_state(state) if callable(for_state) else response


class MockConfigBuilder:
    """Test cases (state machine, name, state → responses), rendered as a mock config file.

    Chain :meth:`test_case` calls, then :meth:`write` the file for Step Functions Local or
    :meth:`build` the parsed config for the embedded engine. Only ``Task`` states can be
    mocked; a state a test case does not name runs for real.
    """

    def __init__(self) -> None:
        self._cases: dict[tuple[str, str], dict[str, tuple[Response, ...]]] = {}

    def test_case(
        self,
        state_machine: str,
        name: str,
        states: Mapping[str, Response | Sequence[Response]],
    ) -> MockConfigBuilder:
        """Add test case ``name`` of ``state_machine``; each state's responses are used in
        order, one per invocation (``times`` repeats one). Returns ``self`` for chaining."""
        for what, value in (("state machine", state_machine), ("test case", name)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{what} name must be a non-empty string, got {value!r}")
        if (state_machine, name) in self._cases:
            raise ValueError(f"test case {name!r} of {state_machine!r} is already defined")
        if not states:
            raise ValueError(f"test case {name!r} mocks no state")
        mocked: dict[str, tuple[Response, ...]] = {}
        for state, responses in states.items():
            if not isinstance(state, str) or not state:
                raise ValueError(f"test case {name!r}: state names are non-empty strings")
            listed = (responses,) if isinstance(responses, Return | Throw) else tuple(responses)
            if not listed:
                raise ValueError(f"test case {name!r}: state {state!r} has no response")
            for response in listed:
                if not isinstance(response, Return | Throw):
                    raise ValueError(
                        f"test case {name!r}: state {state!r} responses are Return or Throw, "
                        f"got {response!r}"
                    )
            mocked[state] = tuple(_shaped(response, state) for response in listed)
        self._cases[(state_machine, name)] = mocked
        return self

    def to_dict(self) -> dict[str, Any]:
        """The ``MockConfigFile.json`` document."""
        machines: dict[str, dict[str, Any]] = {}
        responses: dict[str, dict[str, Any]] = {}
        names_by_content: dict[tuple[str, str], str] = {}
        for (machine, case), states in self._cases.items():
            test_case: dict[str, str] = {}
            for state, listed in states.items():
                numbered = _numbered(listed)
                content = (state, json.dumps(numbered, sort_keys=True))
                response_name = names_by_content.get(content)
                if response_name is None:
                    response_name = _unique(f"{state}_{case}", responses)
                    names_by_content[content] = response_name
                    responses[response_name] = numbered
                test_case[state] = response_name
            machines.setdefault(machine, {"TestCases": {}})["TestCases"][case] = test_case
        return {"StateMachines": machines, "MockedResponses": responses}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def write(self, path: str | Path) -> Path:
        """Write the file (conventionally ``MockConfigFile.json``); returns its path."""
        target = Path(path)
        target.write_text(self.to_json(), encoding="utf-8")
        return target

    def build(self) -> MockConfig:
        """The config as the embedded engine reads it (``LocalEngine(mock_config=…)``)."""
        return MockConfig.from_dict(self.to_dict(), source="<MockConfigBuilder>")


def _numbered(responses: Sequence[Response]) -> dict[str, Any]:
    """``{"0": …, "1-2": …}``: consecutive equal responses share one range."""
    expanded: list[dict[str, Any]] = []
    for response in responses:
        expanded.extend([response.to_json()] * response.times)
    numbered: dict[str, Any] = {}
    start = 0
    while start < len(expanded):
        end = start
        while end + 1 < len(expanded) and _same(expanded[end + 1], expanded[start]):
            end += 1
        key = str(start) if end == start else f"{start}-{end}"
        numbered[key] = expanded[start]
        start = end + 1
    return numbered


def _same(a: Any, b: Any) -> bool:
    # JSON equality, not Python equality (which says 1 == True == 1.0).
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _unique(name: str, taken: Mapping[str, Any]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    return candidate
