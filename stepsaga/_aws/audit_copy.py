"""The write-once copy of every audit record: DynamoDB stream → S3 with Object Lock.

The ledger table's stream (new images) invokes this function (``stepsaga._aws.audit_copy.handler``,
deployed by ``stepsaga.cdk._audit``) for the audit items only (an event filter on the
``AUDIT#`` partition keys). Each new image is written to the audit bucket under
``audit/{item_id}/{sort key}.json`` with Object Lock in **compliance** mode until now +
``STEPSAGA_AUDIT_RETENTION_DAYS``: within that time no one, the account's root included, can
delete or overwrite that version. The bucket is versioned, so a later change of the same
DynamoDB item (which nothing should make: audit items are written once) lands as a new
version beside the original, and is logged as ``rewritten``.

The object holds the item as DynamoDB returned it (typed JSON), so ``recon verify-audit``'s
chain check can be run on the copy as on the table. Logs carry the item id and the verdict
only. An S3 failure raises: the stream retries the batch (the copy is idempotent per image).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Any, Final, Protocol

from stepsaga._project.deployment import ENV_AUDIT_BUCKET
from stepsaga._util.clock import Clock, SystemClock
from stepsaga.ledger._models import ResolutionAudit
from stepsaga.ledger._table import AUDIT_PREFIX, AUDIT_SORT, PARTITION_KEY, SORT_KEY

__all__ = [
    "AUDIT_COPY_HANDLER",
    "ENV_AUDIT_BUCKET",
    "ENV_AUDIT_RETENTION_DAYS",
    "AuditCopier",
    "first_copy",
    "handler",
    "object_key",
]

ENV_AUDIT_RETENTION_DAYS: Final = "STEPSAGA_AUDIT_RETENTION_DAYS"
AUDIT_COPY_HANDLER: Final = "stepsaga.lambdas.audit_copy"


class ObjectStore(Protocol):
    """What the copier needs of a boto3 S3 client."""

    def put_object(self, **kwargs: Any) -> Mapping[str, Any]: ...


def object_key(pk: str, sk: str) -> str:
    """Where an audit item's copy lives (its item id and sort key)."""
    return f"audit/{pk.removeprefix(AUDIT_PREFIX)}/{sk}.json"


class VersionedObjects(Protocol):
    """What reading the copies needs of a boto3 S3 client."""

    def list_object_versions(self, **kwargs: Any) -> Mapping[str, Any]: ...

    def get_object(self, **kwargs: Any) -> Mapping[str, Any]: ...


def first_copy(s3: VersionedObjects, bucket: str, item_id: str) -> ResolutionAudit | None:
    """The audit record of ``item_id`` as first copied (its oldest version, locked)."""
    key = object_key(AUDIT_PREFIX + item_id, AUDIT_SORT)
    listed = s3.list_object_versions(Bucket=bucket, Prefix=key)
    versions = [v for v in listed.get("Versions", []) if v["Key"] == key]
    if not versions:
        return None
    oldest = min(versions, key=lambda v: v["LastModified"])
    body = s3.get_object(Bucket=bucket, Key=key, VersionId=oldest["VersionId"])["Body"].read()
    image = json.loads(body)
    return ResolutionAudit.from_dict(json.loads(image["record"]["S"]))


@dataclass
class AuditCopier:
    s3: ObjectStore
    bucket: str
    retention_days: int
    clock: Clock

    def handle(self, event: Mapping[str, Any]) -> dict[str, int]:
        copied = 0
        for record in event.get("Records", []):
            image = record.get("dynamodb", {}).get("NewImage")
            if not image:
                continue  # a removal (TTL never applies to audit items): nothing to copy
            pk, sk = image[PARTITION_KEY]["S"], image[SORT_KEY]["S"]
            if not pk.startswith(AUDIT_PREFIX):
                continue
            until = self.clock.now().astimezone(UTC) + timedelta(days=self.retention_days)
            self.s3.put_object(
                Bucket=self.bucket,
                Key=object_key(pk, sk),
                Body=json.dumps(image, sort_keys=True, separators=(",", ":")).encode(),
                ContentType="application/json",
                ObjectLockMode="COMPLIANCE",
                ObjectLockRetainUntilDate=until,
                ChecksumAlgorithm="SHA256",
            )
            verdict = "copied" if record.get("eventName") == "INSERT" else "rewritten"
            print(json.dumps({"audit_copy": verdict, "item": pk.removeprefix(AUDIT_PREFIX)}))
            copied += 1
        return {"copied": copied}


_copier: AuditCopier | None = None


def handler(event: Mapping[str, Any], context: object) -> dict[str, int]:
    """The stream function's entry point."""
    global _copier
    if _copier is None:
        import boto3

        from stepsaga._aws.aws_region import region_from

        _copier = AuditCopier(
            s3=boto3.client("s3", region_name=region_from(os.environ)),
            bucket=os.environ[ENV_AUDIT_BUCKET],
            retention_days=int(os.environ[ENV_AUDIT_RETENTION_DAYS]),
            clock=SystemClock(),
        )
    return _copier.handle(event)
