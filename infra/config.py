"""The reference app's settings, read from CDK context (``-c key=value`` or cdk.json).

The generic ones become ``stepsaga.cdk.StageSettings``; the service URLs and timeouts are
this app's own configuration, passed to its functions as their environment
(``FunctionSettings``), exactly as a team's app passes its own.

- ``stage`` (default ``dev``): stack ``stepsaga-<stage>-replacement-order``, state machine
  ``<stage>-replacement-order``.
- ``deletion_protection`` (default: on for ``prod``/``production``): table deletion
  protection; when on, the table, key and log groups are RETAINed when the stack goes.
- ``log_retention_days`` (default 365 in production, else 30): every log group.
- ``reserved_concurrency`` (default none): reserved concurrency of each saga function.
- ``overdue_reconciliation_hours`` (default 24): age at which an OPEN item raises an alarm.
- ``bundling`` (default ``pip``): ``sources`` skips pip (synth-only checks, offline).
- ``ledger_indexes`` (default: all): how many of the ledger table's indexes to declare,
  for upgrading a stack one index per deploy (docs/reference/lookups.md).
- ``ingress_max_concurrency`` (default 5): the most concurrent ingress starters.
- ``execution_timeout_days`` (default 30): the state machine's ``TimeoutSeconds``, in days.
- ``canary`` (default true): canary releases of the functions' aliases with alarm rollback.
- ``backup_retention_days`` (default: no backup plan): a daily AWS Backup of the ledger,
  kept that many days.
- ``tags`` (default none): tags on every resource, a JSON object
  (``-c 'tags={"team":"payments"}'``, or an object in cdk.json).
- ``inventory_url``, ``payments_url``, ``shipping_url`` (required): base URLs of the
  downstream services the saga functions call over HTTPS (``ServiceEndpoints``);
  ``allow_insecure_service_urls`` (default false) also accepts ``http://``;
  ``http_connect_timeout``, ``http_read_timeout``, ``http_write_timeout``,
  ``http_pool_timeout`` (seconds; defaults 2, 10, 5, 2).

Every problem is one ``ContextError`` whose message is one line (``python -m infra.app``
prints it and exits 2 instead of a traceback).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from constructs import Node

from services.dependencies import ENV_SERVICES, SERVICES_HTTP
from services.http.config import ENV_TIMEOUTS, ENV_URLS, HttpTimeouts
from stepsaga.cdk import Backup, BundlingMode, Canary, FunctionSettings, StageSettings
from stepsaga.errors import DeploymentError

#: Lambda timeout of every function; one HTTP call (all four phases) must fit inside it.
FUNCTION_TIMEOUT_SECONDS: Final = 30

#: Context keys of the service URLs, in the order the messages name them.
SERVICE_URL_KEYS: Final = ("inventory_url", "payments_url", "shipping_url")
ALLOW_INSECURE_KEY: Final = "allow_insecure_service_urls"
#: ``http_<phase>_timeout`` context key → ``HttpTimeouts`` field.
TIMEOUT_KEYS: Final = {f"http_{phase}_timeout": phase for phase in ENV_TIMEOUTS}
_HANDLER_DEFAULTS: Final = HttpTimeouts()


class ContextError(ValueError):
    """A CDK context value (``-c key=value`` or cdk.json) the stack cannot be built with."""


@dataclass(frozen=True)
class ServiceEndpoints:
    """Where the saga functions reach inventory, payments and shipping on Lambda.

    HTTP only: the simulated services keep their state in a local folder, and a Lambda
    function has neither a writable code folder nor one shared between instances. HTTPS
    unless ``allow_insecure`` (a test rig inside a VPC, say). The URLs end up in the
    template in clear text, so credentials in them are refused.
    """

    inventory_url: str
    payments_url: str
    shipping_url: str
    allow_insecure: bool = False
    #: Seconds per phase of one call (httpx's four timeouts); unset: the handlers' defaults.
    connect_timeout: float = _HANDLER_DEFAULTS.connect
    read_timeout: float = _HANDLER_DEFAULTS.read
    write_timeout: float = _HANDLER_DEFAULTS.write
    pool_timeout: float = _HANDLER_DEFAULTS.pool

    def __post_init__(self) -> None:
        schemes = ("https", "http") if self.allow_insecure else ("https",)
        for key in SERVICE_URL_KEYS:
            _check_url(key, getattr(self, key), schemes)
        for key, phase in TIMEOUT_KEYS.items():
            value = getattr(self, f"{phase}_timeout")
            if not (math.isfinite(value) and value > 0):
                raise ContextError(f"{key}: must be more than 0 seconds, got {value}")
        total = sum(getattr(self, f"{phase}_timeout") for phase in TIMEOUT_KEYS.values())
        if total >= FUNCTION_TIMEOUT_SECONDS:
            raise ContextError(
                f"{' + '.join(TIMEOUT_KEYS)} = {total:g} s: must stay below the "
                f"{FUNCTION_TIMEOUT_SECONDS} s function timeout, or Lambda ends a call the "
                "ledger has not recorded yet"
            )

    def environment(self) -> dict[str, str]:
        """The variables the handlers' settings read (``stepsaga._handlers.settings``)."""
        variables = {ENV_SERVICES: SERVICES_HTTP}
        variables.update({ENV_URLS[key]: getattr(self, key) for key in SERVICE_URL_KEYS})
        variables.update(
            {var: f"{getattr(self, f'{phase}_timeout'):g}" for phase, var in ENV_TIMEOUTS.items()}
        )
        return variables

    def function_settings(self) -> FunctionSettings:
        """Every saga function's share of this app's configuration."""
        return FunctionSettings(
            environment=self.environment(), timeout_seconds=FUNCTION_TIMEOUT_SECONDS
        )

    @classmethod
    def from_context(cls, node: Node) -> ServiceEndpoints:
        """The endpoints from context; missing URLs are named in one message."""
        missing = [key for key in SERVICE_URL_KEYS if _text(node, key) is None]
        if missing:
            example = " ".join(f"-c {key}=https://…" for key in missing)
            raise ContextError(
                f"missing context {', '.join(missing)}: the saga functions call the "
                f"downstream services over HTTPS on Lambda (simulated services cannot run "
                f"there); deploy with {example}"
            )
        timeouts = {
            f"{phase}_timeout": _float(node, key, getattr(_HANDLER_DEFAULTS, phase))
            for key, phase in TIMEOUT_KEYS.items()
        }
        return cls(
            inventory_url=str(_text(node, "inventory_url")),
            payments_url=str(_text(node, "payments_url")),
            shipping_url=str(_text(node, "shipping_url")),
            allow_insecure=_flag(node, ALLOW_INSECURE_KEY, False),
            **timeouts,
        )


