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

Ranges stay ranges (:class:`ResponseRanges`, looked up by bounds): ``"0-300000000"`` is one
entry, not 300 million. Invocation numbers are at most :data:`MAX_INVOCATION`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from stepsaga._model.inputs import MAX_PROBLEMS, is_stdin, read_json_file
from stepsaga.errors import InvalidInputError, MockConfigError

#: The highest invocation number a mocked response may name: far more invocations than any
#: execution makes, and a bound that keeps a hostile number an input error.
MAX_INVOCATION = 999_999_999
MAX_FILE_BYTES = 1024 * 1024

_RANGE = re.compile(r"^[ \t]*([0-9]+)[ \t]*(?:-[ \t]*([0-9]+)[ \t]*)?$")


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


class ResponseRanges(Sequence[MockedResponse]):
    """The responses of one mocked response name by invocation number, kept as the file's
    contiguous ranges from 0: ``len`` is the number of invocations defined, ``[n]`` the
    response of invocation ``n`` (a binary search over the range starts)."""

    __slots__ = ("_ends", "_responses")

    def __init__(self, ranges: Sequence[tuple[int, MockedResponse]] = ()) -> None:
        """``ranges``: ``(last invocation number, response)`` in order, from 0, no gaps."""
        self._ends = tuple(end for end, _ in ranges)
        self._responses = tuple(response for _, response in ranges)

    @classmethod
    def of(cls, responses: Sequence[MockedResponse]) -> ResponseRanges:
        """Ranges for one response per invocation, equal neighbours merged."""
        ranges: list[tuple[int, MockedResponse]] = []
        for number, response in enumerate(responses):
            if ranges and ranges[-1][1] == response:
                ranges[-1] = (number, response)
            else:
                ranges.append((number, response))
        return cls(ranges)

    @property
    def ranges(self) -> tuple[tuple[int, int, MockedResponse], ...]:
        """``(first, last, response)`` per range."""
        starts = (0, *(end + 1 for end in self._ends[:-1]))
        return tuple(zip(starts, self._ends, self._responses, strict=True))

    def __len__(self) -> int:
        return self._ends[-1] + 1 if self._ends else 0

    @overload
    def __getitem__(self, index: int) -> MockedResponse: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[MockedResponse, ...]: ...

    def __getitem__(self, index: int | slice) -> MockedResponse | tuple[MockedResponse, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._responses[bisect.bisect_left(self._ends, index)]

    def __iter__(self) -> Iterator[MockedResponse]:
        for first, last, response in self.ranges:
            for _ in range(last - first + 1):
                yield response

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ResponseRanges):
            return self.ranges == other.ranges
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.ranges)

    def __repr__(self) -> str:
        return f"ResponseRanges({list(self.ranges)!r})"

    def to_json(self) -> list[dict[str, Any]]:
        return [
            {"From": first, "To": last, **response.to_json()}
            for first, last, response in self.ranges
        ]

    @classmethod
    def from_json(cls, data: Sequence[Mapping[str, Any]]) -> ResponseRanges:
        return cls([(int(r["To"]), MockedResponse.from_json(r)) for r in data])


@dataclass(frozen=True)
class MockTestCase:
    """One test case resolved: for each mocked state, its responses by invocation number."""

    state_machine: str
    name: str
    responses: Mapping[str, ResponseRanges]
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
                state: {"MockedResponse": self.response_names[state], "Ranges": rs.to_json()}
                for state, rs in self.responses.items()
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MockTestCase:
        states = data["States"]
        return cls(
            state_machine=data["StateMachine"],
            name=data["TestCase"],
            responses={s: _stored_responses(v) for s, v in states.items()},
            response_names={s: v["MockedResponse"] for s, v in states.items()},
        )


@dataclass(frozen=True)
class MockConfig:
    """A validated mock configuration file."""

    state_machines: Mapping[str, Mapping[str, Mapping[str, str]]]
    mocked_responses: Mapping[str, ResponseRanges]
    source: str = "<mock config>"

    @classmethod
    def from_file(cls, path: str | Path) -> MockConfig:
        """Read (as every JSON input is read: ``read_json_file``) and validate a file."""
        try:
            data = read_json_file(Path(path), what="mock config", max_bytes=MAX_FILE_BYTES)
        except InvalidInputError as exc:
            raise MockConfigError(exc.message, field="mock_config") from None
        return cls.from_dict(data, source="<stdin>" if is_stdin(path) else str(path))

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<mock config>") -> MockConfig:
        """Validate a decoded config; every problem found is reported (one line each, at
        most ``MAX_PROBLEMS``), not only the first."""
        problems = _Problems(source)
        if not isinstance(data, Mapping):
            problems.add("the mock config is a JSON object")
            problems.raise_any()
        unknown = set(data) - {"StateMachines", "MockedResponses"}
        if unknown:
            problems.add(f"unknown top-level field(s) {sorted(unknown)}")
        machines_raw = data.get("StateMachines", {})
        responses_raw = data.get("MockedResponses", {})
        if not isinstance(machines_raw, Mapping) or not isinstance(responses_raw, Mapping):
            problems.add("StateMachines and MockedResponses are objects")
            problems.raise_any()
        responses: dict[str, ResponseRanges] = {}
        for name, raw in responses_raw.items():
            parsed = _responses(name, raw, problems)
            if parsed is not None:
                responses[name] = parsed
        machines: dict[str, dict[str, dict[str, str]]] = {}
        for machine, body in machines_raw.items():
            if (
                not isinstance(body, Mapping)
                or set(body) != {"TestCases"}
                or not isinstance(body["TestCases"], Mapping)
            ):
                problems.add(f'StateMachines.{machine} must be {{"TestCases": {{…}}}}')
                continue
            machines[machine] = {}
            for case, states in body["TestCases"].items():
                if not isinstance(states, Mapping):
                    problems.add(
                        f"test case {machine}.{case} maps state names to mocked response names"
                    )
                    continue
                for state, response in states.items():
                    defined = isinstance(response, str) and response in responses_raw
                    if not defined:
                        problems.add(
                            f"test case {machine}.{case}: state {state!r} uses mocked response "
                            f"{response!r}, which MockedResponses does not define"
                        )
                machines[machine][case] = dict(states)
        problems.raise_any()
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


