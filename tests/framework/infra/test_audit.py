"""The append-only audit in the template: the ledger's stream, the copier, the locked bucket."""

from __future__ import annotations

import json

from aws_cdk.assertions import Match

from stepsaga._aws.audit_copy import AUDIT_COPY_HANDLER, ENV_AUDIT_RETENTION_DAYS
from stepsaga.cdk._settings import StageSettings
from tests.framework.infra.conftest import Synthesized


def test_the_ledger_streams_new_images(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::DynamoDB::Table", {"StreamSpecification": {"StreamViewType": "NEW_IMAGE"}}
    )


def test_the_bucket_locks_every_version_in_compliance_mode(synthesized: Synthesized) -> None:
    days = StageSettings.for_stage("dev").audit_retention_days
    (bucket,) = synthesized.resources("AWS::S3::Bucket").values()
    properties = bucket["Properties"]
    assert properties["ObjectLockEnabled"] is True
    assert properties["ObjectLockConfiguration"] == {
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": days}},
    }
    assert properties["VersioningConfiguration"] == {"Status": "Enabled"}
    assert properties["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["DeletionPolicy"] == "Retain"


def test_only_audit_items_invoke_the_copier(synthesized: Synthesized) -> None:
    (copier_id,) = (
        logical_id
        for logical_id, f in synthesized.resources("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == AUDIT_COPY_HANDLER
    )
    copier = synthesized.resources("AWS::Lambda::Function")[copier_id]["Properties"]
    assert copier["Environment"]["Variables"][ENV_AUDIT_RETENTION_DAYS] == "1"
    # The stream invokes the released version (the copier's live alias), never $LATEST.
    (mapping,) = (
        m["Properties"]
        for m in synthesized.resources("AWS::Lambda::EventSourceMapping").values()
        if synthesized.is_live_alias(m["Properties"]["FunctionName"], copier_id)
    )
    assert "StreamArn" in json.dumps(mapping["EventSourceArn"])
    assert mapping["MaximumRetryAttempts"] == -1
    (pattern,) = mapping["FilterCriteria"]["Filters"]
    assert json.loads(pattern["Pattern"]) == {
        "dynamodb": {"Keys": {"pk": {"S": [{"prefix": "AUDIT#"}]}}}
    }


def test_the_copier_writes_only_locked_copies(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Sid": "WriteOnceCopies",
                                "Action": ["s3:PutObject", "s3:PutObjectRetention"],
                            }
                        )
                    ]
                )
            }
        },
    )
    writes = [
        statement
        for policy in synthesized.resources("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if any(str(a).startswith("s3:") for a in statement["Action"])
    ]
    assert [s["Sid"] for s in writes] == ["WriteOnceCopies"]
    assert not any("s3:Delete" in json.dumps(s["Action"]) for s in writes)
