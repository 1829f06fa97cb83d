"""``list_executions``' rules, shared by both backends: its filters, ``--since``, and the
opaque page token.

* **Filters** (:class:`ExecutionQuery`): saga, tenant, execution status, case outcome, a
  start time (``since``), and a page size (1 to 1000, default 100, as ``ListExecutions``).
  An outcome narrows to the statuses it can come from (``OUTCOME_STATUSES``), so each
  backend queries by status and lets :func:`~stepsaga.backends._outcome.derive_outcome`
  decide each row.
* **since**: ISO-8601 with a timezone (``2026-11-29T09:30:00Z``), a UTC date
  (``2026-11-29``), or an age (``90s``, ``15m``, ``6h``, ``7d``, ``2w``; at most
  ``MAX_SINCE_AGE``, ten years) before the clock.
* **The token** (:class:`PageToken`) is URL-safe base64 of JSON that says where the next
  page starts (local: the last row's start time and ARN; AWS: the ``ListExecutions``
  token of the page it stopped in and how many of that page were read). It carries a digest
  of the filters and the absolute ``since`` of the first page, so a token replayed with
  other filters is refused and an age (``6h``) does not drift between pages.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from stepsaga._util.paging import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    MAX_TOKEN_CHARS,
    check_limit,
    decode,
    digest,
    encode,
)
from stepsaga.backends._outcome import OUTCOME_STATUSES
from stepsaga.backends._views import CaseOutcome, ExecutionPage
from stepsaga.engine._models import ExecutionStatus
from stepsaga.errors import InvalidInputError

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MAX_TOKEN_CHARS",
    "ExecutionQuery",
    "PageToken",
    "empty_page",
    "first_since",
    "parse_since",
]

_AGE = re.compile(r"^(\d{1,9})([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}
#: The oldest age ``--since`` takes: ten years reaches past any history either backend keeps
#: (Step Functions keeps 90 days) and keeps ``now - age`` inside the calendar.
MAX_SINCE_AGE = timedelta(days=3650)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

BackendName = Literal["local", "aws"]


class ExecutionQuery(BaseModel):
    """What a listing asks for (validated before any store is read)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    saga: str | None = None
    tenant: str | None = None
    status: ExecutionStatus | None = None
    outcome: CaseOutcome | None = None
    #: Executions started at or after this time.
    since: datetime | None = None
    limit: int = DEFAULT_LIMIT
    #: Digest of the filters as given (``since`` as typed): what a token is bound to.
    filters: str = ""

    @classmethod
    def build(
        cls,
        *,
        now: datetime,
        saga: str | None = None,
        tenant: str | None = None,
        status: str | ExecutionStatus | None = None,
        outcome: str | CaseOutcome | None = None,
        since: str | datetime | None = None,
        limit: int | None = None,
    ) -> ExecutionQuery:
        """Every flag checked, each refusal one line naming it."""
        checked_status = _enum(ExecutionStatus, status, "--status", upper=True)
        checked_outcome = _enum(CaseOutcome, outcome, "--outcome", upper=False)
        size = check_limit(limit)
        given = [
            _text(saga, "--saga"),
            _text(tenant, "--tenant"),
            checked_status.value if checked_status else None,
            checked_outcome.value if checked_outcome else None,
            since.isoformat() if isinstance(since, datetime) else since,
        ]
        return cls(
            saga=given[0],
            tenant=given[1],
            status=checked_status,
            outcome=checked_outcome,
            since=parse_since(since, now) if since is not None else None,
            limit=size,
            filters=digest(*given),
        )

    def statuses(self) -> frozenset[str] | None:
        """The execution statuses that can match (``None``: any; empty: none can)."""
        wanted: frozenset[str] | None = None
        if self.status is not None:
            wanted = frozenset({self.status.value})
        if self.outcome is not None:
            possible = OUTCOME_STATUSES[self.outcome]
            wanted = possible if wanted is None else wanted & possible
        return wanted


