"""Execution names: readable when they can be, unique and AWS-valid always."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from stepsaga.backends._naming import execution_name

AWS_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
tenants = st.from_regex(r"^[a-z0-9][a-z0-9-]{0,31}$", fullmatch=True)
cases = st.from_regex(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$", fullmatch=True)
revisions = st.integers(min_value=1, max_value=1_000_000)


def test_plain_names() -> None:
    assert execution_name("acme", "CASE-1001", 1) == "acme-CASE-1001-r1"
    assert execution_name("acme", "CASE-1001", 2) == "acme-CASE-1001-r2"


def test_dashed_tenants_cannot_collide() -> None:
    one = execution_name("a-b", "c", 1)
    other = execution_name("a", "b-c", 1)
    assert one != other
    assert other == "a-b-c-r1"
    assert re.fullmatch(r"a-b-c-r1-[0-9a-f]{12}", one)


def test_long_names_are_cut_and_hashed() -> None:
    name = execution_name("t" * 32, "C" * 48, 1_000_000)
    assert AWS_NAME.match(name)
    assert len(name) == 80


@given(tenants, cases, revisions, tenants, cases, revisions)
def test_names_are_valid_and_unique(t1: str, c1: str, r1: int, t2: str, c2: str, r2: int) -> None:
    n1, n2 = execution_name(t1, c1, r1), execution_name(t2, c2, r2)
    assert AWS_NAME.match(n1)
    assert AWS_NAME.match(n2)
    assert (n1 == n2) == ((t1, c1, r1) == (t2, c2, r2))
