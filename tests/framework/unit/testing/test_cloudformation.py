"""The intrinsic functions ``moto_deployment`` resolves in a synthesized template."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepsaga.errors import TemplateError
from stepsaga.testing._cloudformation import Resolver, substitute


def resolver() -> Resolver:
    r = Resolver(region="eu-west-1", account="111122223333", stack_name="shop")
    r.refs["Table"] = "shop-Table"
    r.attributes[("Fn", "Arn")] = "arn:aws:lambda:eu-west-1:111122223333:function:shop-Fn"
    return r


def test_ref_and_get_att_give_what_the_deployment_recorded() -> None:
    r = resolver()
    assert r.resolve({"Ref": "Table"}) == "shop-Table"
    assert r.resolve({"Fn::GetAtt": ["Fn", "Arn"]}) == r.attributes[("Fn", "Arn")]
    assert r.resolve({"Fn::GetAtt": "Fn.Arn"}) == r.attributes[("Fn", "Arn")]


def test_pseudo_parameters() -> None:
    joined = {
        "Fn::Join": [
            ":",
            [
                {"Ref": "AWS::Partition"},
                {"Ref": "AWS::Region"},
                {"Ref": "AWS::AccountId"},
                {"Ref": "AWS::StackName"},
            ],
        ]
    }
    assert resolver().resolve(joined) == "aws:eu-west-1:111122223333:shop"


def test_sub_with_and_without_variables() -> None:
    r = resolver()
    assert r.resolve({"Fn::Sub": "${AWS::Region}/${Table}/${Fn.Arn}"}) == (
        "eu-west-1/shop-Table/arn:aws:lambda:eu-west-1:111122223333:function:shop-Fn"
    )
    assert r.resolve({"Fn::Sub": ["${A}-${Table}", {"A": {"Ref": "AWS::Region"}}]}) == (
        "eu-west-1-shop-Table"
    )


def test_select_and_split() -> None:
    value = {"Fn::Select": [1, {"Fn::Split": ["-", {"Ref": "Table"}]}]}
    assert resolver().resolve(value) == "Table"


def test_values_inside_lists_and_maps_are_resolved() -> None:
    value = {"Variables": {"T": {"Ref": "Table"}, "N": "1"}, "L": [{"Ref": "Table"}, 2]}
    assert resolver().resolve(value) == {
        "Variables": {"T": "shop-Table", "N": "1"},
        "L": ["shop-Table", 2],
    }


def test_a_resource_not_deployed_resolves_to_a_placeholder_naming_it() -> None:
    r = resolver()
    assert r.resolve({"Ref": "Key"}) == "Key"
    assert r.resolve({"Fn::GetAtt": ["Key", "Arn"]}) == "arn:aws:moto:eu-west-1:111122223333:Key"


def test_an_unsupported_intrinsic_is_named() -> None:
    with pytest.raises(TemplateError, match="Fn::ImportValue is not supported"):
        resolver().resolve({"Fn::ImportValue": "x"})


names = st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,20}", fullmatch=True)


@given(st.dictionaries(names, st.text(alphabet="abc:/-$", max_size=20), max_size=5))
def test_substitute_replaces_every_placeholder(substitutions: dict[str, str]) -> None:
    definition = "|".join("${" + key + "}" for key in substitutions)
    assert substitute(definition, substitutions) == "|".join(substitutions.values())
