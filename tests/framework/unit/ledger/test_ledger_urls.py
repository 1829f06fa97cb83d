"""``open_ledger`` URLs: what is accepted and the one-line errors for what is not."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from stepsaga.errors import InvalidInputError
from stepsaga.ledger import open_ledger
from stepsaga.ledger._connect import DynamoDBUrl, SqliteUrl, parse_url
from stepsaga.ledger._dynamodb import create_table
from tests.framework.conformance.ledger.helpers import Counter, make_action


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///relative/ledger.db", SqliteUrl("relative/ledger.db")),
        ("sqlite:////abs/ledger.db", SqliteUrl("/abs/ledger.db")),
        ("sqlite:///l.db?synchronous=normal", SqliteUrl("l.db", "NORMAL")),
        ("sqlite:///l.db?busy_timeout_ms=250", SqliteUrl("l.db", "FULL", 250)),
        ("dynamodb://ledger", DynamoDBUrl("ledger")),
        (
            "dynamodb://stepsaga-ledger?region=eu-west-1&endpoint_url=http://localhost:8000",
            DynamoDBUrl("stepsaga-ledger", "eu-west-1", "http://localhost:8000"),
        ),
    ],
)
def test_accepted_urls(url: str, expected: object) -> None:
    assert parse_url(url) == expected


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("", "empty"),
        ("postgres://db/ledger", "scheme must be"),
        ("ledger.db", "scheme must be"),
        ("sqlite://host/ledger.db", "sqlite:///relative/path"),
        ("sqlite:///", "sqlite:///relative/path"),
        ("sqlite:///:memory:", "in-memory"),
        ("sqlite:///l.db?synchronous=sometimes", "synchronous must be one of"),
        ("sqlite:///l.db?busy_timeout_ms=-5", "busy_timeout_ms"),
        ("sqlite:///l.db?journal=off", "unknown parameter 'journal'"),
        ("sqlite:///l.db?synchronous=FULL&synchronous=OFF", "needs one value"),
        ("dynamodb://", "dynamodb://TABLE"),
        ("dynamodb://a", "dynamodb://TABLE"),
        ("dynamodb://ledger/extra", "dynamodb://TABLE"),
        ("dynamodb://ledger?endpoint_url=localhost:8000", "endpoint_url must be"),
        ("dynamodb://ledger?regoin=eu-west-1", "unknown parameter 'regoin'"),
    ],
)
def test_rejected_urls_say_why_in_one_line(url: str, says: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        open_ledger(url)
    assert says in caught.value.message
    assert "\n" not in caught.value.message
    assert caught.value.data["field"] == "url"


def test_sqlite_url_creates_the_folder(tmp_path: Path) -> None:
    with open_ledger(f"sqlite:///{tmp_path / 'deep' / 'er' / 'l.db'}") as ledger:
        assert ledger.perform(make_action(), Counter()) == {"refund_id": "RF-1"}
    assert (tmp_path / "deep" / "er" / "l.db").exists()


def test_dynamodb_url_with_a_missing_table_is_bad_input() -> None:
    with (
        mock_aws(),
        open_ledger("dynamodb://nope?region=us-east-1") as ledger,
        pytest.raises(InvalidInputError, match="does not exist"),
    ):
        ledger.get("acme:C:r1:x")


def test_dynamodb_url_uses_boto3_defaults() -> None:
    with mock_aws():
        create_table(boto3.client("dynamodb"), "ledger")
        with open_ledger("dynamodb://ledger") as ledger:
            assert ledger.perform(make_action(), Counter()) == {"refund_id": "RF-1"}
