"""``open_ledger(url)``: pick the store a URL names and put the rules over it.

- ``sqlite:///PATH`` (``sqlite:////abs/path`` for an absolute path), optional query
  ``synchronous=OFF|NORMAL|FULL|EXTRA`` (default FULL) and ``busy_timeout_ms`` (default 5000,
  at most :data:`MAX_BUSY_TIMEOUT_MS`);
- ``dynamodb://TABLE`` with optional ``region`` and ``endpoint_url``; otherwise the region
  is ``$AWS_REGION``, ``$AWS_DEFAULT_REGION`` or the profile's, and opening a store with
  none is refused (boto3 would build the endpoint ``dynamodb..amazonaws.com``).

Every problem is one ``InvalidInputError`` line, before boto3 is even imported: boto3's own
refusals of a region or an endpoint are tracebacks.

``homes`` (``regions.HomeRegions``) is for a table replicated across regions: the store is
guarded so it writes only for tenants homed in its region, after the table's replicas are
checked against the map (``DescribeTable``). Without it the table must be single-region
(docs/reference/multi-region.md); no extra call is made.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from stepsaga._aws.aws_region import region_from, valid_region
from stepsaga._util.clock import Clock
from stepsaga.errors import InvalidInputError
from stepsaga.ledger._policy import LedgerPolicy
from stepsaga.ledger._regions import HomeRegionGuard, HomeRegions, check_replicas
from stepsaga.ledger._rules import Ledger
from stepsaga.ledger._sqlite import SYNCHRONOUS_MODES, SqliteStore
from stepsaga.ledger._store import LedgerStore

_TABLE = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")
_HOST = re.compile(r"^[A-Za-z0-9.:-]+$")  # a name, IPv4 or IPv6 (``hostname`` drops [])
#: An hour: a ledger write that waits longer for a lock is better refused.
MAX_BUSY_TIMEOUT_MS = 3_600_000


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
    shown = _shown(url)
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:
        raise InvalidInputError(f"ledger url {shown}: {exc}", field="url") from None
    url = shown  # every message below quotes it
    query = _query(url, parts.query)
    if parts.scheme == "sqlite":
        return _sqlite(url, parts.netloc, parts.path, query)
    if parts.scheme == "dynamodb":
        return _dynamodb(url, parts.netloc, parts.path, query)
    raise InvalidInputError(
        f"ledger url {url}: scheme must be sqlite:/// or dynamodb://", field="url"
    )


def open_ledger(
    url: str,
    *,
    clock: Clock | None = None,
    policy: LedgerPolicy | None = None,
    homes: HomeRegions | None = None,
) -> Ledger:
    """A ``Ledger`` over the store ``url`` names (see the module docstring)."""
    return Ledger(open_store(url, homes=homes), clock=clock, policy=policy)


def open_store(url: str, *, homes: HomeRegions | None = None) -> LedgerStore:
    """The bare store ``url`` names, for wrapping (fault injection, tracing) before the
    rules go over it: ``Ledger(Wrapper(open_store(url)))``."""
    target = parse_url(url)
    if isinstance(target, SqliteUrl):
        if homes is not None:
            raise InvalidInputError(
                "home regions apply to a DynamoDB ledger; a SQLite ledger is one machine's",
                field="homes",
            )
        return SqliteStore(
            target.path, synchronous=target.synchronous, busy_timeout_ms=target.busy_timeout_ms
        )
    import boto3  # deferred: the embedded backend never pays for boto3's import

    from stepsaga.ledger._dynamodb import DynamoDBStore

    region = target.region or _default_region()
    client = boto3.client("dynamodb", region_name=region, endpoint_url=target.endpoint_url)
    store = DynamoDBStore(target.table, client)
    if homes is None:
        return store
    check_replicas(store.replica_regions(), region=region, homes=homes)
    return HomeRegionGuard(store, region=region, homes=homes)


def _default_region() -> str:
    """The region as the CDK CLI reads it (``stepsaga._aws.aws_region``: ``$AWS_REGION`` first,
    which boto3's session ignores); none is one line, not boto3's traceback."""
    import boto3

    region = region_from(os.environ, boto3.session.Session().region_name)
    if not region:
        raise InvalidInputError(
            "ledger url: no AWS region (add ?region=eu-west-1 to the url or set $AWS_REGION)",
            field="url",
        )
    return region


def _shown(text: str) -> str:
    """User text in an error line: quoted, at most 200 characters."""
    return repr(text if len(text) <= 200 else f"{text[:200]}…")


def _query(url: str, text: str) -> dict[str, str]:
    parsed = parse_qs(text, keep_blank_values=True, strict_parsing=False)
    query: dict[str, str] = {}
    for name, values in parsed.items():
        if len(values) != 1 or not values[0]:
            raise InvalidInputError(f"ledger url {url}: {name} needs one value", field="url")
        query[name] = values[0]
    return query


def _unknown(url: str, query: dict[str, str], allowed: tuple[str, ...]) -> None:
    extra = sorted(set(query) - set(allowed))
    if extra:
        raise InvalidInputError(
            f"ledger url {url}: unknown parameter {_shown(extra[0])} "
            f"(allowed: {', '.join(allowed)})",
            field="url",
        )


def _sqlite(url: str, netloc: str, path: str, query: dict[str, str]) -> SqliteUrl:
    if netloc or not path.startswith("/") or len(path) < 2:
        raise InvalidInputError(
            f"ledger url {url}: write sqlite:///relative/path or sqlite:////absolute/path",
            field="url",
        )
    _unknown(url, query, ("synchronous", "busy_timeout_ms"))
    synchronous = query.get("synchronous", "FULL").upper()
    if synchronous not in SYNCHRONOUS_MODES:
        raise InvalidInputError(
            f"ledger url {url}: synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}",
            field="url",
        )
    timeout = query.get("busy_timeout_ms", "5000")
    if not re.fullmatch(r"[0-9]{1,7}", timeout) or int(timeout) > MAX_BUSY_TIMEOUT_MS:
        raise InvalidInputError(
            f"ledger url {url}: busy_timeout_ms must be a whole number from 0 to "
            f"{MAX_BUSY_TIMEOUT_MS}",
            field="url",
        )
    file_path = path[1:]
    if file_path == ":memory:":
        raise InvalidInputError(
            f"ledger url {url}: an in-memory ledger protects nothing; name a file", field="url"
        )
    return SqliteUrl(file_path, synchronous, int(timeout))


def _dynamodb(url: str, netloc: str, path: str, query: dict[str, str]) -> DynamoDBUrl:
    if not _TABLE.match(netloc) or path not in ("", "/"):
        raise InvalidInputError(
            f"ledger url {url}: write dynamodb://TABLE (3-255 of A-Z a-z 0-9 _ . -)",
            field="url",
        )
    _unknown(url, query, ("region", "endpoint_url"))
    endpoint = query.get("endpoint_url")
    if endpoint is not None and not _http_url(endpoint):
        raise InvalidInputError(
            f"ledger url {url}: endpoint_url must be an http(s) URL such as http://localhost:8000",
            field="url",
        )
    region = query.get("region")
    if region is not None and not valid_region(region):
        raise InvalidInputError(
            f"ledger url {url}: region {_shown(region)} is not a region name such as eu-west-1",
            field="url",
        )
    return DynamoDBUrl(netloc, region, endpoint)


def _http_url(text: str) -> bool:
    """An endpoint boto3 will accept: http(s), a host name or IP address, a valid port."""
    if any(c.isspace() or not c.isprintable() for c in text):
        return False
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (raises ValueError for a port out of range)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(_HOST.match(parts.hostname or ""))
