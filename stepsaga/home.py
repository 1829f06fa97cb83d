"""Where the embedded backend keeps its state (``$STEPSAGA_HOME``, default ``./.stepsaga``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "STEPSAGA_HOME"
DEFAULT = ".stepsaga"


@dataclass(frozen=True)
class StateHome:
    """One folder, one SQLite file per concern, so each store can be inspected alone."""

    root: Path

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> StateHome:
        env = os.environ if environ is None else environ
        return cls(Path(env.get(ENV_VAR) or DEFAULT))

    @property
    def ledger_path(self) -> Path:
        return self.root / "ledger.sqlite3"

    @property
    def ledger_url(self) -> str:
        return f"sqlite:///{self.ledger_path}"

    @property
    def executions_path(self) -> Path:
        return self.root / "executions.sqlite3"

    @property
    def services_path(self) -> Path:
        return self.root / "services.sqlite3"

    def ensure(self) -> StateHome:
        self.root.mkdir(parents=True, exist_ok=True)
        return self