def _stored_responses(state: Mapping[str, Any]) -> ResponseRanges:
    """A state's responses as an execution row keeps them (``Responses``: one per
    invocation, written before ranges were kept as ranges)."""
    if "Ranges" in state:
        return ResponseRanges.from_json(state["Ranges"])
    return ResponseRanges.of([MockedResponse.from_json(r) for r in state["Responses"]])


class _Problems:
    """The problems found in one config, raised together as one ``MockConfigError``."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def add(self, message: str) -> None:
        self.lines.append(f"{self.source}: {message}")

    def raise_any(self) -> None:
        if not self.lines:
            return
        shown = self.lines[:MAX_PROBLEMS]
        if len(self.lines) > MAX_PROBLEMS:
            shown.append(f"{self.source}: {len(self.lines) - MAX_PROBLEMS} more problems not shown")
        raise MockConfigError("; ".join(shown), field="mock_config", problems=shown)


def _responses(name: str, raw: Any, problems: _Problems) -> ResponseRanges | None:
    """One mocked response's invocation ranges, or None when it has a problem (reported)."""
    if not isinstance(raw, Mapping) or not raw:
        problems.add(f"MockedResponses.{name} maps invocation numbers to Return/Throw")
        return None
    found = len(problems.lines)
    ranges: list[tuple[int, int, MockedResponse]] = []
    for key, body in raw.items():
        match = _RANGE.match(key)
        if match is None:
            problems.add(
                f"MockedResponses.{_cut(name)}: {_cut(key)} is not an invocation number or range "
                'like "1-2"'
            )
            continue
        numbers = [group for group in match.groups() if group is not None]
        if any(
            len(number) > len(str(MAX_INVOCATION)) or int(number) > MAX_INVOCATION
            for number in numbers
        ):
            problems.add(
                f"MockedResponses.{_cut(name)}: {_cut(key)} names an invocation number above "
                f"the maximum {MAX_INVOCATION}"
            )
            continue
        start, end = int(numbers[0]), int(numbers[-1])
        if end < start:
            problems.add(f"MockedResponses.{_cut(name)}: range {_cut(key)} ends before it starts")
            continue
        response = _response(name, key, body, problems)
        if response is not None:
            ranges.append((start, end, response))
    if len(problems.lines) > found:
        return None  # gaps would only repeat what was just reported
    ranges.sort(key=lambda r: r[0])
    expected = 0
    for start, end, _ in ranges:
        if start != expected:
            problems.add(
                f"MockedResponses.{name}: invocation numbers must start at 0 and leave no gaps or "
                f"overlaps; expected {expected}, found {start}"
            )
            return None
        expected = end + 1
    return ResponseRanges([(end, response) for _, end, response in ranges])


def _cut(text: str) -> str:
    """A name or key from the file as an error line shows it: quoted, at most 40 characters."""
    return repr(text if len(text) <= 40 else f"{text[:40]}…")


def _response(name: str, key: str, body: Any, problems: _Problems) -> MockedResponse | None:
    where = f"MockedResponses.{name}.{key}"
    if (
        not isinstance(body, Mapping)
        or len(body) != 1
        or next(iter(body)) not in ("Return", "Throw")
    ):
        problems.add(f"{where} must have exactly one of Return or Throw")
        return None
    if "Return" in body:
        return MockedResponse(returns=True, value=body["Return"])
    throw = body["Throw"]
    if (
        not isinstance(throw, Mapping)
        or not isinstance(throw.get("Error"), str)
        or set(throw) - {"Error", "Cause"}
    ):
        problems.add(f"{where}.Throw needs Error (and optionally Cause), both strings")
        return None
    cause = throw.get("Cause", "")
    if not isinstance(cause, str):
        problems.add(f"{where}.Throw.Cause must be a string")
        return None
    return MockedResponse(returns=False, error=throw["Error"], cause=cause)