@dataclass(frozen=True)
class StageConfig:
    """The reference app's stage: stepsaga's generic ``StageSettings`` (checked there) plus
    its own downstream service endpoints."""

    services: ServiceEndpoints
    stage: StageSettings = field(default_factory=StageSettings)

    def settings(self) -> StageSettings:
        """The generic part, for ``stepsaga.cdk.SagaStack``."""
        return self.stage

    @classmethod
    def from_context(cls, node: Node) -> StageConfig:
        """Read the settings; unset keys take the stage's defaults (see module docstring)."""
        stage = _text(node, "stage") or StageSettings().stage
        try:
            production = StageSettings.for_stage(stage).is_production
        except DeploymentError as exc:  # a malformed stage name
            raise ContextError(str(exc)) from None
        concurrency = _text(node, "reserved_concurrency")
        bundling = _text(node, "bundling") or BundlingMode.PIP.value
        try:
            mode = BundlingMode(bundling)
        except ValueError:
            allowed = ", ".join(m.value for m in BundlingMode)
            raise ContextError(f"bundling {bundling!r}: one of {allowed}") from None
        try:
            settings = StageSettings(
                stage=stage,
                deletion_protection=_flag(node, "deletion_protection", production),
                log_retention_days=_int(node, "log_retention_days", 365 if production else 30),
                reserved_concurrency=None
                if concurrency is None
                else _int(node, "reserved_concurrency", 0),
                overdue_reconciliation_hours=_int(node, "overdue_reconciliation_hours", 24),
                bundling=mode,
                ledger_indexes=None
                if _text(node, "ledger_indexes") is None
                else _int(node, "ledger_indexes", 0),
                ingress_max_concurrency=_int(node, "ingress_max_concurrency", 5),
                execution_timeout_seconds=_int(node, "execution_timeout_days", 30) * 86400,
                canary=Canary() if _flag(node, "canary", True) else None,
                backup=None
                if _text(node, "backup_retention_days") is None
                else Backup(retention_days=_int(node, "backup_retention_days", 0)),
                tags=_tags(node),
            )
        except DeploymentError as exc:
            raise ContextError(str(exc)) from None
        return cls(services=ServiceEndpoints.from_context(node), stage=settings)


def _tags(node: Node) -> dict[str, str]:
    """``tags``: a JSON object of strings (a string from ``-c``, an object from cdk.json)."""
    value = node.try_get_context("tags")
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ContextError('tags: expected a JSON object, e.g. {"team":"payments"}') from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ContextError("tags: expected a JSON object of strings")
    return dict(value)


def _text(node: Node, key: str) -> str | None:
    """A context value as text; unset or blank is None. Context from ``-c`` arrives as a
    string, from cdk.json as JSON."""
    value = node.try_get_context(key)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _flag(node: Node, key: str, default: bool) -> bool:
    value = node.try_get_context(key)
    if isinstance(value, bool):
        return value
    text = _text(node, key)
    if text is None:
        return default
    if text.lower() in {"true", "1", "yes", "on"}:
        return True
    if text.lower() in {"false", "0", "no", "off"}:
        return False
    raise ContextError(f"{key}: expected true or false, got {text!r}")


def _int(node: Node, key: str, default: int) -> int:
    text = _text(node, key)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise ContextError(f"{key}: expected a whole number, got {text!r}") from None


def _float(node: Node, key: str, default: float) -> float:
    text = _text(node, key)
    if text is None:
        return default
    try:
        return float(text)
    except ValueError:
        raise ContextError(f"{key}: expected a number of seconds, got {text!r}") from None


def _check_url(key: str, value: object, schemes: tuple[str, ...]) -> None:
    """A base URL the handlers can call; the value is echoed only once it is known to
    hold no credentials."""
    if not isinstance(value, str) or not value.strip():
        raise ContextError(f"{key}: must be a URL")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - reading the port validates it
    except ValueError:
        raise ContextError(f"{key}: not a valid URL") from None
    if parts.username is not None or parts.password is not None:
        raise ContextError(
            f"{key}: credentials in the URL would be readable in the template; remove them"
        )
    if parts.scheme not in schemes:
        hint = "" if "http" in schemes else f" (plain http needs -c {ALLOW_INSECURE_KEY}=true)"
        raise ContextError(f"{key} {value!r}: must be an https:// URL{hint}")
    if not parts.hostname:
        raise ContextError(f"{key} {value!r}: names no host")
    if parts.query or parts.fragment:
        raise ContextError(f"{key} {value!r}: a base URL takes no query or fragment")
