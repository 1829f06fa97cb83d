"""The compiled machine in JSONata: the same states, transitions and data, other fields.

``Saga(query_language="JSONata")`` compiles as usual (JSONPath, so the graph check and the
feature budget stay one) and then rewrites each state field for field, the way AWS's
"converting from JSONPath to JSONata" guide does it:

* ``Parameters`` → ``Arguments`` (each ``"k.$": "$.a"`` becomes ``"k": "{% … %}"``);
* ``InputPath``/``ResultSelector``/``ResultPath``/``OutputPath`` → one ``Output``
  expression over ``$states.input`` and ``$states.result`` (``ResultPath "$.results.X"``
  is a nested ``$merge``, so missing objects are created as JSONPath does);
* a ``Catch``'s ``ResultPath`` → its ``Output`` over ``$states.errorOutput``;
* Choice ``Variable`` + operator → ``Condition`` (typed as JSONPath compares: a value of the
  wrong type is false, never an error);
* ``…Path`` fields (``SecondsPath``, ``ItemsPath``, ``ErrorPath``…) → the plain field with
  an expression; ``$$.x`` → ``$states.context.x``; ``$$.Map.Item.Value`` likewise.

What the compiler never emits (intrinsic functions, wildcards, filters) is refused with a
``ValueError`` naming the state and field, rather than translated approximately.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from stepsaga.engine._definition import JSONPATH_ONLY_FIELDS

QUERY_LANGUAGE = "JSONata"
_INPUT = "$states.input"
_RESULT = "$states.result"
_ERROR = "$states.errorOutput"
_CONTEXT = "$states.context"
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|(\[\*\])")
_ALL = "[*]"  # a wildcard step: every element of an array
_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
#: Fields the translation writes anew rather than copying: the JSONPath-only ones (the
#: engine's list) and those whose JSONata form differs.
_REWRITTEN = JSONPATH_ONLY_FIELDS | {
    "ItemSelector",
    "ItemProcessor",
    "Branches",
    "Choices",
    "Catch",
    "Assign",
}


class TranslationError(ValueError):
    """A JSONPath construct this translation does not cover."""


def to_jsonata(definition: Mapping[str, Any]) -> dict[str, Any]:
    """``definition`` (JSONPath) as a ``QueryLanguage: JSONata`` machine."""
    out: dict[str, Any] = {}
    for key, value in definition.items():
        if key == "StartAt":
            out["QueryLanguage"] = QUERY_LANGUAGE
        out[key] = _machine(value) if key == "States" else value
    return out


def _machine(states: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _State(name, state).translate() for name, state in states.items()}


def _nested(machine: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _machine(v) if k == "States" else v for k, v in machine.items()}


class _State:
    def __init__(self, name: str, raw: Mapping[str, Any]) -> None:
        self.name = name
        self.raw = raw

    def fail(self, field: str, what: str) -> TranslationError:
        return TranslationError(f"state {self.name!r}, field {field!r}: {what}")

    def translate(self) -> dict[str, Any]:
        raw, kind = self.raw, self.raw["Type"]
        out = {k: v for k, v in raw.items() if k not in _REWRITTEN}
        base = self.input_base()
        assign_base = _RESULT if kind in ("Task", "Parallel", "Map") else base
        if kind == "Task":
            parameters = raw.get("Parameters", {})
            out["Arguments"] = self.json(parameters, base)
            self.set_output(out, self.combined(self.selected(_RESULT)))
        elif kind == "Pass":
            if "Parameters" in raw:
                result = self.expression(raw["Parameters"], base, "Parameters")
            elif "Result" in raw:
                result = _literal(raw["Result"])
            else:
                result = base
            assign_base = result
            self.set_output(out, self.combined(result), default=_INPUT)
        elif kind in ("Choice", "Succeed"):
            if kind == "Choice":
                out["Choices"] = [self.rule(r, i) for i, r in enumerate(raw["Choices"])]
            self.set_output(out, self.output_path(base), default=_INPUT)
        elif kind == "Wait":
            for field in ("Seconds", "Timestamp"):
                if f"{field}Path" in raw:
                    out[field] = _wrap(self.path(raw[f"{field}Path"], base, f"{field}Path"))
            self.set_output(out, self.output_path(base), default=_INPUT)
        elif kind == "Fail":
            for field in ("Error", "Cause"):
                if f"{field}Path" in raw:
                    out[field] = _wrap(self.path(raw[f"{field}Path"], _INPUT, f"{field}Path"))
        elif kind == "Parallel":
            out["Branches"] = [_nested(branch) for branch in raw["Branches"]]
            if "Parameters" in raw:
                out["Arguments"] = self.json(raw["Parameters"], base)
            self.set_output(out, self.combined(self.selected(_RESULT)))
        elif kind == "Map":
            self.map(raw, out, base)
        else:
            raise self.fail("Type", f"no JSONata translation for {kind!r} states")
        if "Assign" in raw:  # JSONPath's "$" there: the result (Task, Parallel, Map, Pass)
            out["Assign"] = self.json(raw["Assign"], assign_base)
        if "Catch" in raw:
            out["Catch"] = [self.catcher(c, i) for i, c in enumerate(raw["Catch"])]
        return _ordered(out)

    # --- data flow ------------------------------------------------------------------

    def input_base(self) -> str:
        if "InputPath" not in self.raw:
            return _INPUT
        if self.raw["InputPath"] is None:
            return "{}"
        return self.path(self.raw["InputPath"], _INPUT, "InputPath")

    def selected(self, result: str) -> str:
        if "ResultSelector" not in self.raw:
            return result
        return self.expression(self.raw["ResultSelector"], result, "ResultSelector")

    def combined(self, result: str) -> str:
        """``ResultPath`` then ``OutputPath``: the state's output as one expression."""
        path = self.raw.get("ResultPath", "$")
        merged = _INPUT if path is None else _set(_INPUT, self.steps(path, "ResultPath"), result)
        return self.output_path(merged)

    def output_path(self, document: str) -> str:
        if "OutputPath" not in self.raw:
            return document
        if self.raw["OutputPath"] is None:
            return "{}"
        steps = self.steps(self.raw["OutputPath"], "OutputPath")
        return _navigate(f"({document})" if steps else document, steps)

    def set_output(self, out: dict[str, Any], expression: str, default: str = _RESULT) -> None:
        if expression != default:
            out["Output"] = _wrap(expression)

    def catcher(self, raw: Mapping[str, Any], index: int) -> dict[str, Any]:
        field = f"Catch[{index}]"
        out = {k: v for k, v in raw.items() if k not in ("ResultPath", "Next", "Assign")}
        if "Assign" in raw:
            out["Assign"] = self.json(raw["Assign"], _ERROR)
        path = raw.get("ResultPath", "$")
        expression = (
            _INPUT
            if path is None
            else _set(_INPUT, self.steps(path, f"{field}.ResultPath"), _ERROR)
        )
        if expression != _ERROR:
            out["Output"] = _wrap(expression)
        out["Next"] = raw["Next"]
        return out

    def map(self, raw: Mapping[str, Any], out: dict[str, Any], base: str) -> None:
        processor = raw.get("ItemProcessor", raw.get("Iterator"))
        if "ItemsPath" in raw:
            out["Items"] = _wrap(self.path(raw["ItemsPath"], base, "ItemsPath"))
        elif base != _INPUT:
            out["Items"] = _wrap(base)
        selector = raw.get("ItemSelector", raw.get("Parameters"))
        if selector is not None:
            out["ItemSelector"] = self.json(selector, base)
        if "MaxConcurrencyPath" in raw:
            out["MaxConcurrency"] = _wrap(
                self.path(raw["MaxConcurrencyPath"], base, "MaxConcurrencyPath")
            )
        out["ItemProcessor"] = _nested(processor)
        self.set_output(out, self.combined(self.selected(_RESULT)))

    # --- Choice ---------------------------------------------------------------------

    def rule(self, raw: Mapping[str, Any], index: int) -> dict[str, Any]:
        field = f"Choices[{index}]"
        out: dict[str, Any] = {"Condition": _wrap(self.condition(raw, field))}
        if "Assign" in raw:
            out["Assign"] = self.json(raw["Assign"], self.input_base())
        out["Next"] = raw["Next"]
        return out

    def condition(self, rule: Mapping[str, Any], field: str) -> str:
        base = self.input_base()
        if "And" in rule or "Or" in rule:
            op = "And" if "And" in rule else "Or"
            parts = [self.condition(r, f"{field}.{op}[{i}]") for i, r in enumerate(rule[op])]
            return "(" + f" {op.lower()} ".join(parts) + ")"
        if "Not" in rule:
            return f"$not({self.condition(rule['Not'], f'{field}.Not')})"
        operators = [k for k in rule if k not in ("Variable", "Next", "Comment", "Assign")]
        if "Variable" not in rule or len(operators) != 1:
            raise self.fail(field, "a choice rule needs Variable and one operator")
        op = operators[0]
        value = self.path(rule["Variable"], base, f"{field}.Variable")
        expected = rule[op]
        if op.endswith("Path") and op != "IsPresent":
            other = self.path(expected, base, f"{field}.{op}")
            return _compare(op[: -len("Path")], value, other, self.fail(field, op))
        if op.startswith("Is"):
            return _type_test(op, value, bool(expected), self.fail(field, op))
        return _compare(op, value, _literal(expected), self.fail(field, op))

    # --- templates and paths ----------------------------------------------------------

    def json(self, template: Any, base: str) -> Any:
        """A ``Parameters``-style template as a JSON template with ``{% %}`` strings."""
        if isinstance(template, dict):
            out: dict[str, Any] = {}
            for key, value in template.items():
                if key.endswith(".$"):
                    out[key[:-2]] = _wrap(self.dynamic(value, base, key))
                else:
                    out[key] = self.json(value, base)
            return out
        if isinstance(template, list):
            return [self.json(v, base) for v in template]
        if isinstance(template, str) and template.startswith("{%"):
            return _wrap(_literal(template))  # a literal that would read as an expression
        return template

    def expression(self, template: Any, base: str, field: str) -> str:
        """A ``Parameters``-style template as one JSONata expression."""
        if isinstance(template, dict):
            parts = []
            for key, value in template.items():
                if key.endswith(".$"):
                    parts.append(f"{_literal(key[:-2])}: {self.dynamic(value, base, key)}")
                else:
                    parts.append(f"{_literal(key)}: {self.expression(value, base, field)}")
            return "{" + ", ".join(parts) + "}"
        if isinstance(template, list):
            return "[" + ", ".join(self.expression(v, base, field) for v in template) + "]"
        return _literal(template)

    def dynamic(self, value: Any, base: str, field: str) -> str:
        if not isinstance(value, str) or value.startswith("States."):
            raise self.fail(field, "intrinsic functions have no JSONata translation here")
        return self.path(value, base, field)

    def path(self, text: str, base: str, field: str) -> str:
        """A payload path as JSONata; one ``[*]`` over an array maps the rest of the path
        over its elements and keeps a list, as JSONPath does (``$map``, wrapped in ``[]``
        so one match stays a list)."""
        if text.startswith("$$"):
            document, steps = _CONTEXT, self.steps("$" + text[2:], field, wildcard=True)
        elif (variable := _VARIABLE.match(text)) is not None and not text.startswith("$."):
            document = variable.group(0)
            steps = self.steps("$" + text[variable.end() :], field, wildcard=True)
        else:
            document, steps = base, self.steps(text, field, wildcard=True)
        if _ALL not in steps:
            return _navigate(document, steps)
        split = steps.index(_ALL)
        head, rest = steps[:split], steps[split + 1 :]
        if _ALL in rest:
            raise self.fail(field, f"{text!r}: only one [*] translates")
        return f"[$map({_navigate(document, head)}, function($v) {{ {_navigate('$v', rest)} }})]"

    def steps(self, text: str, field: str, *, wildcard: bool = False) -> list[str | int]:
        if not isinstance(text, str) or not text.startswith("$"):
            raise self.fail(field, f"{text!r} is not a JSONPath")
        steps: list[str | int] = []
        pos = 1
        while pos < len(text):
            match = _SEGMENT.match(text, pos)
            if match is None or (match.group(3) and not wildcard):
                raise self.fail(field, f"{text!r}: only names, indexes and [*] translate")
            if match.group(3):
                steps.append(_ALL)
            else:
                steps.append(match.group(1) if match.group(1) else int(match.group(2)))
            pos = match.end()
        return steps


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYWORDS = frozenset({"and", "or", "in", "true", "false", "null", "function"})
#: The order fields are written in (the golden file reads like AWS's examples).
_ORDER = (
    "Type",
    "Comment",
    "QueryLanguage",
    "Resource",
    "Arguments",
    "Items",
    "ItemSelector",
    "MaxConcurrency",
    "ItemProcessor",
    "Branches",
    "Choices",
    "Default",
    "Seconds",
    "Timestamp",
    "Error",
    "Cause",
    "Output",
    "Assign",
    "TimeoutSeconds",
    "HeartbeatSeconds",
    "Retry",
    "Catch",
    "Next",
    "End",
)


