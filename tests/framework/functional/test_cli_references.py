"""A name that is also another tenant's case id: refused (exit 2) listing both, on both
backends; ``--tenant`` or the ARN says which."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepsaga._project.home import StateHome
from stepsaga.errors import InvalidInputError
from tests.framework.functional.aws_support import fake_aws
from tests.framework.functional.cli_support import cli, write_case

LOOKALIKE = "acme-CASE-1-r1"  # acme's execution name, and evil's case id


def test_local_status_refuses_a_lookalike_listing_both(home: StateHome, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "e").mkdir()
    acme = cli(home, "start", str(write_case(tmp_path / "a", "CASE-1")), "--json").json()
    evil = cli(
        home, "start", str(write_case(tmp_path / "e", LOOKALIKE, tenant_id="evil")), "--json"
    ).json()
    assert acme["name"] == LOOKALIKE
    for command in (["status"], ["history"], ["redrive"], ["graph", "--execution"]):
        result = cli(home, *command, LOOKALIKE)
        assert result.code == 2, (command, result.out)
        lines = result.err.strip().splitlines()
        assert len(lines) == 1, result.err
        assert f"'{LOOKALIKE}' is ambiguous" in lines[0]
        assert acme["executionArn"] in lines[0]
        assert evil["name"] in lines[0]
    mine = cli(home, "status", LOOKALIKE, "--tenant", "acme", "--json").json()
    theirs = cli(home, "status", LOOKALIKE, "--tenant", "evil", "--json").json()
    by_arn = cli(home, "status", acme["executionArn"], "--json").json()
    assert (mine["tenant_id"], theirs["tenant_id"], by_arn["tenant_id"]) == ("acme", "evil", "acme")
    assert theirs["case_id"] == LOOKALIKE


def test_aws_status_refuses_a_lookalike_listing_both() -> None:
    with fake_aws() as aws:
        for tenant, case, name in (
            ("acme", "CASE-1", LOOKALIKE),
            ("evil", LOOKALIKE, f"evil-{LOOKALIKE}-r1"),
        ):
            data = {"tenant_id": tenant, "case_id": case, "approval": {"revision": 1}}
            assert aws.start_recorded(data) == name
        backend = aws.backend()
        with pytest.raises(InvalidInputError, match="is ambiguous") as caught:
            backend.status(LOOKALIKE)
        assert aws.execution_arn(LOOKALIKE) in caught.value.message
        assert f"evil-{LOOKALIKE}-r1" in caught.value.message
        assert backend.status(LOOKALIKE, tenant="acme").tenant_id == "acme"
        assert backend.status(LOOKALIKE, tenant="evil").case_id == LOOKALIKE
        assert backend.status(aws.execution_arn(LOOKALIKE)).tenant_id == "acme"
