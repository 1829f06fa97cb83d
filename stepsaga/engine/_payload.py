"""Payload templates: ``Parameters`` and ``ResultSelector``.

A template is compiled once at load: keys ending in ``.$`` become a path into the input, a
path into the context object (``$$…``) or an intrinsic call; everything else is copied as
is. A template with nothing dynamic is returned as the same (never mutated) object.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stepsaga.engine import _intrinsics as intrinsics
from stepsaga.engine._errors import describe, runtime_error
from stepsaga.engine._paths import Path, PathNotFoundError, PathSyntaxError, parse
from stepsaga.errors import TemplateError

_ABSENT: Any = object()


@dataclass(frozen=True)
class Env(intrinsics.Resolver):
    """What a template reads: the input (a JSONPath ``$``; JSONata's ``$states.input``), the
    context object, the variables in scope, and for JSONata ``$states.result`` /
    ``$states.errorOutput`` when the state has them."""

    input: Any
    context: Any
    rng: Any
    variables: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    result: Any = _ABSENT
    error_output: Any = _ABSENT

    def resolve(self, path: Path) -> Any:
        return path.get(document(path, self.input, self.context, self.variables))

    def states(self) -> dict[str, Any]:
        """JSONata's ``$states``."""
        states = {"input": self.input, "context": self.context}
        if self.result is not _ABSENT:
            states["result"] = self.result
        if self.error_output is not _ABSENT:
            states["errorOutput"] = self.error_output
        return states


def document(path: Path, data: Any, context: Any, variables: Mapping[str, Any]) -> Any:
    """The document ``path`` starts from: the context object, a variable, or ``data``."""
    if path.context:
        return context
    if path.variable is not None:
        if path.variable not in variables:
            raise runtime_error(
                f"The variable '${path.variable}' in the path '{path.text}' is not defined"
            )
        return variables[path.variable]
    return data


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
            f"a '.$' field needs a path or intrinsic function, got {describe(expression)}",
            field=field,
        )
    if intrinsics.looks_like_call(expression):
        try:
            call = intrinsics.parse_call(expression)
        except ValueError as exc:
            raise TemplateError(str(exc), field=field) from None
        return call.evaluate
    try:
        path = parse(expression, reference=False)
    except PathSyntaxError as exc:
        raise TemplateError(str(exc), field=field) from None
    return _path_reader(path, key)


def _path_reader(path: Path, key: str) -> Evaluator:
    def read(env: Env) -> Any:
        try:
            return env.resolve(path)
        except PathNotFoundError:
            source = document(path, env.input, env.context, env.variables)
            raise runtime_error(
                f"The JSONPath '{path.text}' specified for the field '{key}' could not be "
                f"found in the input '{describe(source)}'"
            ) from None

    return read