def _navigate(document: str, steps: list[str | int]) -> str:
    out = document
    for step in steps:
        if isinstance(step, int):
            out += f"[{step}]"
        elif _PLAIN.fullmatch(step) and step not in _KEYWORDS:
            out += f".{step}"
        else:
            out += f".`{step}`"
    return out


def _ordered(state: dict[str, Any]) -> dict[str, Any]:
    rank = {key: i for i, key in enumerate(_ORDER)}
    return dict(sorted(state.items(), key=lambda item: rank.get(item[0], len(rank))))


def _set(document: str, steps: list[str | int], value: str) -> str:
    """``document`` with ``value`` at ``steps`` (objects along the way kept or created)."""
    if not steps:
        return value
    head, rest = steps[0], steps[1:]
    if isinstance(head, int):
        raise TranslationError("a ResultPath into an array index has no JSONata translation")
    child = _navigate(document, [head])
    return f"$merge([{document}, {{{_literal(head)}: {_set(child, rest, value)}}}])"


def _wrap(expression: str) -> str:
    return "{% " + expression + " %}"


def _literal(value: Any) -> str:
    """A JSON value as JSONata source; strings single-quoted when that needs no escape."""
    if isinstance(value, str) and "'" not in value and "\\" not in value:
        return f"'{value}'"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


_OPERATORS = {
    "Equals": "=",
    "LessThan": "<",
    "GreaterThan": ">",
    "LessThanEquals": "<=",
    "GreaterThanEquals": ">=",
}
_KINDS = {"String": "string", "Numeric": "number", "Boolean": "boolean"}


def _compare(op: str, value: str, other: str, refused: TranslationError) -> str:
    for prefix, kind in _KINDS.items():
        if op.startswith(prefix) and op[len(prefix) :] in _OPERATORS:
            symbol = _OPERATORS[op[len(prefix) :]]
            if symbol == "=":  # JSONata's = is already false across types
                return f"{value} = {other}"
            return f"($type({value}) = '{kind}' and {value} {symbol} {other})"
    raise refused


def _type_test(op: str, value: str, expected: bool, refused: TranslationError) -> str:
    tests = {
        "IsPresent": f"$exists({value})",
        "IsNull": f"($exists({value}) and $type({value}) = 'null')",
        "IsString": f"$type({value}) = 'string'",
        "IsNumeric": f"$type({value}) = 'number'",
        "IsBoolean": f"$type({value}) = 'boolean'",
    }
    if op not in tests:
        raise refused
    return tests[op] if expected else f"$not({tests[op]})"
