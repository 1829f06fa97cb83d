"""What an app tells the construct: per-stage settings and per-function configuration.

``StageSettings`` holds the generic knobs every saga deployment has (stage, protection, log
retention, concurrency, the overdue-reconciliation threshold, bundling). ``FunctionSettings``
is the app's part of one function: its environment, its secrets and the IAM grants on the
app's own resources. The framework's ledger/topic/state-machine access is not here: it is
derived from the saga (``stepsaga.cdk._access``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Final

from stepsaga._aws.auto_redrive import AutoRedrive
from stepsaga._aws.signing import SignedService
from stepsaga._project.deployment import DEFAULT_STAGE
from stepsaga.errors import DeploymentError
from stepsaga.ledger._table import GSIS
from stepsaga.ledger._writes import RESERVED_PREFIXES

if TYPE_CHECKING:
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_secretsmanager as secretsmanager
    from aws_cdk import aws_ssm as ssm

__all__ = [
    "PRODUCTION_STAGES",
    "AutoRedrive",
    "Backup",
    "BundlingMode",
    "Canary",
    "DeploymentError",
    "FunctionSettings",
    "OperatorRoleSettings",
    "SignedApi",
    "SignedService",
    "StageSettings",
]

PRODUCTION_STAGES: Final = frozenset({"prod", "production"})
#: Default Lambda timeout; below the ledger's lease, so a worker finishes (or dies) before
#: its lease can expire.
DEFAULT_FUNCTION_TIMEOUT_SECONDS: Final = 30
DEFAULT_MEMORY_MB: Final = 512
#: Audit copies of a production stage are kept ten years; other stages one day (a
#: compliance-mode lock cannot be lifted, so a test stack's bucket empties a day later).
PRODUCTION_AUDIT_RETENTION_DAYS: Final = 3653
MAX_AUDIT_RETENTION_DAYS: Final = 36500
#: CloudWatch Logs accepts only these retention periods (days).
LOG_RETENTION_DAYS: Final = (1, 3, 5, 7, 14, 30, 60, 90, 180, 365, 731, 1827, 3653)
#: A Standard execution runs at most a year; the default bounds a case at 30 days (a
#: person's decision waits 7 days by default, and a redrive continues within 14).
MAX_EXECUTION_TIMEOUT_SECONDS: Final = 365 * 24 * 3600
DEFAULT_EXECUTION_TIMEOUT_SECONDS: Final = 30 * 24 * 3600
#: Lambda's bounds on an SQS event source's ``MaximumConcurrency``.
MIN_QUEUE_CONCURRENCY: Final = 2
MAX_QUEUE_CONCURRENCY: Final = 1000
_STAGE: Final = re.compile(r"^[a-z][a-z0-9-]{0,19}$")
_ENV_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: AWS's tag rules: keys 1-128, values 0-256 characters of letters, digits, spaces and
#: ``_ . : / = + - @``; the ``aws:`` prefix is AWS's own.
_TAG_KEY: Final = re.compile(r"^[\w .:/=+\-@]{1,128}$")
_TAG_VALUE: Final = re.compile(r"^[\w .:/=+\-@]{0,256}$")
#: Set by the construct on every function; an app may not override them.
_RESERVED_PREFIXES: Final = (
    "STEPSAGA_SAGA",
    "STEPSAGA_FUNCTION",
    "STEPSAGA_DEPENDENCIES",
    "STEPSAGA_SECRET_SOURCES",
    "STEPSAGA_SIGNED_APIS",
)


class BundlingMode(StrEnum):
    """How the Lambda asset is built (always without Docker)."""

    #: The project's code + stepsaga + ``pip install --platform manylinux2014_aarch64 …``.
    PIP = "pip"
    #: The project's code + stepsaga only: fast and offline, for synth-only checks. Not
    #: deployable (the runtime dependencies are missing).
    SOURCES = "sources"


#: The session name an IAM user must assume the operator role under: their own user name.
OWN_USER_NAME: Final = "${aws:username}"
_ACCOUNT_OR_ARN: Final = re.compile(r"^\d{12}$|^arn:aws[a-z-]*:iam::\d{12}:\S+$")


@dataclass(frozen=True)
class OperatorRoleSettings:
    """An operator role the stack creates, its session names bound to the person.

    ``trusted``: who may assume it (an account id, or an IAM principal ARN). The trust
    policy requires ``sts:RoleSessionName`` = ``session_name`` (default ``${aws:username}``,
    the assuming IAM user's own name); the resolver takes the session name as the person
    deciding, so this is what makes dual control two *people* (docs/reference/operating-aws.md).
    """

    trusted: str
    session_name: str = OWN_USER_NAME

    def __post_init__(self) -> None:
        if not _ACCOUNT_OR_ARN.match(self.trusted):
            raise DeploymentError(
                f"operator_role.trusted {self.trusted!r}: a 12-digit account id or an IAM ARN"
            )
        if not self.session_name.strip():
            raise DeploymentError("operator_role.session_name: must not be empty")


@dataclass(frozen=True)
class Canary:
    """How a release reaches each function's ``live`` alias (CodeDeploy): ``percent`` of
    invocations first, the rest ``minutes`` later, rolled back if an alarm of the
    deployment fires meanwhile (``stepsaga.cdk._releases``)."""

    percent: int = 10
    minutes: int = 5

    def __post_init__(self) -> None:
        if not 1 <= self.percent <= 99:
            raise DeploymentError(f"canary percent {self.percent}: 1 to 99")
        if not 1 <= self.minutes <= 2880:
            raise DeploymentError(f"canary minutes {self.minutes}: 1 to 2880 (CodeDeploy's)")


@dataclass(frozen=True)
class Backup:
    """An AWS Backup plan for the ledger table (besides its point-in-time recovery): a
    daily backup at ``hour_utc``, kept ``retention_days``."""

    retention_days: int = 35
    hour_utc: int = 3

    def __post_init__(self) -> None:
        if not 1 <= self.retention_days <= 36500:
            raise DeploymentError(f"backup retention_days {self.retention_days}: 1 to 36500")
        if not 0 <= self.hour_utc <= 23:
            raise DeploymentError(f"backup hour_utc {self.hour_utc}: 0 to 23")


@dataclass(frozen=True)
class StageSettings:
    """Per-stage settings of one saga deployment (defaults: the ``dev`` stage)."""

    stage: str = DEFAULT_STAGE
    #: Table deletion protection; when on, table, key and log groups are RETAINed.
    deletion_protection: bool = False
    log_retention_days: int = 30
    #: Reserved concurrency of each saga function (None: unreserved);
    #: ``FunctionSettings.reserved_concurrency`` overrides it per function.
    reserved_concurrency: int | None = None
    #: The most concurrent starters the ingress queue drives (its event source's
    #: ``MaximumConcurrency``): a backlog after an outage cannot take the account's Lambda
    #: concurrency from the saga's own functions.
    ingress_max_concurrency: int = 5
    #: The execution-level ``TimeoutSeconds`` of the state machine: a case that runs (or
    #: waits) longer ends ``TIMED_OUT``, which the automatic redrive picks up.
    execution_timeout_seconds: int = DEFAULT_EXECUTION_TIMEOUT_SECONDS
    #: Tags on every resource of the deployment (besides ``stepsaga:saga`` and
    #: ``stepsaga:stage``, which it always has).
    tags: Mapping[str, str] = field(default_factory=dict)
    #: Canary releases of the functions' ``live`` aliases with alarm rollback (CodeDeploy);
    #: None: a release moves each alias at once.
    canary: Canary | None = field(default_factory=Canary)
    #: A daily AWS Backup plan of the ledger table; None (the default): point-in-time
    #: recovery only (docs/reference/operating-aws.md, "Restoring the ledger").
    backup: Backup | None = None
    #: Age at which an OPEN reconciliation item raises the overdue alarm.
    overdue_reconciliation_hours: int = 24
    bundling: BundlingMode = BundlingMode.PIP
    #: The SQS ingress of approved cases and its starter (``stepsaga.cdk._ingress``).
    ingress: bool = True
    #: The automatic, bounded redrive of technical failures (``stepsaga.cdk._auto_redrive``);
    #: None turns it off (every technical failure then waits for ``stepsaga redrive``).
    auto_redrive: AutoRedrive | None = field(default_factory=AutoRedrive)
    #: How many of the ledger's indexes (``stepsaga.ledger._table.GSIS``, in order) the
    #: table declares; None: all. CloudFormation adds one GSI per stack update, so a stack
    #: deployed with fewer steps up one deploy at a time (docs/reference/lookups.md).
    ledger_indexes: int | None = None
    #: An operator role with session names bound to the person (None: bring your own role,
    #: attach ``OperatorPolicyArn``, and bind its session names the same way).
    operator_role: OperatorRoleSettings | None = None
    #: Days each audit record's write-once copy is locked (S3 Object Lock, compliance mode:
    #: nobody, root included, can delete or overwrite it before then).
    audit_retention_days: int = 1

    def __post_init__(self) -> None:
        if not _STAGE.match(self.stage):
            raise DeploymentError(
                f"stage {self.stage!r}: lowercase letters, digits and '-', starting with a "
                "letter, at most 20 characters"
            )
        if self.log_retention_days not in LOG_RETENTION_DAYS:
            allowed = ", ".join(str(d) for d in LOG_RETENTION_DAYS)
            raise DeploymentError(f"log_retention_days {self.log_retention_days}: one of {allowed}")
        if self.reserved_concurrency is not None and self.reserved_concurrency < 1:
            raise DeploymentError(
                "reserved_concurrency: at least 1 (0 would disable the functions)"
            )
        if not MIN_QUEUE_CONCURRENCY <= self.ingress_max_concurrency <= MAX_QUEUE_CONCURRENCY:
            raise DeploymentError(
                f"ingress_max_concurrency {self.ingress_max_concurrency}: "
                f"{MIN_QUEUE_CONCURRENCY} to {MAX_QUEUE_CONCURRENCY} (Lambda's bounds)"
            )
        if not 60 <= self.execution_timeout_seconds <= MAX_EXECUTION_TIMEOUT_SECONDS:
            raise DeploymentError(
                f"execution_timeout_seconds {self.execution_timeout_seconds}: 60 to "
                f"{MAX_EXECUTION_TIMEOUT_SECONDS} (a year, Step Functions' limit)"
            )
        for key, value in self.tags.items():
            if not _TAG_KEY.match(key) or key.lower().startswith("aws:"):
                raise DeploymentError(
                    f"tag {key!r}: 1 to 128 letters, digits, spaces or _.:/=+-@, not aws:"
                )
            if not _TAG_VALUE.match(value):
                raise DeploymentError(
                    f"tag {key} value {value!r}: at most 256 letters, digits, spaces or _.:/=+-@"
                )
        if self.overdue_reconciliation_hours < 1:
            raise DeploymentError("overdue_reconciliation_hours: at least 1")
        if not 1 <= self.audit_retention_days <= MAX_AUDIT_RETENTION_DAYS:
            raise DeploymentError(
                f"audit_retention_days {self.audit_retention_days}: 1 to {MAX_AUDIT_RETENTION_DAYS}"
            )
        if self.ledger_indexes is not None and not 1 <= self.ledger_indexes <= len(GSIS):
            raise DeploymentError(
                f"ledger_indexes {self.ledger_indexes}: 1 to {len(GSIS)}, or unset for all"
            )

    @classmethod
    def for_stage(cls, stage: str = DEFAULT_STAGE, **overrides: object) -> StageSettings:
        """The stage's defaults (production: protected, a year of logs), then overrides."""
        production = stage in PRODUCTION_STAGES
        values: dict[str, object] = {
            "deletion_protection": production,
            "log_retention_days": 365 if production else 30,
            "audit_retention_days": PRODUCTION_AUDIT_RETENTION_DAYS if production else 1,
        }
        values.update(overrides)
        return cls(stage=stage, **values)  # type: ignore[arg-type]

    @property
    def is_production(self) -> bool:
        return self.stage in PRODUCTION_STAGES


@dataclass(frozen=True)
class SignedApi:
    """An IAM-authorized API of the app that a function calls signed with its own role
    (``stepsaga._aws.signing``): API Gateway (``execute-api``) or a Lambda function URL.

    ``url`` is the base URL the variable holds; ``resources`` what the role may invoke,
    exactly: ``execute-api`` ARNs (``api.arn_for_execute_api("POST", "/refunds", "prod")``)
    or, for a function URL, the function's ARN (``SignedApi.function_url(url)``).
    ``region``: where the API lives (default: the function's own region).
    """

    url: str
    resources: tuple[str, ...]
    service: SignedService = SignedService.EXECUTE_API
    region: str | None = None

    def __post_init__(self) -> None:
        if not self.resources:
            raise DeploymentError(f"signed API {self.url}: name the resources it may invoke")
        if "${Token[" not in self.url and not self.url.startswith("https://"):
            raise DeploymentError(f"signed API {self.url!r}: an https:// base URL")

    @classmethod
    def function_url(cls, url: lambda_.IFunctionUrl, region: str | None = None) -> SignedApi:
        """A function URL (``AuthType.AWS_IAM``): signed for ``lambda``, invoke on its function."""
        return cls(url.url, (url.function_arn,), SignedService.LAMBDA, region)


#: Called once with the function, to grant it access to the app's own resources
#: (``table.grant_read_data(fn)``, ``queue.grant_send_messages(fn)``…).
Grant = Callable[["lambda_.Function"], None]


@dataclass(frozen=True)
class FunctionSettings:
    """The app's configuration of one function (or, as ``defaults``, of every function).

    * ``environment`` — variables the app's handlers and ``Dependencies.aws`` read.
    * ``secrets`` — variable name → Secrets Manager secret: the variable holds the secret's
      ARN and the function may read that secret (``grant_read``), nothing else.
    * ``parameters`` — variable name → SSM parameter (a ``SecureString`` for credentials):
      the variable holds the parameter's name, and the function may read that parameter.
      Both are read in ``Dependencies.aws(ctx)`` with ``ctx.secrets.get(variable)``
      (``stepsaga._aws.secrets``); no value is ever put in the environment.
    * ``signed_apis`` — variable name → ``SignedApi``: the variable holds the API's base
      URL, the role may invoke exactly that API, and ``Dependencies.aws(ctx)`` builds a
      signed client with ``ctx.signed_apis.client(variable)``.
    * ``grant`` — grants on the app's own resources.
    * ``timeout_seconds`` / ``memory_mb`` — unset: the defaults (30 s, 512 MB).
    * ``reserved_concurrency`` — unset: ``StageSettings.reserved_concurrency``.
    * ``ledger_write_prefixes`` — the ``pk`` prefixes of the ledger items the app's own
      extra writes touch (``Writes``/``ExtraWrite``: a session cursor, a quota), e.g.
      ``("SESSION#",)``. The function may ``UpdateItem``/``ConditionCheckItem`` items whose
      partition key starts with one of them (``dynamodb:LeadingKeys``), beside the
      framework's own kinds; a prefix that is, or could match, one of the ledger's own
      (``ACTION#``, ``BUDGET#``, ``RECON#``, ``AUDIT#``, ``CASE#``) is refused.

    Per-function settings are merged over the defaults: environments, secrets and signed
    APIs key by key, write prefixes together,
    both grants apply.
    """

    environment: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, secretsmanager.ISecret] = field(default_factory=dict)
    parameters: Mapping[str, ssm.IParameter] = field(default_factory=dict)
    signed_apis: Mapping[str, SignedApi] = field(default_factory=dict)
    grant: Grant | None = None
    timeout_seconds: int | None = None
    memory_mb: int | None = None
    reserved_concurrency: int | None = None
    ledger_write_prefixes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for prefix in self.ledger_write_prefixes:
            _check_write_prefix(prefix)
        named = [*self.environment, *self.secrets, *self.parameters, *self.signed_apis]
        for name in named:
            if not _ENV_NAME.match(name):
                raise DeploymentError(f"environment variable {name!r}: not a valid name")
            if name.startswith(_RESERVED_PREFIXES):
                raise DeploymentError(f"environment variable {name}: set by the construct")
        both = sorted({n for n in named if named.count(n) > 1})
        if both:
            raise DeploymentError(
                f"{', '.join(both)}: named twice (variable, secret, parameter, signed API)"
            )
        if self.timeout_seconds is not None and not 1 <= self.timeout_seconds <= 900:
            raise DeploymentError("timeout_seconds: between 1 and 900 (Lambda's limit)")
        if self.memory_mb is not None and not 128 <= self.memory_mb <= 10240:
            raise DeploymentError("memory_mb: between 128 and 10240")
        if self.reserved_concurrency is not None and self.reserved_concurrency < 1:
            raise DeploymentError("reserved_concurrency: at least 1 (0 would disable the function)")

    def over(self, defaults: FunctionSettings) -> FunctionSettings:
        """These settings merged over ``defaults``."""
        grants = [g for g in (defaults.grant, self.grant) if g is not None]

        def grant_all(function: lambda_.Function) -> None:
            for grant in grants:
                grant(function)

        return FunctionSettings(
            environment={**defaults.environment, **self.environment},
            secrets={**defaults.secrets, **self.secrets},
            parameters={**defaults.parameters, **self.parameters},
            signed_apis={**defaults.signed_apis, **self.signed_apis},
            grant=grant_all if grants else None,
            timeout_seconds=self.timeout_seconds or defaults.timeout_seconds,
            memory_mb=self.memory_mb or defaults.memory_mb,
            reserved_concurrency=self.reserved_concurrency or defaults.reserved_concurrency,
            ledger_write_prefixes=tuple(
                dict.fromkeys([*defaults.ledger_write_prefixes, *self.ledger_write_prefixes])
            ),
        )


#: What a ``ledger_write_prefixes`` entry may hold: it becomes ``<prefix>*`` in a
#: ``StringLike`` condition, so no wildcard of its own.
_WRITE_PREFIX = re.compile(r"^[A-Za-z0-9_\-.:#]{1,64}$")


def _check_write_prefix(prefix: object) -> None:
    """A prefix the app's own items may have: not the ledger's, and matching none of its
    keys (``"A"`` would grant ``ACTION#…``)."""
    if not isinstance(prefix, str) or not _WRITE_PREFIX.match(prefix):
        raise DeploymentError(
            f"ledger_write_prefixes {prefix!r}: 1 to 64 letters, digits or _-.:# (no wildcard)"
        )
    clash = [own for own in RESERVED_PREFIXES if own.startswith(prefix) or prefix.startswith(own)]
    if clash:
        raise DeploymentError(
            f"ledger_write_prefixes {prefix!r}: would reach the ledger's own {clash[0]} items"
        )