def parse_since(value: str | datetime, now: datetime) -> datetime:
    """``--since`` as an aware UTC time (see the module docstring for the forms)."""
    if isinstance(value, datetime):
        when = value
    else:
        text = value.strip()
        age = _AGE.match(text)
        if age is not None:
            seconds = int(age[1]) * _UNITS[age[2]]
            if seconds > MAX_SINCE_AGE.total_seconds():
                raise InvalidInputError(
                    f"--since: {text!r} is older than the longest age, {MAX_SINCE_AGE.days}d",
                    field="since",
                )
            return now.astimezone(UTC) - timedelta(seconds=seconds)
        try:
            when = datetime.fromisoformat(text + "T00:00:00+00:00" if _DATE.match(text) else text)
        except ValueError:
            raise InvalidInputError(
                f"--since: {value!r} is neither an ISO-8601 time (2026-11-29T09:30:00Z), "
                "a date (2026-11-29) nor an age (90s, 15m, 6h, 7d, 2w)",
                field="since",
            ) from None
    if when.tzinfo is None:
        raise InvalidInputError(
            "--since: must carry a timezone (e.g. 2026-11-29T09:30:00Z)", field="since"
        )
    try:
        return when.astimezone(UTC)
    except OverflowError:
        raise InvalidInputError(
            "--since: outside the range of dates in UTC", field="since"
        ) from None


class PageToken(BaseModel):
    """Where the next page starts (see the module docstring); never shown decoded."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    v: Literal[1] = 1
    backend: BackendName
    filters: str
    since: float | None = None
    #: local: ``(start_date, arn)`` of the last row returned.
    after: tuple[float, str] | None = None
    #: aws: the ``ListExecutions`` token of the page to read (``None``: the first page),
    #: how many of its items were already read, and the page size it was read with.
    aws: str | None = None
    skip: int = Field(default=0, ge=0, le=MAX_LIMIT)
    size: int = Field(default=MAX_LIMIT, ge=1, le=MAX_LIMIT)

    def encode(self) -> str:
        return encode(self)

    @classmethod
    def decode(
        cls, token: str | None, *, backend: BackendName, query: ExecutionQuery
    ) -> PageToken | None:
        """The token ``token`` is, if this backend made it for these filters; else
        ``InvalidInputError`` naming ``--next-token``."""
        if token is None:
            return None

        def tuples(data: dict[str, Any]) -> None:
            if isinstance(data.get("after"), list):
                data["after"] = tuple(data["after"])

        return decode(
            cls,
            token,
            accept=lambda t: t.backend == backend and t.filters == query.filters,
            prepare=tuples,
        )

    def since_date(self) -> datetime | None:
        return None if self.since is None else datetime.fromtimestamp(self.since, UTC)


def first_since(query: ExecutionQuery, token: PageToken | None) -> datetime | None:
    """The ``since`` of the first page (an age is measured once, when the listing began)."""
    if token is not None:
        return token.since_date()
    return query.since


def empty_page() -> ExecutionPage:
    return ExecutionPage(items=(), next_token=None)


def _text(value: str | None, flag: str) -> str | None:
    if value is None:
        return None
    text = value.strip()
    if not text:
        raise InvalidInputError(f"{flag}: must not be empty", field=flag.lstrip("-"))
    return text


_E = TypeVar("_E", ExecutionStatus, CaseOutcome)


def _enum(kind: type[_E], value: str | _E | None, flag: str, *, upper: bool) -> _E | None:
    if value is None or isinstance(value, kind):
        return value
    text = str(value).strip().replace("-", "_")
    try:
        return kind(text.upper() if upper else text.lower())
    except ValueError:
        choices = ", ".join(member.value for member in kind)
        raise InvalidInputError(
            f"{flag}: {value!r} is not one of {choices}", field=flag.lstrip("-")
        ) from None
