from __future__ import annotations

from typing import Any

import pytest

from stepsaga.engine.paths import PathNotFoundError, PathSyntaxError, parse

DOC: dict[str, Any] = {"a": {"b": [10, {"c": "x"}]}, "odd key": 1, "list": [{"n": 1}, {"n": 2}]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$", DOC),
        ("$.a.b[0]", 10),
        ("$.a.b[1].c", "x"),
        ("$['odd key']", 1),
        ('$["a"]["b"][1]["c"]', "x"),
    ],
)
def test_reference_paths_read_one_node(text: str, expected: object) -> None:
    assert parse(text).get(DOC) == expected


def test_missing_node_is_an_error() -> None:
    with pytest.raises(PathNotFoundError):
        parse("$.a.nope").get(DOC)
    with pytest.raises(PathNotFoundError):
        parse("$.a.b[5]").get(DOC)
    assert not parse("$.a.nope").exists(DOC)


def test_wildcards_are_only_for_payload_paths() -> None:
    with pytest.raises(PathSyntaxError, match="wildcard"):
        parse("$.list[*].n")
    assert parse("$.list[*].n", reference=False).get(DOC) == [1, 2]
    assert parse("$.a.*", reference=False).get(DOC) == [DOC["a"]["b"]]


@pytest.mark.parametrize("text", ["a.b", "$..a", "$.a[?(@.x)]", "$.a[0:2]", "$.a[-1]"])
def test_unsupported_syntax_is_refused(text: str) -> None:
    with pytest.raises(PathSyntaxError):
        parse(text, reference=False)


def test_context_paths() -> None:
    path = parse("$$.Execution.Id")
    assert path.context
    assert path.get({"Execution": {"Id": "arn"}}) == "arn"


def test_set_creates_objects_and_never_mutates_the_original() -> None:
    original = {"a": {"keep": 1}}
    updated = parse("$.a.b.c").set(original, 5)
    assert updated == {"a": {"keep": 1, "b": {"c": 5}}}
    assert original == {"a": {"keep": 1}}
    assert parse("$").set(original, 7) == 7


def test_set_replaces_list_items_but_cannot_descend_into_scalars() -> None:
    assert parse("$.l[1]").set({"l": [1, 2]}, 9) == {"l": [1, 9]}
    with pytest.raises(PathNotFoundError):
        parse("$.a.b").set({"a": "text"}, 1)
    with pytest.raises(PathNotFoundError):
        parse("$.x").set("not an object", 1)
