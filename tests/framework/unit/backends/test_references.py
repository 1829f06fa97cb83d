"""The reference rule on its own: a name never silently wins over a case id that looks
the same, whatever executions exist (``stepsaga.backends._references``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepsaga.backends._assemble import CaseIdentity
from stepsaga.backends._references import Candidate, choose
from stepsaga.errors import InvalidInputError, NotFoundError

REF = "acme-CASE-1-r1"


def _candidate(tenant: str, case: str, revision: int, arn: str) -> Candidate:
    return Candidate(arn, arn.rsplit(":", 1)[-1], CaseIdentity(tenant, case, revision))


candidates = st.builds(
    _candidate,
    st.sampled_from(["acme", "evil"]),
    st.sampled_from([REF, "CASE-1"]),
    st.integers(1, 3),
    st.uuids().map(lambda u: f"arn:aws:states:us-east-1:1:execution:s:{u}"),
)


@given(
    named=st.lists(candidates, max_size=2),
    of_case=st.lists(candidates, max_size=4),
    tenant=st.sampled_from([None, "acme", "evil"]),
)
def test_a_ref_resolves_only_when_one_reading_remains(
    named: list[Candidate], of_case: list[Candidate], tenant: str | None
) -> None:
    names = [c for c in named if tenant in (None, c.identity.tenant_id)]
    cases = [
        c for c in of_case if c.identity.case_id == REF and tenant in (None, c.identity.tenant_id)
    ]
    outcome: Candidate | Exception
    try:
        outcome = choose(REF, tenant, named=named, of_case=of_case, where="here")
    except (InvalidInputError, NotFoundError) as exc:
        outcome = exc
    if isinstance(outcome, Candidate):
        if names:
            assert (names, cases) == ([outcome], [])
        else:
            assert len({c.identity.tenant_id for c in cases}) == 1
            assert outcome.identity.revision == max(c.identity.revision for c in cases)
            assert outcome in cases
    elif isinstance(outcome, NotFoundError):
        assert (names, cases) == ([], [])
    else:
        assert "\n" not in outcome.message
        assert names or len({c.identity.tenant_id for c in cases}) > 1


def test_the_refusal_lists_every_candidate() -> None:
    acme = _candidate("acme", "CASE-1", 1, f"arn:x:execution:s:{REF}")
    evil = _candidate("evil", REF, 1, "arn:x:execution:s:evil-acme-CASE-1-r1-r1")
    with pytest.raises(InvalidInputError) as caught:
        choose(REF, None, named=[acme], of_case=[evil], where="here")
    assert caught.value.message == (
        f"'{REF}' is ambiguous: execution arn:x:execution:s:{REF} (tenant acme); case {REF} "
        "of tenant evil (execution evil-acme-CASE-1-r1-r1); pass the execution ARN or --tenant"
    )
    assert choose(REF, "acme", named=[acme], of_case=[evil], where="here") == acme
    assert choose(REF, "evil", named=[acme], of_case=[evil], where="here") == evil
