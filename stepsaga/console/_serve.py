"""Running the console: a socket bound first (so the printed URL names the real port, even
for ``--port 0``), then uvicorn on it — in the foreground for the CLI, in a thread for
tests (``running``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import uvicorn

from stepsaga.console._app import ConsoleConfig, create_app
from stepsaga.console._security import TOKEN_PARAMETER

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def bind(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> socket.socket:
    """A listening socket on ``host:port`` (0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, token: str | None = None) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?{TOKEN_PARAMETER}={token}" if token else "")


def _server(config: ConsoleConfig) -> uvicorn.Server:
    return uvicorn.Server(
        uvicorn.Config(create_app(config), log_level="warning", access_log=False, lifespan="off")
    )


def serve(config: ConsoleConfig, sock: socket.socket) -> None:
    """Serve until interrupted (Ctrl-C)."""
    _server(config).run(sockets=[sock])


@contextmanager
def running(
    make_config: Callable[[int], ConsoleConfig], host: str = DEFAULT_HOST, port: int = 0
) -> Iterator[str]:
    """The console in a background thread on ``port`` (0: a free one); yields its base URL
    (no token). ``make_config`` gets the port (the token cookie is named after it)."""
    sock = bind(host, port)
    server = _server(make_config(sock.getsockname()[1]))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the console did not start")
        time.sleep(0.02)
    try:
        yield url_of(sock)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
