"""Payload templates: ``Parameters`` and ``ResultSelector``.

A template is compiled once at load: keys ending in ``.$`` become a path into the input, a
path into the context object (``$$…``) or an intrinsic call; everything else is copied as
is. A template with nothing dynamic is returned as the same (never mutated) object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stepsaga.engine import intrinsics
from stepsaga.engine.errors import describe, runtime_error
from stepsaga.engine.paths import Path, PathNotFoundError, PathSyntaxError, parse


class TemplateError(ValueError):
    """A template field the engine cannot compile; ``field`` is its dotted name."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Env(intrinsics.Resolver):
    """The documents a template reads: the state's effective input and the context object."""

    input: Any
    context: Any
    rng: Any

    def resolve(self, path: Path) -> Any:
        return path.get(self.context if path.context else self.input)


Evaluator = Callable[[Env], Any]


@dataclass(frozen=True)
class Template:
    evaluate: Evaluator
    static: bool


def compile_template(value: Any, field: str) -> Template:
    """Compile a template value found at ``field`` (e.g. ``Parameters``)."""
    evaluator, static = _compile(value, field)
    return Template(evaluate=evaluator, static=static)


def _compile(value: Any, field: str) -> tuple[Evaluator, bool]:
    if isinstance(value, dict):
        parts: list[tuple[str, Evaluator, bool]] = []
        for key, child in value.items():
            if key.endswith(".$"):
                name = key[:-2]
                parts.append((name, _dynamic(child, f"{field}.{key}", key), False))
            else:
                evaluator, static = _compile(child, f"{field}.{key}")
                parts.append((key, evaluator, static))
        if all(static for _, _, static in parts):
            return _constant(value), True

        def build_object(env: Env) -> Any:
            return {name: evaluator(env) for name, evaluator, _ in parts}

        return build_object, False
    if isinstance(value, list):
        items = [_compile(child, f"{field}[{i}]") for i, child in enumerate(value)]
        if all(static for _, static in items):
            return _constant(value), True

        def build_list(env: Env) -> Any:
            return [evaluator(env) for evaluator, _ in items]

        return build_list, False
    return _constant(value), True


def _constant(value: Any) -> Evaluator:
    return lambda env: value


def _dynamic(expression: Any, field: str, key: str) -> Evaluator:
    if not isinstance(expression, str):
        raise TemplateError(
            field, f"a '.$' field needs a path or intrinsic function, got {describe(expression)}"
        )
    if intrinsics.looks_like_call(expression):
        try:
            call = intrinsics.parse_call(expression)
        except ValueError as exc:
            raise TemplateError(field, str(exc)) from None
        return call.evaluate
    try:
        path = parse(expression, reference=False)
    except PathSyntaxError as exc:
        raise TemplateError(field, str(exc)) from None
    return _path_reader(path, key)


def _path_reader(path: Path, key: str) -> Evaluator:
    def read(env: Env) -> Any:
        try:
            return env.resolve(path)
        except PathNotFoundError:
            document = env.context if path.context else env.input
            raise runtime_error(
                f"The JSONPath '{path.text}' specified for the field '{key}' could not be "
                f"found in the input '{describe(document)}'"
            ) from None

    return read
