"""Who drives an execution, and whether that process is still alive.

An owner is identified by host, pid and the process's start time (so a recycled pid is not
mistaken for the original). On the same host a dead owner is certain; on another host only a
stale heartbeat can suggest it, so that case waits for ``stale_after``.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass


def _process_started(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (Linux ``/proc``), or ``None`` where unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return None
    # Field 22 (starttime); the command name (field 2) may contain spaces, so split after ')'.
    rest = stat.rsplit(")", 1)[-1].split()
    return rest[19] if len(rest) > 19 else None


@dataclass(frozen=True)
class Owner:
    """This engine instance as an owner of executions."""

    id: str
    pid: int
    host: str
    started: str | None

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()
        return cls(
            id=f"{socket.gethostname()}:{pid}:{uuid.uuid4().hex[:12]}",
            pid=pid,
            host=socket.gethostname(),
            started=_process_started(pid),
        )


def pid_alive(pid: int, started: str | None) -> bool:
    """Whether the process ``pid`` that started at ``started`` still runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    if started is None:
        return True
    now_started = _process_started(pid)
    if now_started is None:
        return True
    return now_started == started


def owner_alive(
    *,
    pid: int | None,
    host: str | None,
    started: str | None,
    heartbeat: float | None,
    now: float,
    stale_after: float,
) -> bool:
    if pid is None or host is None:
        return False
    if host == socket.gethostname():
        return pid_alive(pid, started)
    return heartbeat is not None and now - heartbeat < stale_after
