"""Where the real services live and how long we wait for them.

Every timeout is explicit: an unbounded wait on a payment call would hold the ledger lease
past its expiry, and a read timeout is exactly what turns a call into an uncertain outcome.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import httpx

from stepsaga.errors import InvalidInputError

ENV_URLS = {
    "inventory_url": "STEPSAGA_INVENTORY_URL",
    "payments_url": "STEPSAGA_PAYMENTS_URL",
    "shipping_url": "STEPSAGA_SHIPPING_URL",
}
ENV_TIMEOUTS = {
    "connect": "STEPSAGA_HTTP_CONNECT_TIMEOUT",
    "read": "STEPSAGA_HTTP_READ_TIMEOUT",
    "write": "STEPSAGA_HTTP_WRITE_TIMEOUT",
    "pool": "STEPSAGA_HTTP_POOL_TIMEOUT",
}


@dataclass(frozen=True)
class HttpTimeouts:
    """Seconds per phase (httpx's four timeouts)."""

    connect: float = 2.0
    """Establishing the TCP/TLS connection; a timeout here means *not sent*."""
    read: float = 10.0
    """Waiting for reply bytes; a timeout here on a write means *uncertain*."""
    write: float = 5.0
    """Sending the request body."""
    pool: float = 2.0
    """Waiting for a free pooled connection; a timeout here means *not sent*."""

    def __post_init__(self) -> None:
        for name in ("connect", "read", "write", "pool"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidInputError(f"timeouts.{name}: must be a number", field=name)
            if not (math.isfinite(value) and 0 < value <= 300):
                raise InvalidInputError(
                    f"timeouts.{name}: must be more than 0 and at most 300 seconds", field=name
                )

    def to_httpx(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect, read=self.read, write=self.write, pool=self.pool)


@dataclass(frozen=True)
class HttpServicesConfig:
    """Base URLs of the three services (paths of the wire contract are appended)."""

    inventory_url: str
    payments_url: str
    shipping_url: str
    timeouts: HttpTimeouts = field(default_factory=HttpTimeouts)

    def __post_init__(self) -> None:
        for name in ENV_URLS:
            value = getattr(self, name)
            if not isinstance(value, str) or not value.startswith(("http://", "https://")):
                raise InvalidInputError(f"{name}: must be an http(s) URL", field=name)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> HttpServicesConfig:
        """Read ``STEPSAGA_*_URL`` (required) and ``STEPSAGA_HTTP_*_TIMEOUT`` (optional)."""
        env = os.environ if environ is None else environ
        urls: dict[str, str] = {}
        for name, var in ENV_URLS.items():
            value = env.get(var, "").strip()
            if not value:
                raise InvalidInputError(f"{var}: not set", field=var)
            urls[name] = value
        timeouts: dict[str, float] = {}
        for name, var in ENV_TIMEOUTS.items():
            raw = env.get(var, "").strip()
            if raw:
                try:
                    timeouts[name] = float(raw)
                except ValueError:
                    raise InvalidInputError(f"{var}: not a number", field=var) from None
        return cls(**urls, timeouts=HttpTimeouts(**timeouts))
