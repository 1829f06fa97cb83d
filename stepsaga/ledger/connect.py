"""``open_ledger(url)``: pick the store a URL names and put the rules over it.

- ``sqlite:///PATH`` (``sqlite:////abs/path`` for an absolute path), optional query
  ``synchronous=OFF|NORMAL|FULL|EXTRA`` (default FULL) and ``busy_timeout_ms`` (default 5000);
- ``dynamodb://TABLE`` with optional ``region`` and ``endpoint_url``; boto3's defaults
  (environment, profile) otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from stepsaga.clock import Clock
from stepsaga.errors import InvalidInputError
from stepsaga.ledger.policy import LedgerPolicy
from stepsaga.ledger.rules import Ledger
from stepsaga.ledger.sqlite import SYNCHRONOUS_MODES, SqliteStore
from stepsaga.ledger.store import LedgerStore

_TABLE = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")


@dataclass(frozen=True)
class SqliteUrl:
    path: str
    synchronous: str = "FULL"
    busy_timeout_ms: int = 5000


@dataclass(frozen=True)
class DynamoDBUrl:
    table: str
    region: str | None = None
    endpoint_url: str | None = None


def parse_url(url: str) -> SqliteUrl | DynamoDBUrl:
    """Validate a ledger URL; every problem is one ``InvalidInputError`` naming the URL."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidInputError("ledger url is empty", field="url")
    parts = urlsplit(url.strip())
    query = _query(url, parts.query)
    if parts.scheme == "sqlite":
        return _sqlite(url, parts.netloc, parts.path, query)
    if parts.scheme == "dynamodb":
        return _dynamodb(url, parts.netloc, parts.path, query)
    raise InvalidInputError(
        f"ledger url {url!r}: scheme must be sqlite:/// or dynamodb://", field="url"
    )


def open_ledger(
    url: str, *, clock: Clock | None = None, policy: LedgerPolicy | None = None
) -> Ledger:
    """A ``Ledger`` over the store ``url`` names (see the module docstring)."""
    return Ledger(open_store(url), clock=clock, policy=policy)


def open_store(url: str) -> LedgerStore:
    """The bare store ``url`` names, for wrapping (fault injection, tracing) before the
    rules go over it: ``Ledger(Wrapper(open_store(url)))``."""
    target = parse_url(url)
    if isinstance(target, SqliteUrl):
        return SqliteStore(
            target.path, synchronous=target.synchronous, busy_timeout_ms=target.busy_timeout_ms
        )
    import boto3  # deferred: the embedded backend never pays for boto3's import

    from stepsaga.ledger.dynamodb import DynamoDBStore

    client = boto3.client("dynamodb", region_name=target.region, endpoint_url=target.endpoint_url)
    return DynamoDBStore(target.table, client)


def _query(url: str, text: str) -> dict[str, str]:
    parsed = parse_qs(text, keep_blank_values=True, strict_parsing=False)
    query: dict[str, str] = {}
    for name, values in parsed.items():
        if len(values) != 1 or not values[0]:
            raise InvalidInputError(f"ledger url {url!r}: {name} needs one value", field="url")
        query[name] = values[0]
    return query


def _unknown(url: str, query: dict[str, str], allowed: tuple[str, ...]) -> None:
    extra = sorted(set(query) - set(allowed))
    if extra:
        raise InvalidInputError(
            f"ledger url {url!r}: unknown parameter {extra[0]!r} (allowed: {', '.join(allowed)})",
            field="url",
        )


def _sqlite(url: str, netloc: str, path: str, query: dict[str, str]) -> SqliteUrl:
    if netloc or not path.startswith("/") or len(path) < 2:
        raise InvalidInputError(
            f"ledger url {url!r}: write sqlite:///relative/path or sqlite:////absolute/path",
            field="url",
        )
    _unknown(url, query, ("synchronous", "busy_timeout_ms"))
    synchronous = query.get("synchronous", "FULL").upper()
    if synchronous not in SYNCHRONOUS_MODES:
        raise InvalidInputError(
            f"ledger url {url!r}: synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}",
            field="url",
        )
    timeout = query.get("busy_timeout_ms", "5000")
    if not timeout.isdigit():
        raise InvalidInputError(
            f"ledger url {url!r}: busy_timeout_ms must be a whole number", field="url"
        )
    file_path = path[1:]
    if file_path == ":memory:":
        raise InvalidInputError(
            f"ledger url {url!r}: an in-memory ledger protects nothing; name a file", field="url"
        )
    return SqliteUrl(file_path, synchronous, int(timeout))


def _dynamodb(url: str, netloc: str, path: str, query: dict[str, str]) -> DynamoDBUrl:
    if not _TABLE.match(netloc) or path not in ("", "/"):
        raise InvalidInputError(
            f"ledger url {url!r}: write dynamodb://TABLE (3-255 of A-Z a-z 0-9 _ . -)",
            field="url",
        )
    _unknown(url, query, ("region", "endpoint_url"))
    endpoint = query.get("endpoint_url")
    if endpoint is not None and urlsplit(endpoint).scheme not in ("http", "https"):
        raise InvalidInputError(
            f"ledger url {url!r}: endpoint_url must be an http(s) URL", field="url"
        )
    return DynamoDBUrl(netloc, query.get("region"), endpoint)
