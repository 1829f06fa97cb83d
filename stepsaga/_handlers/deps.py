"""Everything a handler talks to, injected: ``HandlerDeps``.

Handlers never open stores, clients or loggers themselves. On Lambda the entry point builds
one ``HandlerDeps`` from the environment (``settings.py``) on the first invocation; the
embedded backend and the tests build theirs with ``local_deps`` (SQLite ledger under
``$STEPSAGA_HOME``, the app's local clients, no metrics on stdout, logs on stderr).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepsaga._handlers.logs import StructuredLogger, powertools_logger
from stepsaga._handlers.metrics import MetricsSink, NullMetrics
from stepsaga._project.dependencies import close_clients
from stepsaga._project.home import StateHome
from stepsaga._reconciliation.callbacks import TaskSuccessSender
from stepsaga._reconciliation.notify import Notifier, NullNotifier
from stepsaga._util.clock import Clock, SystemClock
from stepsaga.ledger import Ledger, LedgerPolicy, open_ledger

#: Powertools service name of local runs (Lambda uses ``POWERTOOLS_SERVICE_NAME``).
LOCAL_SERVICE = "stepsaga.local"


@dataclass(frozen=True)
class HandlerDeps:
    """What the handlers of one process share.

    ``send_task_success`` lets the reconciler resume a case itself (an item resolved before
    its task token arrived, or decided automatically on a second look); ``None`` leaves
    resuming to whoever resolves the item.
    """

    ledger: Ledger
    #: The app's clients (what its ``Dependencies`` built), passed to every step handler.
    clients: Any
    clock: Clock
    logger: StructuredLogger
    metrics: MetricsSink
    notifier: Notifier
    send_task_success: TaskSuccessSender | None = None

    def close(self) -> None:
        close_clients(self.clients)
        self.ledger.close()


def local_deps(
    home: StateHome,
    clients: Any,
    *,
    clock: Clock | None = None,
    policy: LedgerPolicy | None = None,
    logger: StructuredLogger | None = None,
    metrics: MetricsSink | None = None,
    notifier: Notifier | None = None,
    send_task_success: TaskSuccessSender | None = None,
    log_level: str = "WARNING",
    ledger_url: str | None = None,
) -> HandlerDeps:
    """Deps for the embedded backend: the ledger under ``home`` (or at ``ledger_url``) and
    the app's ``clients``.

    Metrics default to ``NullMetrics`` and logs go to stderr.
    """
    clock = clock or SystemClock()
    home = home.ensure()
    return HandlerDeps(
        ledger=open_ledger(ledger_url or home.ledger_url, clock=clock, policy=policy),
        clients=clients,
        clock=clock,
        logger=logger or powertools_logger(LOCAL_SERVICE, log_level, to_stderr=True),
        metrics=metrics or NullMetrics(),
        notifier=notifier or NullNotifier(),
        send_task_success=send_task_success,
    )
