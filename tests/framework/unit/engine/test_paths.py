from __future__ import annotations

from typing import Any

import pytest

from stepsaga.engine._paths import PathNotFoundError, PathSyntaxError, parse

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


@pytest.mark.parametrize("text", ["a.b", "$.a[?(@.x >", "$.a b"])
def test_what_is_not_a_jsonpath_is_refused(text: str) -> None:
    with pytest.raises(PathSyntaxError):
        parse(text, reference=False)


@pytest.mark.parametrize("text", ["$..a", "$.list[?(@.n > 1)]", "$.list[0:2]", "$.list[0,1]"])
def test_reference_paths_refuse_what_selects_several_nodes(text: str) -> None:
    with pytest.raises(PathSyntaxError, match="reference path"):
        parse(text)


ITEMS: dict[str, Any] = {
    "items": [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 5}, {"sku": "C", "qty": 9}]
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # AWS's documented examples run on Jayway JsonPath: filters, slices, unions, '..'
        ("$.items[?(@.qty > 2)].sku", ["B", "C"]),
        ("$.items[?(@.sku == 'A')]", [{"sku": "A", "qty": 1}]),
        ("$.items[1:]", ITEMS["items"][1:]),
        ("$.items[:2].sku", ["A", "B"]),
        ("$.items[-1:].sku", ["C"]),
        ("$.items[0,2].qty", [1, 9]),
        ("$..sku", ["A", "B", "C"]),
        ("$.items[?(@.qty > 100)]", []),
    ],
)
def test_payload_paths_take_filters_slices_unions_and_descent(text: str, expected: Any) -> None:
    assert parse(text, reference=False).get(ITEMS) == expected


def test_a_negative_index_reads_from_the_end() -> None:
    assert parse("$.items[-1].sku").get(ITEMS) == "C"
    with pytest.raises(PathNotFoundError):
        parse("$.items[-4]").get(ITEMS)


def test_variable_paths_name_the_variable_and_address_inside_it() -> None:
    path = parse("$order.lines[0]")
    assert (path.variable, path.context) == ("order", False)
    assert path.get({"lines": ["x"]}) == "x"
    assert parse("$_x").variable == "_x"
    assert parse("$.x").variable is None
    extended = parse("$order.lines[?(@ == 'x')]", reference=False)
    assert extended.variable == "order"
    assert extended.get({"lines": ["x", "y"]}) == ["x"]


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
