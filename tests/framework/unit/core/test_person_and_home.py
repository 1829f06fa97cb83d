"""A person's identity (``approved_by``, ``--by``) and the state home: one rule each."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepsaga._model.person import MAX_LENGTH, MIN_LENGTH, REFUSED_CATEGORIES, check_person
from stepsaga._project.home import StateHome
from stepsaga._reconciliation import resolve
from stepsaga.errors import InvalidInputError
from stepsaga.ledger import open_ledger


@pytest.mark.parametrize("who", ["ops", "ops@acme.example", "Zoë Müller", "o" * MAX_LENGTH])
def test_identities_people_have_are_accepted(who: str) -> None:
    assert check_person(f"  {who} ", "by") == who


@pytest.mark.parametrize(
    "who",
    [
        "",
        "x",
        "ab",
        "  ab  ",
        "o" * (MAX_LENGTH + 1),
        "a\nb c",
        "abc\x00",
        "ab\u202ec",
        "a\u200bbc",
    ],
)
def test_other_identities_are_one_line_naming_the_field(who: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        check_person(who, "--by")
    assert caught.value.message.startswith("--by: ")
    assert "\n" not in caught.value.message


@given(st.text(max_size=300))
def test_an_accepted_identity_is_printable_and_within_bounds(text: str) -> None:
    try:
        who = check_person(text, "by")
    except InvalidInputError as exc:
        refusal = exc.message
    else:
        assert MIN_LENGTH <= len(who) <= MAX_LENGTH
        assert who == who.strip()
        assert not any(unicodedata.category(c) in REFUSED_CATEGORIES for c in who)
        assert "\n" not in who
        return
    assert "\n" not in refusal


def test_the_reconciliation_resolver_uses_the_same_rule(tmp_path: Path) -> None:
    with (
        open_ledger(f"sqlite:///{tmp_path / 'l.db'}") as ledger,
        pytest.raises(InvalidInputError, match=r"^by: String should have at least 3"),
    ):
        resolve(ledger, "rec-1", "applied", "x", "note", send_task_success=None)


def test_a_home_that_is_a_file_is_refused_when_named(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(InvalidInputError, match="is a file, not a folder"):
        StateHome(file)
    with pytest.raises(InvalidInputError, match="lies below a file"):
        StateHome(file / "home")
    with pytest.raises(InvalidInputError, match="is a file"):
        StateHome.from_env({"STEPSAGA_HOME": str(file)})
    assert file.read_text() == "x"


def test_a_missing_home_is_fine_and_created_on_ensure(tmp_path: Path) -> None:
    home = StateHome(tmp_path / "a" / "b")
    assert not home.root.exists()
    assert home.ensure().root.is_dir()
