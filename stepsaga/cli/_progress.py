"""The live display while a case runs: each state as it is entered, failed attempts, retries
with the delay chosen, and the end. Never used with ``--json`` (stdout stays parseable).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

from rich.console import Console
from rich.status import Status

from stepsaga.backends._progress import Progress, ProgressKind, ProgressListener


class LiveProgress:
    """A ``ProgressListener`` printing lines under a spinner that names the current state."""

    def __init__(self, console: Console, title: str) -> None:
        self._console = console
        self._title = title
        self._status: Status | None = None
        self._started = False

    def __enter__(self) -> LiveProgress:
        return self

    def _start(self) -> None:
        """On the first notice, not before: input refused up front prints nothing."""
        self._started = True
        self._console.print(f"[bold]{self._title}[/]", highlight=False)
        if self._console.is_terminal:
            self._status = self._console.status(self._title)
            self._status.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._status is not None:
            self._status.stop()

    def _spin(self, text: str) -> None:
        if self._status is not None:
            self._status.update(text)

    def __call__(self, progress: Progress) -> None:
        if not self._started:
            self._start()
        line = describe(progress)
        if line is not None:
            self._console.print(line, highlight=False)
        if progress.kind is ProgressKind.STATE_ENTERED:
            self._spin(f"{progress.state}…")
        elif progress.kind is ProgressKind.WAITING:
            self._spin("waiting for a decision…")


def describe(progress: Progress) -> str | None:
    """One line (rich markup) for a notice."""
    kind = progress.kind
    if kind is ProgressKind.STATE_ENTERED:
        return f"  [cyan]→[/] {progress.state}"
    if kind is ProgressKind.TASK_FAILED:
        return f"    [red]✗[/] {progress.error}"
    if kind is ProgressKind.RETRY:
        return (
            f"    [yellow]↻[/] retry {progress.attempt} of {progress.state} in "
            f"{progress.seconds or 0:.2f} s (after {progress.error})"
        )
    if kind is ProgressKind.WAITING:
        return "    [magenta]…[/] waiting for an operator's decision"
    if kind is ProgressKind.REDRIVEN:
        return "  [cyan]↺[/] redriven"
    if kind is ProgressKind.ENDED:
        error = f" ({progress.error})" if progress.error else ""
        return f"  [bold]■[/] {progress.status}{error}"
    return None


@contextmanager
def live(console: Console, title: str, enabled: bool) -> Iterator[ProgressListener | None]:
    """A listener for the backend, or ``None`` when output must stay machine-readable."""
    if not enabled:
        yield None
        return
    with LiveProgress(console, title) as listener:
        yield listener
