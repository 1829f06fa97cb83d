"""Where the embedded backend keeps its state (``$STEPSAGA_HOME``, default ``./.stepsaga``).

A home that exists must be a folder: one that is a file (or lies below one) is refused when
the ``StateHome`` is made, as one ``InvalidInputError`` line, before any command reads it —
a command that only reads would otherwise report "nothing here" about a typo.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from stepsaga.errors import InvalidInputError

ENV_VAR = "STEPSAGA_HOME"
DEFAULT = ".stepsaga"


@dataclass(frozen=True)
class StateHome:
    """One folder, one SQLite file per concern, so each store can be inspected alone;
    ``one_file``: the ledger's tables live in the engine's ``executions.sqlite3``, so a
    step's outcome and the engine's checkpoint share one durable commit
    (``docs/explanation/performance.md``)."""

    root: Path
    one_file: bool = False

    def __post_init__(self) -> None:
        try:
            mode = os.stat(self.root).st_mode
        except FileNotFoundError:
            return  # created on the first write
        except OSError as exc:
            raise self._refused(exc) from None
        if not stat.S_ISDIR(mode):
            raise self._refused(None)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> StateHome:
        env = os.environ if environ is None else environ
        return cls(Path(env.get(ENV_VAR) or DEFAULT))

    @property
    def ledger_path(self) -> Path:
        """Where the ledger is: wherever a home keeps it already (a ``ledger.sqlite3``, or
        the ledger's tables in ``executions.sqlite3``), whatever ``one_file`` says, so a
        home is never split across the two; a new home by ``one_file``."""
        own = self.root / "ledger.sqlite3"
        if own.exists():
            return own
        if self.one_file or _holds_ledger(self.executions_path):
            return self.executions_path
        return own

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
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._refused(exc) from None
        return self

    def _refused(self, exc: OSError | None) -> InvalidInputError:
        text = str(self.root)
        shown = text if text.isprintable() and len(text) <= 200 else json.dumps(text[:200])
        if exc is None or isinstance(exc, FileExistsError | NotADirectoryError):
            why = "is a file, not a folder" if exc is None else "lies below a file, not a folder"
        else:
            why = f"cannot be used ({exc.strerror or type(exc).__name__})"
        return InvalidInputError(
            f"state home {shown} {why} (set --home or ${ENV_VAR} to a folder)", field="home"
        )


def _holds_ledger(path: Path) -> bool:
    """Whether ``path`` is an executions file that keeps the ledger's tables (read-only)."""
    if not path.exists():
        return False
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'actions'"
        ).fetchone()
    except sqlite3.Error:
        return False
    finally:
        conn.close()
    return found is not None
