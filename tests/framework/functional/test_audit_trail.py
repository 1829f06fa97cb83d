"""The audit chain on both ledgers, ``recon verify-audit``, and the write-once S3 copy.

Items are resolved the real way (the local CLI on SQLite; the resolver on moto's DynamoDB),
then records are tampered with as someone with raw write access to the store would, and
``verify-audit`` must name the item and the kind of break, exiting non-zero.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from stepsaga._aws import audit_copy
from stepsaga._aws.audit_copy import AuditCopier, object_key
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.backends import ReconOutcome
from stepsaga.ledger._audit import genesis, seal, sealed_hash
from stepsaga.ledger._models import ResolutionAudit
from stepsaga.ledger._table import AUDIT_PREFIX, AUDIT_SORT
from tests.framework.functional.aws_support import REGION, TABLE, FakeAws, fake_aws, run_locally
from tests.framework.functional.cli_support import EXAMPLES, cli, write_case
from tests.framework.functional.grants_support import Calls, calls
from tests.framework.functional.resolver_support import RESOLVER_URL, Deployed, stack
from tests.framework.functional.test_aws_cli import aws_cli

__all__ = ["calls", "stack"]  # the fixtures

UNVERIFIABLE = EXAMPLES / "faults-shipment-unverifiable.json"
NOW = datetime(2026, 12, 2, tzinfo=UTC)


def _resolved_locally(home: StateHome, tmp_path: Path) -> str:
    local = run_locally(home, write_case(tmp_path), UNVERIFIABLE)
    item_id: str = local.view["open_items"][0]
    args = ("--outcome", "applied", "--by", "ops@acme.example", "--note", "label seen")
    assert cli(home, "recon", "resolve", item_id, *args).code == 0
    return item_id


def _stored(conn: sqlite3.Connection, item_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT record FROM audit WHERE item_id = ?", (item_id,)).fetchone()
    record: dict[str, Any] = json.loads(row[0])
    return record


def _verify(home: StateHome) -> tuple[int, dict[str, Any]]:
    result = cli(home, "recon", "verify-audit", "--json")
    return result.code, result.json()


def test_a_resolution_is_sealed_to_its_item_and_verifies(home: StateHome, tmp_path: Path) -> None:
    item_id = _resolved_locally(home, tmp_path)
    code, report = _verify(home)
    assert (code, report) == (0, {"checked": 1, "breaks": [], "unsealed": []})
    with sqlite3.connect(home.ledger_path) as conn:
        (record,) = conn.execute(
            "SELECT record FROM audit WHERE item_id = ?", (item_id,)
        ).fetchone()
    stored = json.loads(record)
    assert stored["previous"] == genesis(item_id)
    audit = ResolutionAudit.from_dict(stored)
    assert stored["hash"] == sealed_hash(audit, genesis(item_id))


def test_verification_names_a_rewritten_record_on_sqlite(home: StateHome, tmp_path: Path) -> None:
    item_id = _resolved_locally(home, tmp_path)
    with sqlite3.connect(home.ledger_path) as conn:
        stored = _stored(conn, item_id)
        decider = {**stored["deciders"][0], "note": "someone else's reason"}
        forged = json.dumps({**stored, "deciders": [decider]})
        conn.execute("UPDATE audit SET record = ? WHERE item_id = ?", (forged, item_id))

    code, report = _verify(home)

    assert code == 1
    assert report["breaks"] == [
        {
            "item_id": item_id,
            "kind": "rewritten",
            "detail": "its content does not match its hash (changed after)",
        }
    ]
    text = cli(home, "recon", "verify-audit")
    assert text.code == 1
    assert f"BREAK {item_id} rewritten" in text.out


# --- DynamoDB (moto), through the resolver ------------------------------------------------


@pytest.fixture
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


def _resolved_on_aws(stack: Deployed, home: StateHome, tmp_path: Path) -> str:
    local = run_locally(home, write_case(tmp_path), UNVERIFIABLE)
    stack.aws.copy_ledger(local.records, [replace(i, task_token=None) for i in local.items])
    item_id: str = local.view["open_items"][0]
    with stack.operator(stack.add("stepsaga-operator", "alice")):
        stack.backend().recon_resolve(item_id, ReconOutcome.APPLIED, None, "label seen")
    return item_id


def _env(aws: FakeAws) -> dict[str, str]:
    return {
        "STEPSAGA_STATE_MACHINE_ARN": aws.state_machine_arn,
        "STEPSAGA_LEDGER_TABLE_NAME": TABLE,
        "STEPSAGA_RESOLVER_URL": RESOLVER_URL,
        "AWS_REGION": REGION,
    }


def _audit_item(aws: FakeAws, item_id: str) -> dict[str, Any]:
    key = {"pk": {"S": AUDIT_PREFIX + item_id}, "sk": {"S": AUDIT_SORT}}
    item: dict[str, Any] = aws.ddb.get_item(TableName=TABLE, Key=key)["Item"]
    return item


def _rewrite(aws: FakeAws, item_id: str, changes: dict[str, Any]) -> dict[str, Any]:
    """Put the audit item back with its JSON record changed (and, if asked, resealed)."""
    item = _audit_item(aws, item_id)
    record = {**json.loads(item["record"]["S"]), **changes}
    aws.ddb.put_item(TableName=TABLE, Item={**item, "record": {"S": json.dumps(record)}})
    return record


def test_verification_on_dynamodb_names_each_kind_of_break(
    stack: Deployed, home: StateHome, tmp_path: Path
) -> None:
    item_id = _resolved_on_aws(stack, home, tmp_path)
    clean = aws_cli(_env(stack.aws), "recon", "verify-audit", "--json")
    assert (clean.code, clean.json()["breaks"]) == (0, [])

    # Rewritten without resealing: the hash no longer matches.
    _rewrite(stack.aws, item_id, {"outcome": "not_applied"})
    broken = aws_cli(_env(stack.aws), "recon", "verify-audit", "--json")
    assert broken.code == 1
    assert [(b["item_id"], b["kind"]) for b in broken.json()["breaks"]] == [(item_id, "rewritten")]

    # Resealed by a forger: the record is whole, but contradicts its item.
    forged = ResolutionAudit.from_dict(_rewrite(stack.aws, item_id, {"outcome": "applied"}))
    resealed = seal(replace(forged, deciders=(replace(forged.deciders[0], by="mallory"),)))
    _rewrite(stack.aws, item_id, resealed.to_dict())
    broken = aws_cli(_env(stack.aws), "recon", "verify-audit", "--json")
    assert [(b["item_id"], b["kind"]) for b in broken.json()["breaks"]] == [
        (item_id, "contradicted")
    ]

    # Deleted: the resolved item has no record.
    key = {"pk": {"S": AUDIT_PREFIX + item_id}, "sk": {"S": AUDIT_SORT}}
    stack.aws.ddb.delete_item(TableName=TABLE, Key=key)
    broken = aws_cli(_env(stack.aws), "recon", "verify-audit", "--json")
    assert [(b["item_id"], b["kind"]) for b in broken.json()["breaks"]] == [(item_id, "missing")]


# --- the stream copy into an Object Lock bucket (moto S3) -----------------------------------


def _stream_event(image: dict[str, Any], name: str = "INSERT") -> dict[str, Any]:
    keys = {"pk": image["pk"], "sk": image["sk"]}
    return {"Records": [{"eventName": name, "dynamodb": {"Keys": keys, "NewImage": image}}]}


def test_the_stream_copy_is_locked_in_compliance_mode_and_a_rewrite_keeps_the_original(
    stack: Deployed, home: StateHome, tmp_path: Path
) -> None:
    item_id = _resolved_on_aws(stack, home, tmp_path)
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="audit", ObjectLockEnabledForBucket=True)
    now = datetime(2026, 12, 2, tzinfo=UTC)
    copier = AuditCopier(s3=s3, bucket="audit", retention_days=30, clock=ManualClock(now))
    original = _audit_item(stack.aws, item_id)
    # Another item's write on the stream (the filter lets only audit items through; the
    # copier skips anything else too).
    other = {"pk": {"S": "ACTION#acme:CASE-1001:r1:x"}, "sk": {"S": "ACTION"}}

    assert copier.handle(_stream_event(original)) == {"copied": 1}
    assert copier.handle(_stream_event(other)) == {"copied": 0}

    key = object_key(AUDIT_PREFIX + item_id, AUDIT_SORT)
    (first,) = s3.list_object_versions(Bucket="audit", Prefix=key)["Versions"]
    head = s3.head_object(Bucket="audit", Key=key, VersionId=first["VersionId"])
    assert head["ObjectLockMode"] == "COMPLIANCE"
    assert head["ObjectLockRetainUntilDate"] == now + timedelta(days=30)
    with pytest.raises(ClientError):
        s3.delete_object(Bucket="audit", Key=key, VersionId=first["VersionId"])

    # A rewrite of the audit item arrives as a new version; the original stays, locked.
    rewritten = {**original, "outcome": {"S": "not_applied"}}
    copier.handle(_stream_event(rewritten, "MODIFY"))
    versions = s3.list_object_versions(Bucket="audit", Prefix=key)["Versions"]
    assert len(versions) == 2
    kept = s3.get_object(Bucket="audit", Key=key, VersionId=first["VersionId"])
    assert json.loads(kept["Body"].read()) == original


def test_the_copiers_entry_point_builds_from_its_environment(
    calls: Calls,
    stack: Deployed,
    home: StateHome,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It copies from the stream's event alone: no ledger call (its role has no ledger
    grant, ``FunctionAccess()`` in ``stepsaga.cdk._audit``)."""
    item_id = _resolved_on_aws(stack, home, tmp_path)
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="audit-copies", ObjectLockEnabledForBucket=True)
    monkeypatch.setattr(audit_copy, "_copier", None)
    monkeypatch.setenv(audit_copy.ENV_AUDIT_BUCKET, "audit-copies")
    monkeypatch.setenv(audit_copy.ENV_AUDIT_RETENTION_DAYS, "7")
    monkeypatch.setenv("AWS_REGION", REGION)

    event = _stream_event(_audit_item(stack.aws, item_id))
    with calls.role("copier"):
        assert audit_copy.handler(event, None) == {"copied": 1}
    assert not calls.table.get("copier")
    assert not calls.index.get("copier")
    key = object_key(AUDIT_PREFIX + item_id, AUDIT_SORT)
    assert s3.head_object(Bucket="audit-copies", Key=key)["ObjectLockMode"] == "COMPLIANCE"


