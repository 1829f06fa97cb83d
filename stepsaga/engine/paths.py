"""JSONPath as ASL uses it: reference paths and the small JSONPath subset of ``.$`` fields.

Why our own: ASL needs only names, quoted names, array indexes and the ``*`` wildcard; a
small compiled evaluator is exact about which node is meant, fast on the hot path, and lets
the loader refuse what it does not implement (filters, recursive descent, slices) naming
the field instead of guessing.

* A **reference path** (``InputPath``, ``OutputPath``, ``ResultPath``, Choice ``Variable``,
  ``…Path`` fields) identifies one node: ``$``, ``$.a.b``, ``$['a b']``, ``$.items[0]``.
* A **JSONPath** (``Parameters``/``ResultSelector`` values of ``.$`` keys) may also use
  ``*``; a path with a wildcard yields the list of matches, as AWS does.
* ``$$`` starts a path into the context object instead of the input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_NAME = re.compile(r"[^.\[\]\s'\"()?@,:]+")
_INDEX = re.compile(r"\[(\d+)\]")
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

    def get(self, document: Any) -> Any:
        """The node (or, for a path with a wildcard, the list of matches)."""
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
    if isinstance(node, list) and 0 <= step.index < len(node):
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
    if not isinstance(node, list) or not 0 <= step.index < len(node):
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
    steps: list[Step] = []
    while pos < len(text):
        rest = text[pos:]
        if rest.startswith(".."):
            raise PathSyntaxError(f"{text!r}: recursive descent '..' is not supported")
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
            f"{text!r}: unsupported syntax at {rest!r} (filters, slices, unions and "
            "negative indexes are not implemented)"
        )
    definite = all(step.kind != "wild" for step in steps)
    return Path(text=text, steps=tuple(steps), context=context, definite=definite)
