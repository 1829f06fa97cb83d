"""``os.environ`` as each deployed function sees it, without racing the test's own thread.

A Lambda function sees the process's environment plus its own variables. Setting them in
``os.environ`` for an invocation, then deleting them again, races every other thread:
iterating ``os.environ`` (botocore does, for proxies, whenever a client is made) while an
execution thread deletes a key raises ``KeyError`` in the test. Here ``os.environ`` becomes
a mapping with a per-thread overlay: the invoking thread reads and writes its function's
variables, every other thread the process's, and no key is ever deleted under a reader.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager

_INSTALL_LOCK = threading.Lock()


class ThreadEnviron(MutableMapping[str, str]):
    """The process's environment (``base``, written through) under a per-thread overlay."""

    def __init__(self, base: MutableMapping[str, str]) -> None:
        self.base = base
        self._local = threading.local()

    def _overlay(self) -> dict[str, str] | None:
        overlay: dict[str, str] | None = getattr(self._local, "overlay", None)
        return overlay

    def __getitem__(self, key: str) -> str:
        overlay = self._overlay()
        if overlay is not None and key in overlay:
            return overlay[key]
        return self.base[key]

    def __setitem__(self, key: str, value: str) -> None:
        overlay = self._overlay()
        if overlay is not None:
            overlay[key] = value
        else:
            self.base[key] = value

    def __delitem__(self, key: str) -> None:
        overlay = self._overlay()
        if overlay is not None and key in overlay:
            del overlay[key]
        else:
            del self.base[key]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*list(self.base), *(self._overlay() or {})]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*list(self.base), *(self._overlay() or {})]))

    def copy(self) -> dict[str, str]:
        return dict(self)

    def __repr__(self) -> str:
        return f"ThreadEnviron({dict(self)!r})"

    @contextmanager
    def overlaid(self, variables: Mapping[str, str]) -> Iterator[None]:
        """This thread sees ``variables`` over the process's environment until the block
        ends (nested blocks see their own function's variables, as Lambda would)."""
        before = self._overlay()
        self._local.overlay = dict(variables)
        try:
            yield
        finally:
            self._local.overlay = before


def thread_environ() -> ThreadEnviron:
    """``os.environ``, made a ``ThreadEnviron`` the first time (it stays one: an execution
    thread of an earlier test may still be inside a handler)."""
    with _INSTALL_LOCK:
        current: object = os.environ
        if not isinstance(current, ThreadEnviron):
            current = ThreadEnviron(os.environ)
            # The same values, read through the overlay (B003: nothing is meant to clear).
            os.environ = current  # type: ignore[assignment]  # noqa: B003
        return current
