"""The engine's JSONata (jsonata-python) against the reference implementation (npm
``jsonata``, pinned in package.json, run under Node by ``evaluate.js``): every expression of
the engine's JSONata tests and the compiler's golden JSONata machines, and
hypothesis-generated expressions over random JSON, must give the same value, both nothing
(*undefined*), or both an error. Each kind of disagreement found is a :class:`Deviation`
with an example that must keep disagreeing (so a fixed library shows up), documented in
docs/reference/engine.md with its workaround; a generated disagreement of another kind fails.
Without Node or ``node_modules/jsonata`` the tests skip in one line (fail under ``CI=true``)."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepsaga.engine._errors import QueryEvaluationError
from stepsaga.engine._jsonata_eval import ADDED_FUNCTIONS, JsonataSyntaxError, compile_expression
from stepsaga.testing.pytest_plugin import under_ci

ROOT = Path(__file__).parents[4]
RUNNER = Path(__file__).with_name("evaluate.js")
CORPUS_FILES = [
    ROOT / "tests" / "framework" / "unit" / "engine" / "test_jsonata.py",
    *sorted(
        (ROOT / "tests" / "framework" / "unit" / "workflow" / "golden").glob("*.jsonata.asl.json")
    ),
]
EXPRESSION = re.compile(r"\{%\s*(.*?)\s*%\}")

#: What every corpus expression reads: a state's input, result, error output and context.
STATES: dict[str, Any] = {
    "input": {
        "case_id": "CASE-1",
        "lines": [
            {"line_id": "L1", "sku": "A", "qty": 1, "price": 5},
            {"line_id": "L2", "sku": "B", "qty": 2, "price": 7.5},
        ],
        "amount": 120,
        "name": "Ada",
        "results": {"ReserveStock": {"status": "completed", "value": {"id": "r-1"}}},
        "groups": {"G": {"failures": []}},
        "failure": {"Error": "BusinessRejectedError", "Cause": "no"},
    },
    "result": {"Payload": {"status": "completed", "reservation": "r-1", "n": 3}},
    "errorOutput": {"Error": "TransientError", "Cause": "later"},
    "context": {
        "Execution": {"Name": "e-1", "Id": "arn:e"},
        "State": {"Name": "S", "RetryCount": 0},
        "Map": {"Item": {"Index": 1, "Value": {"line_id": "L2"}}},
        "Task": {"Token": "t"},
    },
}


@dataclass(frozen=True)
class Outcome:
    """``kind`` is ``value``, ``undefined`` or ``error``; ``value`` for a value."""

    kind: str
    value: Any = None
    detail: str = ""

    def agrees(self, other: Outcome) -> bool:
        if self.kind != other.kind:
            return False
        return self.kind != "value" or _same(self.value, other.value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@dataclass
class _Bindings:
    """What the engine binds (``$states``; no variables)."""

    states_value: Mapping[str, Any]
    variables: Mapping[str, Any] = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    def states(self) -> dict[str, Any]:
        return dict(self.states_value)


def engine(expression: str, states: Mapping[str, Any]) -> Outcome:
    try:
        compiled = compile_expression("{% " + expression + " %}", "Output")
    except JsonataSyntaxError as exc:
        return Outcome("error", detail=str(exc))
    try:
        return Outcome("value", compiled.evaluate(_Bindings(states)))
    except QueryEvaluationError as exc:
        if "returned nothing (undefined)" in exc.cause:
            return Outcome("undefined")
        return Outcome("error", detail=exc.cause)


class Reference:
    """One Node process serving every expression of the module, one line each way."""

    def __init__(self) -> None:
        node = shutil.which("node")
        assert node is not None
        self.process = subprocess.Popen(
            [node, str(RUNNER), str(ROOT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def evaluate(self, expression: str, states: Mapping[str, Any]) -> Outcome:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        request = {"expr": expression, "bindings": {"states": states}}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply = json.loads(self.process.stdout.readline())
        if "value" in reply:
            return Outcome("value", reply["value"])
        if reply.get("undefined"):
            return Outcome("undefined")
        return Outcome("error", detail=reply["error"])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def reference() -> Iterator[Reference]:
    missing = (
        "node is not on PATH"
        if shutil.which("node") is None
        else "node_modules/jsonata is missing (npm ci)"
        if not (ROOT / "node_modules" / "jsonata" / "package.json").exists()
        else None
    )
    if missing is not None:
        if under_ci():
            pytest.fail(f"CI=true needs the JSONata reference: {missing}", pytrace=False)
        pytest.skip(f"needs the JSONata reference: {missing}")
    served = Reference()
    yield served
    served.close()


@dataclass(frozen=True)
class Deviation:
    """A way jsonata-python differs from the reference (docs/reference/engine.md has the
    workaround)."""

    name: str
    example: str
    document: Any

    def covers(self, expression: str, ours: Outcome, theirs: Outcome) -> bool:
        if self.name == "null as nothing":  # $count(null): jsonata-python 0, the reference 1
            return (
                any(f"{name}(" in expression for name in ("$count", "$sort", "$reverse"))
                and theirs.kind == "value"
                and ours.kind != "error"
            )
        if self.name == "argument types":  # the reference refuses; jsonata-python goes on
            return theirs.detail.startswith(("T0410", "T0411", "T0412")) and ours.kind != "error"
        if self.name == "function of nothing":  # the reference: undefined; ours fails
            return ours.kind == "error" and (theirs.kind == "undefined" or "None" in ours.detail)
        if self.name == "NaN":  # the reference computes NaN on; jsonata-python fails
            return "%" in expression and "math domain error" in ours.detail
        if self.name == "modulo":  # JavaScript's % keeps the dividend's sign, Python's not
            return "%" in expression and (ours.kind, theirs.kind) == ("value", "value")
        if self.name == "object membership":  # `in` an object: the reference compares identity
            return " in {" in expression and (ours.kind, theirs.kind) == ("value", "value")
        if self.name == "empty arrays":  # jsonata-python drops [] inside arrays
            return "[]" in expression and (ours.kind, theirs.kind) == ("value", "value")
        raise AssertionError(self.name)


DEVIATIONS = [
    Deviation("null as nothing", "$count($states.input.a)", {"a": None}),
    Deviation("null as nothing", "$sort(null)", None),
    Deviation("argument types", '$pad(0.1, "x")', None),
    Deviation("argument types", "$substring(0, 0)", None),
    Deviation("argument types", "$merge(null)", None),
    Deviation("function of nothing", "$formatNumber($states.input.a, $states.input.a)", {}),
    Deviation("function of nothing", '$contains("ab", $states.input.a)', {}),
    Deviation("null as nothing", "$reverse(null)", None),
    Deviation("NaN", "$count(0 % 0)", None),
    Deviation("modulo", "-4 % 0.1", None),
    Deviation("empty arrays", "$distinct([[], []])", None),
    Deviation("object membership", '{"a": 1} in {"a": 1}', None),
]


@pytest.mark.parametrize("deviation", DEVIATIONS, ids=lambda d: f"{d.name}: {d.example}")
def test_known_deviation_still_differs(reference: Reference, deviation: Deviation) -> None:
    """Fixed in jsonata-python? Then remove the case and its docs/reference/engine.md line."""
    states = {"input": deviation.document, "context": {}}
    ours = engine(deviation.example, states)
    theirs = reference.evaluate(deviation.example, states)
    assert not ours.agrees(theirs)
    assert deviation.covers(deviation.example, ours, theirs), (ours, theirs)


def corpus() -> list[str]:
    """Every expression of the engine's JSONata tests and golden machines that the
    reference can run (Step Functions' added functions are the engine's own)."""
    found: set[str] = set()
    for path in CORPUS_FILES:
        for match in EXPRESSION.finditer(path.read_text(encoding="utf-8")):
            text = (
                match.group(1).encode().decode("unicode_escape")
                if path.suffix == ".json"
                else match.group(1)
            )
            if not any(f"{name}(" in text for name in ADDED_FUNCTIONS) and "$eval(" not in text:
                found.add(text)
    return sorted(found)


def test_whole_numbers_read_from_json_are_written_as_javascript_does(
    reference: Reference,
) -> None:
    """Was a disagreement: ``1.0`` in a payload is written ``1`` (fixed in the engine)."""
    states = {"input": {"n": 10.0, "l": [-1.0, 2.5]}, "context": {}}
    expression = '$string($states.input.n) & " " & $string($states.input.l)'
    ours, theirs = engine(expression, states), reference.evaluate(expression, states)
    assert ours == theirs == Outcome("value", "10 [-1,2.5]")


def test_the_corpus_is_large_enough() -> None:
    assert len(corpus()) >= 30


@pytest.mark.parametrize("expression", corpus())
def test_corpus_expression_agrees_with_the_reference(reference: Reference, expression: str) -> None:
    ours, theirs = engine(expression, STATES), reference.evaluate(expression, STATES)
    assert ours.agrees(theirs), (ours, theirs)


# --- generated expressions over random JSON ------------------------------------------------

KEYS = ["a", "b", "c"]
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-20, 20),
    st.sampled_from(["x", "y", "ab", ""]),
    st.floats(-10, 10, allow_nan=False).map(lambda f: round(f, 2)),
)
documents = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS), children, max_size=3)
    ),
    max_leaves=12,
)
_paths = st.lists(st.sampled_from(KEYS), min_size=1, max_size=3).map(
    lambda keys: "$states.input." + ".".join(keys)
)
_literals = st.one_of(
    st.integers(-5, 5).map(str),
    st.sampled_from(
        ['"x"', '""', '"a,b"', "true", "false", "null", "[]", "[1, 2]", '{"a": 1}', "1.5", "0.1"]
    ),
)
_UNARY = [
    "$count", "$sum", "$string", "$length", "$uppercase", "$keys", "$exists", "$boolean",
    "$not", "$reverse", "$sort", "$distinct", "$max", "$min", "$number", "$abs", "$floor",
    "$join", "$type", "$append", "$merge", "$lowercase", "$trim", "$round", "$average",
    "$ceil", "$sqrt", "$spread",
]  # fmt: skip
_BINARY = ["+", "-", "*", "/", "%", "&", "=", "!=", "<", ">=", "and", "or", "in"]
_BINARY_FUNCTIONS = [
    "$substring", "$contains", "$split", "$lookup", "$zip", "$power", "$round", "$substringBefore",
    "$substringAfter", "$pad", "$formatNumber", "$string",
]  # fmt: skip


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, st.sampled_from(_BINARY), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(_UNARY), inner).map(
            lambda t: f"{t[0]}({t[1]}, {t[1]})" if t[0] == "$append" else f"{t[0]}({t[1]})"
        ),
        st.tuples(st.sampled_from(_BINARY_FUNCTIONS), inner, inner).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})"
        ),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
        st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
        st.tuples(st.sampled_from(KEYS), inner).map(lambda t: f'{{"{t[0]}": {t[1]}}}'),
        st.tuples(
            _paths, st.sampled_from(KEYS), st.sampled_from([">", "="]), st.integers(0, 3)
        ).map(lambda t: f"{t[0]}[{t[1]} {t[2]} {t[3]}]"),
        st.tuples(_paths, st.sampled_from(KEYS)).map(lambda t: f"{t[0]}.({t[1]})"),
    )


expressions = st.recursive(_paths | _literals, _extend, max_leaves=6)


def known_deviation(expression: str, ours: Outcome, theirs: Outcome) -> str | None:
    """The documented deviation a generated disagreement falls under, if any."""
    return next((d.name for d in DEVIATIONS if d.covers(expression, ours, theirs)), None)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(expression=expressions, document=documents)
def test_generated_expressions_agree_with_the_reference(
    reference: Reference, expression: str, document: Any
) -> None:
    states = {"input": document, "context": {}}
    ours, theirs = engine(expression, states), reference.evaluate(expression, states)
    if not ours.agrees(theirs):
        assert known_deviation(expression, ours, theirs), (expression, document, ours, theirs)
