"""JSONPath as ASL uses it: reference paths, the JSONPath of ``.$`` fields, variables.

Why our own for the common case: names, quoted names, array indexes and the ``*`` wildcard
are all a reference path can hold; a small compiled evaluator is exact about which node is
meant, fast on the hot path, and can *set* a node (``ResultPath``). Everything else a
``.$`` field may hold (filters ``[?(@.p > 1)]``, slices ``[1:3]``, unions ``[0,2]``,
recursive descent ``..``) is handed to the maintained ``jsonpath-ng`` (its ``ext`` dialect,
close to the Jayway JsonPath AWS runs); such a path yields the list of matches, as on AWS.

* A **reference path** (``InputPath``, ``OutputPath``, ``ResultPath``, Choice ``Variable``,
  ``…Path`` fields) identifies one node: ``$``, ``$.a.b``, ``$['a b']``, ``$.items[0]``.
* A **JSONPath** (``Parameters``/``ResultSelector``/``Assign`` values of ``.$`` keys) may
  also use ``*`` and the ``jsonpath-ng`` syntax; it yields the list of matches.
* ``$$`` starts a path into the context object, ``$name`` one into the variable ``name``
  (``Assign``), instead of the input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_NAME = re.compile(r"[^.\[\]\s'\"()?@,:]+")
_INDEX = re.compile(r"\[(-?\d+)\]")
#: A variable's name, as AWS allows it: a letter or ``_``, then letters, digits, ``_``.
VARIABLE_NAME = re.compile(r"[^\W\d]\w*")
_QUOTED = re.compile(r"""\[(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\]""")


class PathSyntaxError(ValueError):
    """A path the engine cannot parse or does not implement; the message says which part."""


class PathNotFoundError(LookupError):
    """The path names a node the document does not have."""


@dataclass(frozen=True)
class Step:
    kind: str  # "key" | "index" | "wild"
    key: str = ""
    index: int = 0


@dataclass(frozen=True)
class Path:
    """A compiled path. ``context`` paths (``$$…``) read the context object."""

    text: str
    steps: tuple[Step, ...]
    context: bool
    definite: bool  # no wildcard: exactly one node
    variable: str | None = None  # ``$name…``: a path into that variable's value
    query: Any = None  # a compiled jsonpath-ng expression, for the syntax ``steps`` lack

    def get(self, document: Any) -> Any:
        """The node (or, for a path with a wildcard, the list of matches)."""
        if self.query is not None:
            return [match.value for match in self.query.find(document)]
        if self.definite:
            node = document
            for step in self.steps:
                node = _step(node, step, self.text)
            return node
        nodes = [document]
        for step in self.steps:
            if step.kind == "wild":
                nodes = [child for node in nodes for child in _children(node)]
            else:
                nodes = [n for n in (_try_step(node, step) for node in nodes) if n is not _MISSING]
        return nodes

    def exists(self, document: Any) -> bool:
        try:
            self.get(document)
        except PathNotFoundError:
            return False
        return True

    def set(self, document: Any, value: Any) -> Any:
        """A copy of ``document`` with ``value`` at this path, creating missing objects.

        Only the containers along the path are copied, so the original (which may also be
        ``$$.Execution.Input`` or another state's input) is never changed.
        """
        if not self.steps:
            return value
        return _set(document, self.steps, value, self.text)


_MISSING = object()


def _step(node: Any, step: Step, text: str) -> Any:
    found = _try_step(node, step)
    if found is _MISSING:
        raise PathNotFoundError(text)
    return found


def _try_step(node: Any, step: Step) -> Any:
    if step.kind == "key":
        if isinstance(node, Mapping) and step.key in node:
            return node[step.key]
        return _MISSING
    if isinstance(node, list) and -len(node) <= step.index < len(node):
        return node[step.index]
    return _MISSING


def _children(node: Any) -> list[Any]:
    if isinstance(node, Mapping):
        return list(node.values())
    if isinstance(node, list):
        return list(node)
    return []


def _set(node: Any, steps: tuple[Step, ...], value: Any, text: str) -> Any:
    step, rest = steps[0], steps[1:]
    if step.kind == "key":
        if node is None or not isinstance(node, Mapping):
            raise PathNotFoundError(text)
        copy = dict(node)
        child = copy.get(step.key, _MISSING)
        if rest:
            child = {} if child is _MISSING or child is None else child
            copy[step.key] = _set(child, rest, value, text)
        else:
            copy[step.key] = value
        return copy
    if not isinstance(node, list) or not -len(node) <= step.index < len(node):
        raise PathNotFoundError(text)
    items = list(node)
    items[step.index] = _set(items[step.index], rest, value, text) if rest else value
    return items


@lru_cache(maxsize=4096)
def parse(text: str, *, reference: bool = True) -> Path:
    """Compile a path. ``reference=True`` refuses anything that could match several nodes."""
    if not isinstance(text, str) or not text.startswith("$"):
        raise PathSyntaxError(f"{text!r} is not a JSONPath (it must start with '$')")
    context = text.startswith("$$")
    pos = 2 if context else 1
    variable = None
    if not context:
        named = VARIABLE_NAME.match(text, 1)
        if named is not None:
            variable, pos = named.group(0), named.end()
    try:
        steps = _steps(text, pos, reference)
    except PathSyntaxError:
        if reference:
            raise
        return _extended(text, pos, context, variable)
    definite = all(step.kind != "wild" for step in steps)
    return Path(text, tuple(steps), context, definite, variable)


def _extended(text: str, pos: int, context: bool, variable: str | None) -> Path:
    """A path beyond the reference syntax, compiled by jsonpath-ng (root renamed ``$``)."""
    from jsonpath_ng.exceptions import JSONPathError
    from jsonpath_ng.ext.parser import parse as parse_extended

    try:
        query = parse_extended("$" + text[pos:])
    except (JSONPathError, ValueError) as exc:
        raise PathSyntaxError(f"{text!r}: not a JSONPath ({exc})") from None
    return Path(text, (), context, False, variable, query)


def _steps(text: str, pos: int, reference: bool) -> list[Step]:
    steps: list[Step] = []
    while pos < len(text):
        rest = text[pos:]
        if rest.startswith(".."):
            raise PathSyntaxError(
                f"{text!r}: recursive descent '..' is not allowed in a reference path"
            )
        if rest.startswith(".*") or rest.startswith("[*]"):
            if reference:
                raise PathSyntaxError(f"{text!r}: a reference path cannot use the wildcard '*'")
            steps.append(Step("wild"))
            pos += 2 if rest.startswith(".*") else 3
            continue
        if rest.startswith("."):
            match = _NAME.match(text, pos + 1)
            if match is None:
                raise PathSyntaxError(f"{text!r}: expected a name at position {pos + 1}")
            steps.append(Step("key", key=match.group(0)))
            pos = match.end()
            continue
        match = _INDEX.match(text, pos)
        if match is not None:
            steps.append(Step("index", index=int(match.group(1))))
            pos = match.end()
            continue
        match = _QUOTED.match(text, pos)
        if match is not None:
            raw = match.group(1) if match.group(1) is not None else match.group(2)
            steps.append(Step("key", key=re.sub(r"\\(.)", r"\1", raw)))
            pos = match.end()
            continue
        raise PathSyntaxError(
            f"{text!r}: {rest!r} is not allowed in a reference path (filters, slices and "
            "unions select several nodes)"
        )
    return steps