def test_a_resealed_forgery_is_caught_by_its_write_once_copy(
    stack: Deployed, home: StateHome, tmp_path: Path
) -> None:
    """A forger with raw table access rewrites the note and recomputes the hash: the record
    is whole and agrees with its item, so only the locked copy tells the truth."""
    item_id = _resolved_on_aws(stack, home, tmp_path)
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="audit-copies", ObjectLockEnabledForBucket=True)
    copier = AuditCopier(s3=s3, bucket="audit-copies", retention_days=1, clock=ManualClock(NOW))
    copier.handle(_stream_event(_audit_item(stack.aws, item_id)))
    env = {**_env(stack.aws), "STEPSAGA_AUDIT_BUCKET": "audit-copies"}
    clean = aws_cli(env, "recon", "verify-audit", "--against-copies", "--json")
    assert (clean.code, clean.json()["breaks"]) == (0, [])

    forged = ResolutionAudit.from_dict(json.loads(_audit_item(stack.aws, item_id)["record"]["S"]))
    note = replace(forged.deciders[0], note="the customer asked for it")
    _rewrite(stack.aws, item_id, seal(replace(forged, deciders=(note,))).to_dict())

    assert aws_cli(env, "recon", "verify-audit", "--json").code == 0  # whole, and agrees
    caught = aws_cli(env, "recon", "verify-audit", "--against-copies", "--json")
    assert caught.code == 1
    assert [(b["item_id"], b["kind"]) for b in caught.json()["breaks"]] == [(item_id, "differs")]


def test_write_once_copies_are_an_aws_option(home: StateHome, tmp_path: Path) -> None:
    _resolved_locally(home, tmp_path)
    refused = cli(home, "recon", "verify-audit", "--against-copies")
    assert refused.code == 2
    assert "--against-copies" in refused.err
