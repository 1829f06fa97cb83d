"""Names shared by the CDK stack and the code that runs against it on AWS.

Kept free of CDK imports: the Lambda handlers read the environment variables below, and the
CLI's ``--backend aws`` reads the stack outputs (``describe_stacks(StackName=…)``), neither of
them with ``aws-cdk-lib`` installed.
"""

from __future__ import annotations

from typing import Final

# --- CloudFormation output keys of the stack (``OutputKey`` in DescribeStacks) ----------
OUTPUT_STATE_MACHINE_ARN: Final = "StateMachineArn"
#: The ``live`` alias of the state machine's published versions (the ingress starts there).
OUTPUT_STATE_MACHINE_ALIAS_ARN: Final = "StateMachineAliasArn"
OUTPUT_LEDGER_TABLE_NAME: Final = "LedgerTableName"
OUTPUT_RECONCILIATION_TOPIC_ARN: Final = "ReconciliationTopicArn"
#: The managed policy an operator's role attaches to run the CLI against this stack.
OUTPUT_OPERATOR_POLICY_ARN: Final = "OperatorPolicyArn"
#: The resolver's function URL: operators' decisions (resolve, stop, redrive) go there.
OUTPUT_RESOLVER_URL: Final = "ResolverUrl"
#: The S3 bucket (Object Lock) holding the write-once copy of every audit record.
OUTPUT_AUDIT_BUCKET_NAME: Final = "AuditBucketName"
#: The ingress queue approved cases are sent to, and its dead-letter queue.
OUTPUT_INGRESS_QUEUE_URL: Final = "IngressQueueUrl"
OUTPUT_INGRESS_DEAD_LETTER_QUEUE_URL: Final = "IngressDeadLetterQueueUrl"

#: The stage deployed when none is given (``-c stage=…``).
DEFAULT_STAGE: Final = "dev"

# --- environment variables the stack sets on every Lambda function ----------------------
ENV_STAGE: Final = "STEPSAGA_STAGE"
ENV_LEDGER_TABLE_NAME: Final = "STEPSAGA_LEDGER_TABLE_NAME"
ENV_RECONCILIATION_TOPIC_ARN: Final = "STEPSAGA_RECONCILIATION_TOPIC_ARN"
#: What the generic Lambda entry point (``stepsaga.lambda_handler.handler``) runs: the
#: saga (``module:attr``), which of its functions, and the project's ``Dependencies``.
ENV_SAGA: Final = "STEPSAGA_SAGA"
ENV_FUNCTION: Final = "STEPSAGA_FUNCTION"
ENV_DEPENDENCIES: Final = "STEPSAGA_DEPENDENCIES"
#: The Lambda handler of every saga function.
LAMBDA_HANDLER: Final = "stepsaga.lambdas.step"

# --- environment variables the CLI's ``--backend aws`` reads (besides the two above) -----
#: A stack whose outputs configure the CLI (what ``--stack NAME`` sets).
ENV_STACK: Final = "STEPSAGA_STACK"
#: The state machine, when the CLI is configured without a stack.
ENV_STATE_MACHINE_ARN: Final = "STEPSAGA_STATE_MACHINE_ARN"
#: Its alias cases start on (optional; without it, the unqualified state machine).
ENV_STATE_MACHINE_ALIAS_ARN: Final = "STEPSAGA_STATE_MACHINE_ALIAS_ARN"
#: The resolver's function URL (optional: without it the CLI writes decisions itself,
#: as against a stack deployed before the resolver).
ENV_RESOLVER_URL: Final = "STEPSAGA_RESOLVER_URL"
#: The audit bucket (the copier writes there; ``recon verify-audit --against-copies`` reads).
ENV_AUDIT_BUCKET: Final = "STEPSAGA_AUDIT_BUCKET"


def stack_name(stage: str = DEFAULT_STAGE, saga: str | None = None) -> str:
    """CloudFormation stack name of one saga in one stage, e.g. ``stepsaga-dev-upgrade``
    (``stepsaga.cdk.SagaStack``'s), so two sagas of a stage coexist; without a saga, the
    stage prefix ``stepsaga-dev``."""
    return f"stepsaga-{stage}" if saga is None else f"stepsaga-{stage}-{saga}"


def state_machine_name(saga_name: str, stage: str = DEFAULT_STAGE) -> str:
    """Physical state machine name on AWS: the saga's name prefixed by the stage, so two
    stages can live in one account and region (names are unique per account and region)."""
    return f"{stage}-{saga_name}"
