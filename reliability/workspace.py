"""Where a chaos run keeps its files: the state home under test and the harness's own notes.

The home is what the product writes (ledger, executions, services). Everything else — case
and faults files, kill notes, job results, the children's stderr — lives beside it, so the
home holds nothing the harness invented.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stepsaga import StateHome


@dataclass(frozen=True)
class Workspace:
    root: Path
    one_file: bool = False
    """The home keeps its ledger in the engine's file (one shared commit per step)."""

    @property
    def home(self) -> StateHome:
        return StateHome(self.root / "home", one_file=self.one_file)

    @property
    def kill_notes(self) -> Path:
        """One JSON line per kill, written (and fsync'd) by the process about to die."""
        return self.root / "kills.jsonl"

    def case_file(self, index: int, revision: int = 1) -> Path:
        suffix = "" if revision == 1 else f"-r{revision}"
        return self.root / "cases" / f"{index:05d}{suffix}.json"

    def faults_file(self, index: int) -> Path:
        return self.root / "faults" / f"{index:05d}.json"

    def result_file(self, seq: int) -> Path:
        return self.root / "results" / f"{seq:06d}.json"

    def log_file(self, name: str) -> Path:
        return self.root / "logs" / f"{name}.log"

    def create(self) -> Workspace:
        for folder in ("cases", "faults", "results", "logs"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        return self
