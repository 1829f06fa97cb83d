"""Extra writes commit with the claim and the outcome, on both stores (seed 000's session)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepsaga.errors import (
    ConditionFailedError,
    InvalidInputError,
    OutcomeUnknownError,
)
from stepsaga.ledger import Ledger, Status
from stepsaga.ledger._models import Record
from stepsaga.ledger._writes import LIMITS, ExtraWrite, Writes, absent, equals, present
from tests.framework.conformance.ledger.helpers import Counter, make_action

SESSION = ("TENANT#acme#SESSION#s1", "META")


def cursor_after(record: Record) -> list[ExtraWrite]:
    """The session moves from cursor 0 to 1 and names the tool's result."""
    return [
        ExtraWrite(
            *SESSION,
            {"cursor": 1, "last": str((record.result or {}).get("refund_id"))},
            equals("cursor", 0),
        )
    ]


def start_session(ledger: Ledger) -> None:
    ledger.write([ExtraWrite(*SESSION, {"cursor": 0}, absent())])


def test_the_outcome_and_the_session_cursor_commit_together_and_a_replay_writes_nothing(
    ledger: Ledger,
) -> None:
    start_session(ledger)
    effect = Counter({"refund_id": "RF-1"})
    writes = Writes(with_outcome=cursor_after)
    assert ledger.perform(make_action(), effect, writes=writes) == {"refund_id": "RF-1"}
    assert ledger.get_extra(*SESSION) == {"cursor": 1, "last": "RF-1"}
    # The duplicate delivery replays; its writes (whose condition would now fail) never run.
    assert ledger.perform(make_action(), effect, writes=writes) == {"refund_id": "RF-1"}
    assert effect.calls == 1
    assert ledger.get_extra(*SESSION) == {"cursor": 1, "last": "RF-1"}


def test_claim_writes_commit_with_the_first_claim_and_the_budget_debit(ledger: Ledger) -> None:
    ledger.set_budget("acme", 100)
    pending = ExtraWrite("TENANT#acme#SESSION#s1", "TOOL#refund", {"state": "pending"}, absent())
    claim = ledger.claim(make_action(cost=30), writes=[pending])
    assert not isinstance(claim, Exception)
    assert ledger.get_extra("TENANT#acme#SESSION#s1", "TOOL#refund") == {"state": "pending"}
    assert ledger.budget("acme") == 70


def test_a_claim_whose_condition_fails_writes_nothing_not_even_the_debit(ledger: Ledger) -> None:
    ledger.set_budget("acme", 100)
    start_session(ledger)
    stale = ExtraWrite(*SESSION, {"cursor": 8}, equals("cursor", 7))
    with pytest.raises(ConditionFailedError, match="extra write 0") as caught:
        ledger.perform(make_action(cost=30), Counter(), writes=Writes(with_claim=[stale]))
    assert caught.value.data["pk"] == SESSION[0]
    assert ledger.get(make_action().key) is None
    assert ledger.budget("acme") == 100
    assert ledger.get_extra(*SESSION) == {"cursor": 0}


def test_an_outcome_whose_condition_fails_goes_to_reconciliation_with_the_result(
    ledger: Ledger,
) -> None:
    ledger.write([ExtraWrite(*SESSION, {"cursor": 5}, absent())])  # the session moved on
    with pytest.raises(OutcomeUnknownError, match="reconciliation"):
        ledger.perform(make_action(), Counter(), writes=Writes(with_outcome=cursor_after))
    record = ledger.get(make_action().key)
    assert record is not None
    assert record.status is Status.UNKNOWN
    assert record.error is not None
    assert record.error["outcome"] == "COMPLETED"
    assert record.error["result"] == {"refund_id": "RF-1"}
    assert ledger.get_extra(*SESSION) == {"cursor": 5}


def test_a_refused_effect_records_failed_with_its_outcome_writes(ledger: Ledger) -> None:
    from stepsaga.errors import BusinessRejectedError

    def refuse(_claim: object) -> dict[str, Any]:
        raise BusinessRejectedError("card closed")

    def stamp(record: Record) -> list[ExtraWrite]:
        return [ExtraWrite(*SESSION, {"last_status": record.status.value})]

    with pytest.raises(BusinessRejectedError):
        ledger.perform(make_action(), refuse, writes=Writes(with_outcome=stamp))
    assert ledger.get_extra(*SESSION) == {"last_status": "FAILED"}


