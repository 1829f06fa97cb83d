"""The append-only audit: the ledger's stream → a small function → an Object Lock bucket.

The bucket is versioned with Object Lock on, default retention in **compliance** mode for
``StageSettings.audit_retention_days`` (the function also sets it on each object): within
it no version can be deleted or overwritten by anyone, root included. It is encrypted (S3
managed keys), TLS-only, private, and keeps its own server access log (locked too). The
function (``stepsaga._aws.audit_copy``) reads the stream through an event filter on ``AUDIT#``
keys, so other writes never invoke it; its role may only put objects (with their
retention) into that bucket and read the stream.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from cdk_nag import NagSuppressions
from constructs import Construct

from stepsaga._aws import audit_copy
from stepsaga.cdk._access import FunctionAccess
from stepsaga.cdk._function import SagaFunction, SharedResources
from stepsaga.ledger._table import AUDIT_PREFIX, PARTITION_KEY

__all__ = ["AuditTrail"]


class AuditTrail(Construct):
    """``bucket`` (Object Lock, compliance) and ``copier`` (the stream function)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        saga: str,
        shared: SharedResources,
        retention_days: int,
    ) -> None:
        super().__init__(scope, construct_id)
        # The bucket's own access log is granted by a bucket policy, not an ACL (this
        # construct's choice, whatever the app's feature flags).
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            versioned=True,
            object_lock_enabled=True,
            object_lock_default_retention=s3.ObjectLockRetention.compliance(
                Duration.days(retention_days)
            ),
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,  # no ACLs
            # Its own access log, locked as long as the copies: who read or tried to change
            # a copy is kept beside it.
            server_access_logs_prefix="access-logs/",
            # Locked versions outlive the stack whatever happens: CloudFormation could not
            # delete them anyway.
            removal_policy=RemovalPolicy.RETAIN,
        )
        made = SagaFunction(
            self,
            "Copier",
            handler=audit_copy.AUDIT_COPY_HANDLER,
            access=FunctionAccess(),  # no ledger item access: the stream only
            shared=shared,
            description=f"{saga}: copies each audit record to the write-once bucket",
            extra_environment={
                audit_copy.ENV_AUDIT_BUCKET: self.bucket.bucket_name,
                audit_copy.ENV_AUDIT_RETENTION_DAYS: str(retention_days),
            },
        )
        self.copier: lambda_.Function = made.function
        self.alias: lambda_.Alias = made.alias
        made.role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="WriteOnceCopies",
                actions=["s3:PutObject", "s3:PutObjectRetention"],
                resources=[self.bucket.arn_for_objects("audit/*")],
            )
        )
        # The released version (the alias), never $LATEST, like every trigger.
        self.alias.add_event_source(
            sources.DynamoEventSource(
                shared.ledger.table,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=100,
                retry_attempts=-1,  # an audit copy is never skipped: retry until it lands
                bisect_batch_on_error=True,
                filters=[
                    lambda_.FilterCriteria.filter(
                        {
                            "dynamodb": {
                                "Keys": {
                                    PARTITION_KEY: {
                                        "S": lambda_.FilterRule.begins_with(AUDIT_PREFIX)
                                    }
                                }
                            }
                        }
                    )
                ],
            )
        )
        NagSuppressions.add_resource_suppressions(
            made.role,
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": (
                        "Objects under audit/ of this stack's own audit bucket (one per audit "
                        "record), and the ledger's stream ARN CDK grants for the trigger."
                    ),
                    "appliesTo": [
                        {"regex": "/^Resource::<.*AuditBucket.*\\.Arn>/audit/\\*$/g"},
                    ],
                }
            ],
            apply_to_children=True,
        )
