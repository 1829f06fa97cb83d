"""What a run needs from the engine, and the small formats both share.

Apart from ``runner`` (the interpreter) so that an engine opened only to describe, list or
reap executions (``stepsaga status``) does not import the interpreter and the ASL parser.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stepsaga._util.clock import Clock
from stepsaga.engine import _lambda_invoke as lambda_invoke
from stepsaga.engine._liveness import Owner
from stepsaga.engine._models import EngineEvent
from stepsaga.engine._scheduler import Scheduler, ThreadScheduler
from stepsaga.engine._store import Store

TOKEN_PREFIX = "sst1"  # noqa: S105 (a format marker, not a secret)
TOKEN_FORMAT = re.compile(rf"^{TOKEN_PREFIX}\.[0-9a-f]{{48}}$")


@dataclass(frozen=True)
class Services:
    """What a run needs from the engine; injected so tests control time and chance."""

    store: Store
    registry: Mapping[str, lambda_invoke.Handler]
    clock: Clock
    sleeper: Callable[[float], None]
    time_scale: float
    rng: random.Random
    owner: Owner
    region: str
    account: str
    notify: Callable[[EngineEvent], None] | None
    #: How branches and iterations share the processor (a seeded one in tests).
    scheduler: Scheduler = field(default_factory=ThreadScheduler)


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def role_arn(account: str) -> str:
    return f"arn:aws:iam::{account}:role/stepsaga-local"