def test_the_transaction_limits_are_the_same_on_both_stores(ledger: Ledger) -> None:
    room = LIMITS.items - 3  # the record, the budget and the case's latest revision
    fits = [ExtraWrite("SESSION#s1", f"ITEM#{i}", {"n": i}) for i in range(room)]
    ledger.perform(make_action(), Counter(), writes=Writes(with_claim=fits))
    assert ledger.get_extra("SESSION#s1", f"ITEM#{room - 1}") == {"n": room - 1}
    too_many = [*fits, ExtraWrite("SESSION#s1", "ITEM#last", {"n": 0})]
    with pytest.raises(InvalidInputError, match=r"98 extra writes .* at most 97"):
        Writes(with_claim=too_many)
    big = "x" * (LIMITS.item_bytes // 2)
    heavy = [ExtraWrite("SESSION#s1", f"BIG#{i}", {"blob": big}) for i in range(20)]
    with pytest.raises(InvalidInputError, match="bytes of extra writes exceed"):
        Writes(with_outcome=heavy)
    with pytest.raises(InvalidInputError, match="an item holds at most"):
        Writes(with_claim=[ExtraWrite("SESSION#s1", "HUGE", {"blob": big * 3})])


def test_limits_reached_only_after_the_effect_leave_the_record_unknown(ledger: Ledger) -> None:
    def explode(record: Record) -> list[ExtraWrite]:
        return [ExtraWrite("SESSION#s1", f"I#{i}", {"n": i}) for i in range(LIMITS.items)]

    with pytest.raises(OutcomeUnknownError):
        ledger.perform(make_action(), Counter(), writes=Writes(with_outcome=explode))
    record = ledger.get(make_action().key)
    assert record is not None
    assert record.status is Status.UNKNOWN
    assert ledger.get_extra("SESSION#s1", "I#0") is None


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: ExtraWrite("ACTION#acme:CASE-1001:r1:refund_payment", "ACTION", {"x": 1}),
            "keeps",
        ),
        # An audit record or a case pointer is never a step's to forge.
        (lambda: ExtraWrite("AUDIT#rec-1", "RESOLUTION", {"outcome": "applied"}), "keeps"),
        (lambda: ExtraWrite("CASE#CASE-1001", "acme#000001", {"x": 1}), "keeps"),
        (lambda: ExtraWrite("S#1", "M", {"pk": "x"}), "attribute 'pk'"),
        (lambda: ExtraWrite("S#1", "M", {"ratio": 0.5}), "not float"),  # type: ignore[dict-item]
        (lambda: ExtraWrite("S#1", "M"), "sets nothing and checks nothing"),
        (lambda: Writes(with_claim=[ExtraWrite("S", "M", {"a": 1})] * 2), "written twice"),
    ],
)
def test_bad_writes_are_refused_in_one_line_naming_writes(build: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message) as caught:
        build()
    assert caught.value.data["field"] == "writes"


def test_a_pure_check_commits_nothing_but_guards_the_claim(ledger: Ledger) -> None:
    guard = ExtraWrite(*SESSION, condition=present())
    with pytest.raises(ConditionFailedError):
        ledger.perform(make_action(), Counter(), writes=Writes(with_claim=[guard]))
    start_session(ledger)
    ledger.perform(make_action(), Counter(), writes=Writes(with_claim=[guard]))
    assert ledger.get_extra(*SESSION) == {"cursor": 0}


_SCALARS = st.one_of(st.text(max_size=20), st.integers(-(10**12), 10**12), st.booleans(), st.none())


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.dictionaries(st.sampled_from(["a", "b", "c"]), _SCALARS, min_size=1),
    second=st.dictionaries(st.sampled_from(["a", "b", "c"]), _SCALARS, min_size=1),
)
def test_both_stores_merge_attributes_alike_and_none_removes(
    ledger: Ledger, first: dict[str, Any], second: dict[str, Any]
) -> None:
    pk = f"S#{abs(hash((tuple(first.items()), tuple(second.items()))))}"
    ledger.write([ExtraWrite(pk, "M", first)])
    ledger.write([ExtraWrite(pk, "M", second)])
    merged = {k: v for k, v in {**first, **second}.items() if v is not None}
    stored = ledger.get_extra(pk, "M")
    assert stored == merged
    # types survive: True is not 1
    assert {k: type(v) for k, v in (stored or {}).items()} == {
        k: type(v) for k, v in merged.items()
    }
